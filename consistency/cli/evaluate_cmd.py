"""``cc evaluate``: forecast a benchmark (or resolved questions), score it, write a run directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from ..evaluation import (
    EvaluationResult,
    RunDir,
    RunOptions,
    estimate,
    estimate_questions,
    estimate_resume,
    evaluate,
    resume,
)
from ..evaluation.ground_truth import evaluate_questions, resume_questions
from ..evaluation.reading import how_to_read
from ..evaluation.resuming import resume_options
from ..forecasters import load_forecaster
from ..forecasters.loading import parse_options
from ..llm import LLMSettings
from ..llm.secrets import redact
from ..metrics.scoring import ScoreParams
from ..store.layout import GROUND_TRUTH_SUMMARY, SUMMARY
from ..store.meta import Totals
from ..store.records import truth_summary_of
from .bounds import positive
from .console import err, escape, fmt, out, print_skipped, violations
from .cost_view import print_estimate, stopped_at_cap
from .errors import handle_errors
from .exits import ExitCode
from .llm_command import llm_settings_command
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


@handle_errors(after=_after)
@llm_settings_command
def evaluate_cmd(
    forecaster: Annotated[
        str,
        typer.Option(
            "--forecaster",
            "-f",
            help="basic, cot, logprob, constant, uniform, crowd, replay; a model (gpt-4o, openai/NAME, "
            "openrouter/VENDOR/NAME, URL::NAME: the basic forecaster with it; local: the bundled model, "
            "logprob:local); name:model (cot:gpt-4o, logprob:gpt-4o-mini, basic:local); "
            "arbitrage:SPEC (SPEC arbitraged, -F checks=neg,cond); file.py::Class or package.module:Class; "
            "a forecasting-tools bot: ft:bot.py::MyBot, ft:package.module:MyBot, ft:TemplateBot.",
        ),
    ] = "local",
    forecaster_option: Annotated[
        list[str] | None,
        typer.Option("--forecaster-option", "-F", help="Forecaster option key=value (repeatable), e.g. -F p=0.3."),
    ] = None,
    tuples: Annotated[
        Path | None,
        typer.Option(
            "--tuples",
            "-t",
            help="Directory of <Checker>.jsonl tuple files, or one file; bundled:typed for the multiple-choice and "
            "numeric checks (default: the bundled yes/no benchmark).",
        ),
    ] = None,
    checks: Annotated[
        str | None, typer.Option("--checks", "-c", help="Comma-separated checks to run, e.g. cond,neg (default: all).")
    ] = None,
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
    concurrency: Annotated[int, typer.Option(min=1, help="Questions forecast at once.")] = 32,
    forecast_timeout: Annotated[
        float,
        typer.Option(
            "--forecast-timeout", min=0, callback=positive, help="Seconds per question before it is recorded as failed."
        ),
    ] = 300.0,
    epsilon: Annotated[
        float, typer.Option(min=0, max=0.5, help="Forecasts of exactly 0 or 1 become ε / 1-ε for arbitrage.")
    ] = 1e-3,
    bootstrap: Annotated[
        int, typer.Option(min=0, help="Bootstrap resamples for the 95% interval of each mean (0: none).")
    ] = 1000,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON instead of a table.")] = False,
    fail_on_error: Annotated[
        float | None,
        typer.Option(
            "--fail-on-error",
            min=0,
            help="Exit 1 when more questions than this failed: a fraction (below 1) or a count (default: exit 0).",
        ),
    ] = None,
    max_violation: Annotated[
        float | None,
        typer.Option(
            "--max-violation",
            min=0,
            help="Exit 1 (after writing the run) when the mean arbitrage violation over checks is above this.",
        ),
    ] = None,
    check_level: Annotated[
        bool, typer.Option("--check-level", help="With --max-violation: hold every check to the limit, not the mean.")
    ] = False,
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
    llm_settings: LLMSettings,
) -> None:
    """Forecast every question of a consistency benchmark once, score every tuple, write a run directory."""
    from ..evaluation.gate import checked_limit, failed_gates

    for flag, gate_limit in (("--max-violation", max_violation), ("--fail-on-error", fail_on_error)):
        if gate_limit is not None:  # a gate that could never fail (NaN, inf, negative): refused before any question
            checked_limit(flag, gate_limit)
    bar = RunBar()
    options = RunOptions(
        concurrency=concurrency,
        timeout=forecast_timeout,
        llm=llm_settings,
        max_cost=max_cost,
        on_start=bar.start,
        on_record=bar.record,
        on_batch=bar.batch,
    )
    try:
        from ..sources.paper import dataset_path  # paper:NAME and hf:// references → local files

        tuples, questions = dataset_path(tuples), dataset_path(questions)
        if resume_dir is not None:
            recorded = RunDir(resume_dir).read()
            given = {
                "forecaster": forecaster,
                "forecaster_option": forecaster_option,
                "tuples": tuples,
                "checks": checks,
                "limit": limit,
                "seed": seed,
                "questions": questions,
                "out_dir": out_dir,
                "epsilon": epsilon,
                "bootstrap": bootstrap,
            }
            options, notices = resume_options(recorded, options, given, _explicit(), resume_dir)
            for notice in notices:
                err.print(notice, markup=False)
            again = None  # a spec with a key in its URL was stored scrubbed: the user gives it again
            if redact(forecaster) != forecaster and redact(forecaster) == recorded.get("forecaster_spec"):
                again = load_forecaster(forecaster, recorded.get("forecaster_options"))
            if dry_run:
                print_estimate(
                    estimate_resume(resume_dir, forecaster=again, options=options), as_json, options.max_cost
                )
                return
            finish = resume_questions if recorded.get("kind") == "ground_truth" else resume
            result = finish(resume_dir, forecaster=again, options=options)
        elif dry_run:
            forecaster_options = _options(forecaster_option)
            if questions is not None:
                found = estimate_questions(
                    forecaster,
                    questions,
                    limit=limit,
                    seed=seed,
                    forecaster_options=forecaster_options,
                    options=options,
                )
            else:
                found = estimate(
                    forecaster,
                    tuples=tuples,
                    checks=[c for c in checks.split(",") if c.strip()] if checks else None,
                    limit=limit,
                    seed=seed,
                    forecaster_options=forecaster_options,
                    options=options,
                )
            print_estimate(found, as_json, max_cost)
            return
        elif questions is not None:
            result = evaluate_questions(
                forecaster,
                questions,
                limit=limit,
                seed=seed,
                out=out_dir,
                forecaster_options=_options(forecaster_option),
                options=options,
            )
        else:
            result = evaluate(
                forecaster,
                tuples=tuples,
                checks=[c for c in checks.split(",") if c.strip()] if checks else None,
                limit=limit,
                seed=seed,
                out=out_dir,
                forecaster_options=_options(forecaster_option),
                params=ScoreParams(epsilon=epsilon, bootstrap=bootstrap),
                options=options,
            )
    finally:
        bar.stop()
    if result.record.stopped:
        stopped_at_cap(result)
    _print(result, as_json)
    failures = failed_gates(result, fail_on_error=fail_on_error, max_violation=max_violation, per_check=check_level)
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


def _options(items: list[str] | None) -> dict[str, str]:
    return parse_options(items or [])


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
