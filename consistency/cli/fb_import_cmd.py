"""``cc questions import forecastbench``: ForecastBench's question sets (with outcomes) as our questions."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .console import err, escape, out, table

app = typer.Typer(help="Read questions published elsewhere.", no_args_is_help=True)

SOURCES_HELP = (
    "Question, resolution or forecast set files, folders of them (a clone of ForecastBench's datasets "
    "repository too), their URLs, or fb:latest / fb:YYYY-MM-DD (fb:YYYY-MM-DD-human) from --datasets."
)


@app.command("forecastbench")
def forecastbench(
    sources: Annotated[list[str], typer.Argument(help=SOURCES_HELP)],
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Questions JSONL to write (replaced).")],
    datasets: Annotated[
        str | None,
        typer.Option(
            help="Where fb: references are found: a local copy of the datasets (folder) or its URL "
            "(default: ForecastBench's datasets on GitHub)."
        ),
    ] = None,
    resolutions: Annotated[
        bool, typer.Option("--resolutions/--no-resolutions", help="Attach outcomes from the resolution sets.")
    ] = True,
    freeze_values: Annotated[
        bool, typer.Option(help="Show market questions' freeze-date market value in their bodies, too.")
    ] = False,
    tuples: Annotated[
        Path | None, typer.Option(help="Folder for COMBINATION tuples of the sets' combination questions.")
    ] = None,
    runs: Annotated[
        Path | None,
        typer.Option(help="Folder for forecast sets given among the sources: COMBINATION forecast lines each."),
    ] = None,
    offline: Annotated[bool, typer.Option(help="Downloaded files from the cache only.")] = False,
    refresh: Annotated[bool, typer.Option(help="Download question sets again even when cached.")] = False,
) -> None:
    """ForecastBench question sets as questions: one per market question, one per dataset question and
    resolution date, outcomes from the resolution sets; ids keep ForecastBench's id, source and date."""
    from ..forecastbench import load
    from ..forecastbench.outputs import COMBINATION_FILE, write_import

    if out_path.is_dir():
        raise typer.BadParameter(f"{out_path} is a directory; give a JSONL file", param_hint="--out")
    loaded = load(sources, datasets=datasets, offline=offline, refresh=refresh, resolutions=resolutions,
                  freeze_values=freeze_values)  # fmt: skip
    imported = loaded.imported
    for note in loaded.notes:
        err.print(f"note: {escape(note)}", soft_wrap=True)
    _problems(imported.problems)
    written = write_import(loaded, out_path, tuples, runs)
    _summary(loaded, out_path)
    if tuples is not None:
        shown = escape(str(tuples / COMBINATION_FILE))
        out.print(f"{len(imported.tuples)} COMBINATION tuple(s)" + (f" in {shown}" if imported.tuples else ""))
    for run in written:
        if isinstance(run, str):
            out.print(run)
            continue
        missing = f"; {run.incomplete} combination(s) lack one of their six forecasts" if run.incomplete else ""
        out.print(f"{escape(run.name)}: {run.lines} COMBINATION forecast line(s) in {escape(str(run.folder))}{missing}")


def _problems(problems) -> None:
    for p in problems[:20]:
        err.print(f"  left out {escape(str(p))}", soft_wrap=True)
    if problems:
        more = " (the first 20 are listed)" if len(problems) > 20 else ""
        err.print(f"[yellow]{len(problems)} entr{'y' if len(problems) == 1 else 'ies'} left out{more}[/yellow]")


def _summary(loaded, out_path: Path) -> None:
    imported = loaded.imported
    for file, due, res in loaded.sets:
        with_outcomes = f"outcomes from {escape(Path(res).name)}" if res else "no resolution set"
        out.print(f"{escape(Path(file).name)} (due {due}): {with_outcomes}")
    if not imported.questions:
        return
    from ..forecastbench.formats import MARKET_SOURCES

    order = sorted(imported.per_source, key=lambda s: (s not in MARKET_SOURCES, s))
    rows = [(source, imported.per_source[source], imported.outcomes[source]) for source in order]
    total = ("total", sum(imported.per_source.values()), sum(imported.outcomes.values()))
    out.print(table(None, ("source", "questions", "outcomes"), rows, total=total, show_edge=True))
    kept = f"{len(imported.questions)} questions written to {escape(str(out_path))}"
    if loaded.repeated:
        kept += f" ({loaded.repeated} met twice, kept once)"
    out.print(kept)
    if imported.unresolved_markets:
        out.print(
            f"{imported.unresolved_markets} unresolved market rows: their current value is kept as information "
            "(metadata.forecastbench.resolution), not as an outcome"
        )
