"""``--smoke`` for every benchmark: the same code paths at tiny sizes, in seconds, so CI runs them all.

``tests/project/test_benchmarks.py`` runs each ``bench_*.py`` with ``--smoke`` in a fresh process: a change
that breaks a benchmark breaks the suite. Smoke figures say the code runs, not how fast: the targets
are for the full sizes.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any


def parse_args(
    parser: argparse.ArgumentParser, smoke: Mapping[str, Any], argv: Sequence[str] | None = None
) -> argparse.Namespace:
    """The command line, with ``--smoke`` added: given, ``smoke``'s values replace the defaults (options
    given on the command line still win)."""
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, same code paths: seconds (what CI runs)")
    known, _ = parser.parse_known_args(argv)
    if known.smoke:
        parser.set_defaults(**smoke)
    return parser.parse_args(argv)
