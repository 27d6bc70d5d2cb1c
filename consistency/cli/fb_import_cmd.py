"""``cc questions import forecastbench``: ForecastBench's question sets (with outcomes) as our questions."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..forecastbench.requests import ImportRequest
from .console import out, say, table
from .declared import options_from

app = typer.Typer(help="Read questions published elsewhere.", no_args_is_help=True)

SOURCES_HELP = (
    "Question, resolution or forecast set files, folders of them (a clone of ForecastBench's datasets "
    "repository too), their URLs, or fb:latest / fb:YYYY-MM-DD (fb:YYYY-MM-DD-human) from --datasets."
)


@app.command("forecastbench")
@options_from(ImportRequest, "request")
def forecastbench(
    sources: Annotated[list[str], typer.Argument(help=SOURCES_HELP)],
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Questions JSONL to write (replaced).")],
    *,
    request: ImportRequest,
) -> None:
    """ForecastBench question sets as questions: one per market question, one per dataset question and
    resolution date, outcomes from the resolution sets; ids keep ForecastBench's id, source and date."""
    from ..forecastbench.outputs import left_out_lines, set_lines, source_rows, written_lines

    if out_path.is_dir():
        raise typer.BadParameter(f"{out_path} is a directory; give a JSONL file", param_hint="--out")
    loaded = request.load(sources)
    say(f"note: {note}" for note in loaded.notes)
    say(left_out_lines(loaded.imported.problems))
    written = request.write(loaded, out_path)
    say(set_lines(loaded), out)
    if loaded.imported.questions:
        rows, total = source_rows(loaded)
        out.print(table(None, ("source", "questions", "outcomes"), rows, total=total, show_edge=True))
    say(written_lines(loaded, out_path, request.tuples, written), out)
