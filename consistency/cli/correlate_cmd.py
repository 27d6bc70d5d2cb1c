"""``cc correlate``: does consistency track accuracy? Per-check correlation with the Brier score."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..accuracy.settings import Correlating
from ..store.layout import GROUND_TRUTH, GROUND_TRUTH_SUMMARY
from .console import say, show, table
from .declared import options_from
from .options import AsJson
from .table_options import skipping

if TYPE_CHECKING:
    from rich.table import Table

    from ..accuracy.correlation import Study


@options_from(Correlating, "settings", flags={"pairs": ("--pair", "--scores", "-s"), "splits": "--split"})
def correlate(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help=f"Ground truth ({GROUND_TRUTH} or {GROUND_TRUTH_SUMMARY} files or directories of them, "
            "long tables) and consistency outputs (`cc score`/`cc evaluate` directories, or directories of them)."
        ),
    ],
    as_json: AsJson = False,
    *,
    settings: Correlating,
) -> None:
    """Correlate each check's mean violation with the Brier score across forecasters."""
    from ..accuracy.correlation import correlate as study_of
    from ..accuracy.inputs import ScoreInputError

    left_out: dict[str, str] = {}
    try:
        with skipping() as skipped:
            study = study_of(paths, settings, skipped=skipped, left_out=left_out)
    except ScoreInputError:  # said by the error mapping, after what was left out and why
        say(f"  left out {name}: {reason}" for name, reason in left_out.items())
        raise
    say(study.notes(settings.duplicates))
    show(study.as_json(), as_json, lambda: _table(study))


def _table(study: Study) -> Table:
    """One table; with tuples on several question sets, two columns per set (the shape of the paper's Table 1)."""
    several = len(study.summaries) > 1
    columns = ["check"]
    for label in study.summaries:
        columns += [f"{label} {m}" if several else m for m in ("arbitrage", "frequentist")]
        columns.append(f"{label} n" if several else "forecasters")

    def interval(r: dict | None) -> str:
        return "-" if r is None or r["r"] is None else f"{r['r']:+.2f} [{r['low']:+.2f}, {r['high']:+.2f}]"

    rows = [
        [check, *(cell for a, f, n in sets for cell in (interval(a), interval(f), "-" if n is None else n))]
        for check, sets in study.rows()
    ]
    title = "Correlation of mean violation with Brier score across forecasters (95% bootstrap CI)"
    return table(title, columns, rows, caption=study.caption(), caption_justify="left")
