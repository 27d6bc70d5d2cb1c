"""Building tens of thousands of small objects at once, without the cyclic collector's repeated walks.

Importing a question set makes a few hundred thousand dicts, keys and models that all stay alive; every
older-generation collection CPython triggers meanwhile walks all of them again, which measured half of
the import's time (``benchmarks/bench_forecastbench.py``). None of these objects form cycles, so
reference counting frees them as usual; the collector is paused for the build and runs again after.

Resumed as it was, the collector would at once walk everything the build made (all of it young), and
again one generation up: a tenth of the import's time. The build's objects are long-lived, so they are
moved straight to the oldest generation instead (``gc.freeze`` then ``gc.unfreeze``: two list splices,
no walk), where only the rare full collections look at them; nothing is kept from being collected.
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
            gc.freeze()  # every tracked object to the permanent generation...
            gc.unfreeze()  # ...and from there to the oldest one
            gc.enable()
