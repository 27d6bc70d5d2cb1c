"""``cc evaluate``: forecast a benchmark (or resolved questions), score it, write a run directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from ..evaluation import EvaluationResult, RunOptions
from ..evaluation.reading import how_to_read
from ..evaluation.request import Gates, Priced, Request, run_request
from ..llm import LLMSettings
from ..store.layout import GROUND_TRUTH_SUMMARY, SUMMARY
from ..store.meta import Totals
from ..store.records import truth_summary_of
from .bounds import positive
from .console import err, escape, fmt, out, print_skipped, violations
from .cost_view import print_estimate, stopped_at_cap
from .errors import handle_errors
from .exits import ExitCode
from .llm_command import llm_settings_command, shared_options
from .options import AsJson, Bootstrap, Checks, Concurrency, Epsilon, Forecaster, ForecasterOptions
from .progress import RunBar


def _after(exc: BaseException, kwargs: dict[str, Any]) -> str | None:
    """Where a stopped run is, and how to finish it."""
    run_dir = getattr(exc, "run_dir", None) or (
        kwargs.get("resume_dir") if isinstance(exc, KeyboardInterrupt) else None
    )
    if run_dir is None:
        return "before the run directory was made: nothing to resume" if isinstance(exc, KeyboardInterrupt) else None
    if isinstance(exc, KeyboardInterrupt):
        return f"finished forecasts are saved in {run_dir}; resume with: cc evaluate --resume {run_dir}"
    return f"run directory: {run_dir} (failed); once fixed, resume it with: cc evaluate --resume {run_dir}"


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


@handle_errors(after=_after)
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
        result = run_request(request, options, resume_dir=resume_dir, explicit=_explicit(), dry_run=dry_run,
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


def _explicit() -> set[str]:
    """The parameters the user typed (not left at their defaults)."""
    try:  # typer >= 0.2x carries its own copy of click (as in .lazy)
        from typer._click.core import ParameterSource
        from typer._click.globals import get_current_context
    except ImportError:  # pragma: no cover - older typer uses click itself
        from click import get_current_context  # type: ignore[no-redef]
        from click.core import ParameterSource  # type: ignore[no-redef]

    ctx = get_current_context(silent=True)
    if ctx is None:
        return set()
    return {name for name in ctx.params if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE}


def _print(result: EvaluationResult, as_json: bool) -> None:
    record = result.record
    summary = truth_summary_of(record) if result.report is None else None
    if summary is not None:
        if as_json:
            out.print_json(json.dumps(record.summary))
        else:
            out.print(
                f"questions {summary.total_questions}  scored {summary.scored}  failed {summary.failed} "
                f"({fmt(summary.fraction_failed, 3)})\n"
                f"Brier score {fmt(summary.avg_brier_score)}  log score {fmt(summary.avg_log_score)} bits  "
                f"calibration error {fmt(summary.calibration_error)}"
            )
            for kind, scores in summary.by_type.items():  # multiple-choice, numeric, date questions
                out.print(scores.line(kind))
    elif as_json:
        out.print_json((result.run_dir / SUMMARY).read_text(encoding="utf-8"))
    else:
        out.print(violations(result.report))
    note = None if as_json else how_to_read(result.run_dir, record)
    if note:
        out.print(note, markup=False, highlight=False)
    totals, session = record.totals or Totals(), record.session_totals()
    part, count = "", len(record.sessions or [])
    if count > 1:
        part = (
            f" over {count} sessions (this one: {session.calls or 0} calls, {session.cache_hits or 0} "
            f"cache hits, ${session.cost or 0:.4f})"
        )
    err.print(
        f"{record.questions or 0} questions, {len(result.failures)} failed; "
        f"{totals.calls or 0} model calls, {totals.cache_hits or 0} cache hits, ${totals.cost or 0:.4f}"
        f"{part}"
        + (
            " (a bot's own LLM calls go through litellm and are not counted here)"
            if record.forecaster and record.forecaster.bot
            else ""
        )
    )
    unresolved = (summary.unresolved or 0) if summary else 0
    if summary is not None and unresolved and summary.scored:
        err.print(f"[yellow]{unresolved} answered question(s) have no resolution[/yellow]: forecast, not scored")
    summary_file = GROUND_TRUTH_SUMMARY if result.report is None else SUMMARY
    print_skipped(result.skipped, str(result.run_dir / summary_file))
    for failure in result.failures[:5]:
        err.print(f"  failed {escape(failure['question_id'])}: {escape(str(failure['error']))}")
    if len(result.failures) > 5:
        err.print(f"  ... and {len(result.failures) - 5} more (listed in {SUMMARY})")
    err.print(f"run directory: [bold]{escape(str(result.run_dir))}[/bold] ({record.status})")
    if record.status != "complete" or result.failures:
        err.print(f"retry what is missing with: cc evaluate --resume {escape(str(result.run_dir))}")
