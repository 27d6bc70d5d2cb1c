"""Building tens of thousands of small objects at once, without the cyclic collector's repeated walks.

Importing a question set makes a few hundred thousand dicts, keys and models that all stay alive; every
older-generation collection CPython triggers meanwhile walks all of them again, which measured half of
the import's time (``benchmarks/bench_forecastbench.py``). None of these objects form cycles, so
reference counting frees them as usual; the collector is paused for the build and runs again after.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_collector() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
