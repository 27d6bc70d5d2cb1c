"""``cc attack``: search for the tuples on which a forecaster contradicts itself most, within a forecast budget."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..llm import LLMSettings
from .console import err, escape, show
from .errors import handle_errors
from .llm_command import llm_settings_command
from .options import AsJson, Checks, Concurrency, Forecaster, ForecasterOptions


@handle_errors(after="finished forecasts are journaled; run the same command with --resume")
@llm_settings_command
def attack_cmd(
    forecaster: Forecaster = "local",
    forecaster_option: ForecasterOptions = None,
    budget: Annotated[
        int, typer.Option("--budget", "-b", min=1, help="Most forecasts of the target the search spends (a hard cap).")
    ] = 200,
    checks: Checks = None,
    questions: Annotated[
        Path | None,
        typer.Option("--questions", "-q", help="Base questions (JSONL): the pool, and the seeds when no --tuples."),
    ] = None,
    tuples: Annotated[
        Path | None,
        typer.Option(
            "--tuples", "-t", help="Seed tuples: a tuples or forecasts directory, or bundled:typed (default: bundled)."
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            help="Generator model that writes and verifies question variants (default: templates only).",
        ),
    ] = None,
    out_dir: Annotated[
        Path | None, typer.Option("--out", "-o", help="Attack directory (default: attacks/<time>_attack_<forecaster>).")
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the attack in --out (after a kill, or with a larger --budget).")
    ] = False,
    keep: Annotated[int, typer.Option("--keep", "-k", min=1, help="Most violated tuples returned.")] = 20,
    baseline: Annotated[
        bool,
        typer.Option(
            "--baseline/--no-baseline",
            help="Also sample seed tuples uniformly with the same budget, for the comparison (forecasts the "
            "search already bought cost no call).",
        ),
    ] = True,
    width: Annotated[int, typer.Option(min=1, help="Tuples evaluated per round.")] = 8,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the seed-tuple order and the baseline sample.")] = 0,
    verify_threshold: Annotated[
        int,
        typer.Option(
            "--verify-threshold", min=0, max=10, help="Verifier score (0-10) a tuple with model-written text needs."
        ),
    ] = 6,
    concurrency: Concurrency = 16,
    as_json: AsJson = False,
    *,
    llm_settings: LLMSettings,
) -> None:
    """Search adaptively for the tuples a forecaster is most incoherent on; write them as a benchmark."""
    from ..attack import SearchOptions, attack
    from ..attack.report import render_markdown
    from ..forecasters.loading import parse_options
    from .progress import Progress

    options = SearchOptions(keep=keep, width=width, seed=seed, verify_threshold=verify_threshold,
                            concurrency=concurrency)  # fmt: skip
    display = Progress(transient=True)
    task = display.task("searching", total=budget, info="starting the search")
    with display:
        result = attack(
            forecaster, budget=budget, out=out_dir, questions=questions, tuples=tuples, generator=model,
            checks=[c.strip() for c in checks.split(",") if c.strip()] if checks else None,
            forecaster_options=parse_options(forecaster_option or []), options=options, llm=llm_settings,
            baseline=baseline, resume=resume,
            on_round=lambda search: task.update(completed=search.used("search"), info=f"round {search.rounds}"),
        )  # fmt: skip
    text = {"markup": False, "highlight": False, "soft_wrap": True, "end": ""}
    show(result.summary, as_json, lambda: render_markdown(result.summary), **text)
    where = escape(str(result.out))
    err.print(f"attack directory: [bold]{where}[/bold] (tuples/ for cc evaluate -t, forecasts/ for cc score)")
