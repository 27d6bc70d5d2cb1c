"""``cc questions import forecastbench``: ForecastBench's question sets (with outcomes) as our questions."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .console import out, say, table

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
    from ..forecastbench.outputs import left_out_lines, set_lines, source_rows, write_import, written_lines

    if out_path.is_dir():
        raise typer.BadParameter(f"{out_path} is a directory; give a JSONL file", param_hint="--out")
    loaded = load(sources, datasets=datasets, offline=offline, refresh=refresh, resolutions=resolutions,
                  freeze_values=freeze_values)  # fmt: skip
    say(f"note: {note}" for note in loaded.notes)
    say(left_out_lines(loaded.imported.problems))
    written = write_import(loaded, out_path, tuples, runs)
    say(set_lines(loaded), out)
    if loaded.imported.questions:
        rows, total = source_rows(loaded)
        out.print(table(None, ("source", "questions", "outcomes"), rows, total=total, show_edge=True))
    say(written_lines(loaded, out_path, tuples, written), out)
