"""``cc export forecastbench``: a run's forecasts as a ForecastBench forecast set (a tournament submission)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..forecastbench.requests import SubmissionRequest
from .console import err, escape, out
from .declared import options_from
from .exits import ExitCode


@options_from(SubmissionRequest, "request", flags={"out_dir": ("--out", "-o")})
def forecastbench(
    run: Annotated[Path, typer.Argument(help="A run directory of `cc evaluate` on imported ForecastBench questions.")],
    *,
    request: SubmissionRequest,
) -> None:
    """Write RUN's forecasts as ForecastBench forecast sets, one per question set, checked by its rules first."""
    made = request.submissions(run)
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
        if findings and not request.force:
            refused = True
            err.print(f"[red]refused[/red] {escape(sub.file_name)}: ForecastBench would not take every row of it "
                      "(reasons above); fix the run or give --force")  # fmt: skip
            continue
        path = sub.write(request.out_dir)
        rows = len(sub.document["forecasts"])
        verdict = "passes ForecastBench's checks" if not findings else f"{len(findings)} finding(s), written anyway"
        out.print(f"{escape(str(path))}: {rows} forecasts ({covered}), {verdict}")
    if refused:
        raise typer.Exit(ExitCode.FAILED)
