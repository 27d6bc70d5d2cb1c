"""What the commands that read forecasts as a long table (leaderboard, compare, proxy, correlate) print about
the read: the rows left out and the repeated forecasts merged. Their shared options are declared with the
reader, in :mod:`consistency.accuracy.settings`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from .console import err, print_skipped

if TYPE_CHECKING:
    from ..accuracy.table import ForecastTable
    from ..jsonl import LineError


@contextmanager
def skipping(what: str = "bad row(s) skipped") -> Iterator[list[LineError]]:
    """A list for the bad rows a read leaves out; they are printed, one per line with a count after them, as
    soon as the read ends, whether it then fails (nothing usable left) or not."""
    skipped: list[LineError] = []
    try:
        yield skipped
    finally:
        print_skipped(skipped, None, what)


def load_forecasts(paths: list[Path], duplicates: str = "error") -> ForecastTable:
    """The long table of PATHS, saying on stderr which bad rows were left out and how many repeated
    forecasts the policy merged."""
    from ..accuracy.table import load_table

    with skipping() as skipped:
        table = load_table(paths, duplicates, skipped)
    merged(table.duplicates, duplicates)
    return table


def merged(count: int, duplicates: str) -> None:
    """Said when repeated forecasts were merged by the ``--duplicates`` policy."""
    if count:
        err.print(
            f"{count} (forecaster, question) pair(s) had differing repeated forecasts: "
            f"merged by --duplicates {duplicates}"
        )
