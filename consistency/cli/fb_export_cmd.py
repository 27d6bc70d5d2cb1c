"""``cc export forecastbench``: a run's forecasts as a ForecastBench forecast set (a tournament submission)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .console import err, escape, out
from .exits import ExitCode


def forecastbench(
    run: Annotated[Path, typer.Argument(help="A run directory of `cc evaluate` on imported ForecastBench questions.")],
    organization: Annotated[str, typer.Option(help="Your team, as ForecastBench lists it.")],
    model: Annotated[str, typer.Option(help="The forecaster's name (the file is named after it).")],
    model_organization: Annotated[
        str | None, typer.Option(help="Who made the model (default: --organization).")
    ] = None,
    reasoning: Annotated[
        bool, typer.Option(help="Include each forecast's reasoning (ForecastBench keeps none).")
    ] = False,
    questions: Annotated[
        Path | None,
        typer.Option(help="The imported questions (JSONL) the run forecast (default: the run's own questions file)."),
    ] = None,
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the file(s) to.")] = Path("."),
    force: Annotated[
        bool, typer.Option(help="Write even what ForecastBench would drop rows of or rank no file.")
    ] = False,
) -> None:
    """Write RUN's forecasts as ForecastBench forecast sets, one per question set, checked by its rules first."""
    from ..forecastbench.export import question_sets, submissions
    from ..forecastbench.forecasts import read_run
    from ..forecastbench.outputs import run_questions

    forecasts = read_run(run)
    made = submissions(forecasts, question_sets(run_questions(run, questions)), organization=organization, model=model,
                       model_organization=model_organization, reasoning=reasoning)  # fmt: skip
    refused = False
    for sub in made:
        for note in sub.notes:
            err.print(f"note: {escape(note)}")
        findings = sub.validation.findings
        for finding in findings[:10]:
            err.print(f"  {escape(str(finding))}", soft_wrap=True)
        if len(findings) > 10:
            err.print(f"  ... and {len(findings) - 10} more")
        cov = sub.validation.coverage
        covered = f"{cov.rows['overall'] - cov.missing['overall']} of {cov.rows['overall']} rows" if cov else ""
        if findings and not force:
            refused = True
            err.print(f"[red]refused[/red] {escape(sub.file_name)}: ForecastBench would not take every row of it "
                      "(reasons above); fix the run or give --force")  # fmt: skip
            continue
        path = sub.write(out_dir)
        rows = len(sub.document["forecasts"])
        verdict = "passes ForecastBench's checks" if not findings else f"{len(findings)} finding(s), written anyway"
        out.print(f"{escape(str(path))}: {rows} forecasts ({covered}), {verdict}")
    if refused:
        raise typer.Exit(ExitCode.FAILED)
