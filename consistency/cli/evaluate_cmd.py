"""``cc evaluate``: forecast a benchmark (or resolved questions), score it, write a run directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ..evaluation import Estimate, EvaluationResult, RunOptions
from ..evaluation.reading import how_to_read
from ..evaluation.request import Gates, Priced, Request, run_request
from ..evaluation.telling import after_stop, cap_sentence, closing_lines, estimate_notes, scores_text, totals_lines
from ..llm import LLMSettings
from ..store.layout import GROUND_TRUTH_SUMMARY, SUMMARY
from .bounds import positive
from .console import err, escape, out, print_skipped, say, table, violations
from .errors import handle_errors
from .exits import ExitCode
from .lazy import typed_options
from .llm_command import llm_settings_command, shared_options
from .options import AsJson, Bootstrap, Checks, Concurrency, Epsilon, Forecaster, ForecasterOptions
from .progress import RunBar

FailOnError = Annotated[
    float | None,
    typer.Option(
        "--fail-on-error",
        min=0,
        help="Exit 1 when more questions than this failed: a fraction (below 1) or a count (default: exit 0).",
    ),
]
MaxViolation = Annotated[
    float | None,
    typer.Option(
        "--max-violation",
        min=0,
        help="Exit 1 (after writing the run) when the mean arbitrage violation over checks is above this.",
    ),
]
CheckLevel = Annotated[
    bool, typer.Option("--check-level", help="With --max-violation: hold every check to the limit, not the mean.")
]
gate_options = shared_options(
    {"fail_on_error": (FailOnError, None), "max_violation": (MaxViolation, None), "check_level": (CheckLevel, False)},
    "gates",
    lambda v: Gates(v["fail_on_error"], v["max_violation"], v["check_level"]),
)


@handle_errors(after=lambda exc, kwargs: after_stop(exc, kwargs.get("resume_dir")))
@llm_settings_command
@gate_options
def evaluate_cmd(
    forecaster: Forecaster = "local",
    forecaster_option: ForecasterOptions = None,
    tuples: Annotated[
        Path | None,
        typer.Option(
            "--tuples",
            "-t",
            help="Directory of <Checker>.jsonl tuple files, or one file; bundled:typed for the multiple-choice and "
            "numeric checks (default: the bundled yes/no benchmark).",
        ),
    ] = None,
    checks: Checks = None,
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", min=1, help="At most N tuples per check (sampled).")
    ] = None,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the --limit sample.")] = 0,
    questions: Annotated[
        Path | None,
        typer.Option("--questions", "-q", help="Resolved questions: score against outcomes (Brier, log score)."),
    ] = None,
    out_dir: Annotated[
        Path | None, typer.Option("--out", "-o", help="Run directory (default: runs/<time>_<forecaster>_<benchmark>).")
    ] = None,
    resume_dir: Annotated[
        Path | None, typer.Option("--resume", help="Finish an interrupted run directory without re-asking.")
    ] = None,
    concurrency: Concurrency = 32,
    forecast_timeout: Annotated[
        float,
        typer.Option(
            "--forecast-timeout", min=0, callback=positive, help="Seconds per question before it is recorded as failed."
        ),
    ] = 300.0,
    epsilon: Epsilon = 1e-3,
    bootstrap: Bootstrap = 1000,
    as_json: AsJson = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Print the model calls, prompt and completion tokens and dollars the run would cost; "
            "call no model, write no run directory.",
        ),
    ] = False,
    max_cost: Annotated[
        float | None,
        typer.Option(
            "--max-cost",
            min=0,
            help="Stop the run once its recorded spend reaches this many USD (status interrupted, exit 3); "
            "resume with a higher --max-cost to go on.",
        ),
    ] = None,
    *,
    gates: Gates,
    llm_settings: LLMSettings,
) -> None:
    """Forecast every question of a consistency benchmark once, score every tuple, write a run directory."""
    request = Request(
        forecaster, forecaster_option, tuples, checks, limit, seed, questions, out_dir, epsilon, bootstrap
    )
    bar = RunBar()
    options = RunOptions(concurrency=concurrency, timeout=forecast_timeout, llm=llm_settings, max_cost=max_cost,
                         on_start=bar.start, on_record=bar.record, on_batch=bar.batch)  # fmt: skip
    try:
        result = run_request(request, options, resume_dir=resume_dir, explicit=typed_options(), dry_run=dry_run,
                             say=lambda notice: err.print(notice, markup=False))  # fmt: skip
    finally:
        bar.stop()
    if isinstance(result, Priced):
        print_estimate(result.estimate, as_json, result.max_cost)
        return
    if result.record.stopped:
        stopped_at_cap(result)
    _print(result, as_json)
    failures = gates.failures(result)
    for sentence in failures:
        err.print(f"[red]failed[/red]: {escape(sentence)}")
    if failures:
        raise typer.Exit(ExitCode.FAILED)


def _print(result: EvaluationResult, as_json: bool) -> None:
    scores = scores_text(result)
    if as_json:
        out.print_json(json.dumps(result.record.summary) if scores else (result.run_dir / SUMMARY).read_text("utf-8"))
    else:
        out.print(violations(result.report) if result.report is not None else scores, markup=False)
        note = how_to_read(result.run_dir, result.record)
        if note:
            out.print(note, markup=False)
    say(totals_lines(result))
    print_skipped(result.skipped, str(result.run_dir / (SUMMARY if scores is None else GROUND_TRUTH_SUMMARY)))
    say(closing_lines(result))


def stopped_at_cap(result: EvaluationResult) -> None:
    """The spending cap stopped the run: say where it stands and how to go on, and exit with its own code."""
    say([cap_sentence(result)])
    raise typer.Exit(ExitCode.SPENDING_CAP)


def print_estimate(found: Estimate, as_json: bool, max_cost: float | None = None) -> None:
    """The dry run's figures: per model and in total (a table, or JSON), then how they were had."""
    if as_json:
        out.print_json(json.dumps(found.as_dict()))
        return
    rows = [(m.model, m.calls, m.cache_hits, m.prompt_tokens, m.completion_tokens,
             "no price" if m.cost is None else f"{m.cost:.4f}") for m in found.models]  # fmt: skip
    if len(found.models) != 1:
        f = found
        rows.append(("total", f.calls, f.cache_hits, f.prompt_tokens, f.completion_tokens, f"{f.cost:.4f}"))
    columns = ("model", "calls", "cache hits", "prompt tokens", "completion tokens", "USD")
    out.print(table(f"What the run would ask: {found.forecaster}", columns, rows, title_justify="left"))
    say(estimate_notes(found, max_cost))
