"""Arguments shared by the commands that read forecasts as a long table (leaderboard, compare, proxy,
correlate); light to import, so that each command's ``--help`` stays fast."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..store.layout import GROUND_TRUTH
from .console import err, print_skipped

if TYPE_CHECKING:
    from ..accuracy.table import ForecastTable
    from ..jsonl import LineError

#: Kept in step with ``accuracy.table.DUPLICATES`` (checked by a test); listed here so --help imports no numpy.
DUPLICATES = ("error", "mean", "first", "last")

AsOf = Annotated[
    datetime | None, typer.Option("--as-of", help="Hold back questions that resolved before their scheduled date.")
]
SOURCES_HELP = f"Long tables (CSV/JSONL: forecaster, question_id, prob, resolution, ...) or {GROUND_TRUTH} files/dirs."
Duplicates = Annotated[
    str,
    typer.Option(
        "--duplicates",
        help=f"A question one forecaster answered twice differently (the paper re-asked): {'|'.join(DUPLICATES)}.",
    ),
]


@contextmanager
def skipping() -> Iterator[list[LineError]]:
    """A list for the bad rows a read leaves out; they are printed, one per line with a count after them, as
    soon as the read ends, whether it then fails (nothing usable left) or not."""
    skipped: list[LineError] = []
    try:
        yield skipped
    finally:
        print_skipped(skipped, None, "bad row(s) skipped")


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
