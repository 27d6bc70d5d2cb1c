"""``cc correlate``: does consistency track accuracy? Per-check correlation with the Brier score."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..store.layout import GROUND_TRUTH, GROUND_TRUTH_SUMMARY
from .console import err, escape, show, table
from .options import AsJson
from .table_options import Duplicates, skipping

if TYPE_CHECKING:
    from rich.table import Table

    from ..accuracy.correlation import Study


def correlate(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help=f"Ground truth ({GROUND_TRUTH} or {GROUND_TRUTH_SUMMARY} files or directories of them, "
            "long tables) and consistency outputs (`cc score`/`cc evaluate` directories, or directories of them)."
        ),
    ],
    pairs: Annotated[
        list[str] | None,
        typer.Option(
            "--pair",
            "--scores",
            "-s",
            help="NAME=DIR: pair forecaster NAME with this `cc score` output (overrides the automatic pairing).",
        ),
    ] = None,
    splits: Annotated[
        list[str] | None,
        typer.Option(
            "--split",
            help="TUPLES=SPLIT: pair tuple runs named *_tuples_TUPLES with ground-truth runs named *_SPLIT, e.g. "
            "scraped=20240501_20240815 (default: the ground-truth run whose questions the tuples were built from).",
        ),
    ] = None,
    checks: Annotated[
        str | None,
        typer.Option(help="Comma-separated checks the aggregate averages over; forecasters lacking one are left out."),
    ] = None,
    max_brier: Annotated[
        float, typer.Option(min=0, max=1, help="Leave out forecasters worse than this Brier (the paper: 0.25).")
    ] = 0.25,
    min_questions: Annotated[int, typer.Option(min=1, help="Leave out forecasters with fewer resolved questions.")] = 1,
    duplicates: Duplicates = "error",
    bootstrap: Annotated[int, typer.Option(min=1, help="Bootstrap resamples over forecasters.")] = 1000,
    as_json: AsJson = False,
) -> None:
    """Correlate each check's mean violation with the Brier score across forecasters."""
    from ..accuracy.correlation import correlate as study_of
    from ..accuracy.inputs import ScoreInputError

    left_out: dict[str, str] = {}
    try:
        with skipping() as skipped:
            study = study_of(paths, pairs=pairs or (), splits=splits or (), checks=checks, max_brier=max_brier,
                             min_questions=min_questions, duplicates=duplicates, bootstrap=bootstrap,
                             skipped=skipped, left_out=left_out)  # fmt: skip
    except ScoreInputError:  # said by the error mapping, after what was left out and why
        for name, reason in left_out.items():
            err.print(f"  left out {escape(name)}: {escape(reason)}")
        raise
    if study.duplicates:
        err.print(f"{study.duplicates} repeated forecast(s) merged by --duplicates {duplicates}")
    for name, path in study.paired.items():
        err.print(f"paired {escape(name)} with {escape(path)}")
    for name, missing in study.differing.items():
        err.print(
            f"[yellow]warning[/yellow] {escape(name)} lacks {', '.join(missing)}: the aggregate averages over "
            "different checks per forecaster; pass --checks to fix the set"
        )
    for name, reason in left_out.items():
        err.print(f"left out {escape(name)}: {escape(reason)}")
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
