"""``cc evaluate``: forecast a benchmark (or resolved questions), score it, write a run directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from ..evaluation import (
    EvaluationResult,
    RunDir,
    RunDirError,
    RunOptions,
    estimate,
    estimate_questions,
    estimate_resume,
    evaluate,
    resume,
)
from ..evaluation.ground_truth import evaluate_questions, resume_questions
from ..evaluation.reading import how_to_read
from ..evaluation.sessions import this_session
from ..files import DetectionError
from ..forecasters import ForecasterSpecError, load_forecaster
from ..forecasters.loading import parse_options
from ..llm import LLMSettings
from ..llm.fatal import FatalError
from ..llm.secrets import redact
from ..metrics.forecast_files import ScoreParams
from .bounds import positive
from .console import err, escape, fmt, out, print_skipped
from .cost_view import print_estimate, stopped_at_cap
from .exits import ExitCode, interrupted_code, terminated
from .llm_command import llm_settings_command
from .progress import RunBar
from .score_cmd import render_table


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
            "--tuples", "-t", help="Directory of <Checker>.jsonl tuple files, or one file (default: bundled)."
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
    from ..metrics.gates import LimitError, checked_limit

    try:  # a gate that could never fail (NaN, inf, negative) is refused before any question is asked
        for flag, gate_limit in (("--max-violation", max_violation), ("--fail-on-error", fail_on_error)):
            if gate_limit is not None:
                checked_limit(flag, gate_limit)
    except LimitError as exc:
        err.print(f"[red]error[/red] {escape(str(exc))}")
        raise typer.Exit(ExitCode.USAGE) from None
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
            options = _resume_options(recorded, options, given, resume_dir)
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
    except FatalError as exc:
        bar.stop()
        err.print(f"[red]error[/red] {escape(str(exc))}")
        if exc.run_dir is not None:
            err.print(
                f"run directory: [bold]{escape(str(exc.run_dir))}[/bold] (failed); once fixed, resume it with: "
                f"cc evaluate --resume {escape(str(exc.run_dir))}"
            )
        raise typer.Exit(ExitCode.FAILED) from None
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (see exits.install_sigterm)
        bar.stop()
        what = "stopped by SIGTERM" if terminated() else "interrupted"
        run_dir = getattr(exc, "run_dir", None) or resume_dir
        if run_dir is None:
            err.print(f"[yellow]{what}[/yellow] before the run directory was made: nothing to resume")
        else:
            err.print(
                f"[yellow]{what}[/yellow]: finished forecasts are saved in {escape(str(run_dir))}; resume with: "
                f"cc evaluate --resume {escape(str(run_dir))}"
            )
        raise typer.Exit(interrupted_code()) from None
    except (ForecasterSpecError, RunDirError, DetectionError, KeyError, ValueError, OSError) as exc:
        bar.stop()
        err.print(f"[red]error[/red] {escape(str(exc))}")
        raise typer.Exit(ExitCode.USAGE) from None
    bar.stop()
    if result.meta.get("stopped"):
        stopped_at_cap(result)
    _print(result, as_json)
    failed, total = len(result.failures), result.meta.get("questions", 0)
    if fail_on_error is not None and too_many_failures(failed, total, fail_on_error):
        err.print(f"[red]failed[/red]: {failed} failed question(s) exceed --fail-on-error {fail_on_error:g}")
        raise typer.Exit(ExitCode.FAILED)
    if total and failed == total:  # not "a few failed items": nothing at all to score
        err.print("[red]failed[/red]: no question got a forecast")
        raise typer.Exit(ExitCode.FAILED)
    summary = result.meta.get("summary") or {}
    if result.report is None and total and not summary.get("scored") and summary.get("unresolved"):
        err.print(
            f"[red]nothing scored[/red]: none of the {summary['unresolved']} answered question(s) has a resolution; "
            "a ground-truth run scores resolved questions only (resolve them with cc questions resolve)"
        )
        raise typer.Exit(ExitCode.FAILED)
    if max_violation is not None and result.report is not None:
        from ..metrics.gates import over_limit

        over = over_limit(result.report, max_violation, per_check=check_level)
        for name, value in over:
            what = "the mean over checks" if name == "overall" else name
            err.print(f"[red]failed[/red]: mean arbitrage violation of {what} {value:.4f} > {max_violation:g}")
        if over:
            raise typer.Exit(ExitCode.FAILED)


#: Options that change how a resumed run's remaining calls are made: the run's recorded value is kept
#: unless the option is given again, and then the new value is used, with a notice (and recorded for
#: later resumes). CLI parameter -> (RunOptions or LLMSettings field, shown as).
_TUNABLE = {
    "concurrency": ("concurrency", "--concurrency"),
    "forecast_timeout": ("timeout", "--forecast-timeout"),
    "max_connections": ("llm.max_connections", "--max-connections"),
    "rpm": ("llm.requests_per_minute", "--rpm"),
    "tpm": ("llm.tokens_per_minute", "--tpm"),
    "timeout": ("llm.timeout", "--timeout"),
    "max_attempts": ("llm.max_attempts", "--max-attempts"),
    "no_cache": ("llm.cache", "--no-cache"),
    "cost_limit": ("llm.cost_limit", "--cost-limit"),
    "max_cost": ("max_cost", "--max-cost"),
    "batch": ("llm.batch", "--batch"),
    "batch_fallback": ("llm.batch_fallback", "--batch-fallback"),
    "batch_poll": ("llm.batch_poll", "--batch-poll"),
}

#: Options that say what the run measures: given with --resume, they must equal what the run recorded.
_FIXED = {
    "forecaster": "--forecaster",
    "forecaster_option": "--forecaster-option",
    "tuples": "--tuples",
    "checks": "--checks",
    "limit": "--limit",
    "seed": "--seed",
    "questions": "--questions",
    "out_dir": "--out",
    "epsilon": "--epsilon",
    "bootstrap": "--bootstrap",
}


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


def _recorded_fixed(meta: dict[str, Any], resume_dir: Path) -> dict[str, Any]:
    bench, params = meta.get("benchmark") or {}, meta.get("parameters") or {}
    return {
        "forecaster": meta.get("forecaster_spec"),
        "forecaster_option": meta.get("forecaster_options") or {},
        "tuples": bench.get("tuples"),
        "checks": bench.get("checks"),
        "limit": bench.get("limit", meta.get("limit")),
        "seed": bench.get("seed", meta.get("seed")),
        "questions": meta.get("questions_file"),
        "out_dir": str(resume_dir),
        "epsilon": params.get("epsilon"),
        "bootstrap": params.get("bootstrap"),
    }


def _same(name: str, given: Any, recorded: Any) -> bool:
    """Whether a value typed again equals the recorded one (paths by file, checks by name, keys scrubbed)."""
    import os

    from ..checks import get_check

    if given is None or recorded is None:
        return given == recorded
    if name in ("tuples", "questions", "out_dir"):
        try:
            return os.path.samefile(given, recorded)
        except OSError:
            return str(given) == str(recorded)
    if name == "checks":
        try:
            return sorted(get_check(c.strip()).name for c in given.split(",") if c.strip()) == sorted(recorded)
        except KeyError:
            return False
    if name == "forecaster":
        return redact(given) == recorded
    if name == "forecaster_option":
        return {k: redact(str(v)) for k, v in _options(given).items()} == recorded
    return given == recorded


def _resume_options(meta: dict[str, Any], options: RunOptions, given: dict[str, Any], resume_dir: Path) -> RunOptions:
    """The recorded options of the run, with those given again on the command line in their place (each
    change said); an option that would change what the run measures is refused with one sentence."""
    import dataclasses

    from ..evaluation.asking import options_of

    explicit = _explicit()
    recorded = _recorded_fixed(meta, resume_dir)
    for name, flag in _FIXED.items():
        if name in explicit and not _same(name, given[name], recorded[name]):
            shown = given[name] if not isinstance(given[name], list) else " ".join(given[name])
            raise ValueError(
                f"{flag} {redact(str(shown))} differs from what {resume_dir} recorded "
                f"({redact(str(recorded[name]))}): a resume finishes a run as it began, so drop {flag} "
                "or start a new run without --resume"
            )
    kept = options_of(meta)
    llm = kept.llm.model_dump()
    run = {"concurrency": kept.concurrency, "timeout": kept.timeout, "max_cost": kept.max_cost}
    for name, (field, flag) in _TUNABLE.items():
        if name not in explicit:
            continue
        where, key = (llm, field[4:]) if field.startswith("llm.") else (run, field)
        value = getattr(options.llm, key) if where is llm else getattr(options, key)
        if value != where[key] and key == "cache":
            typed, now, was = ("--cache", "on", "off") if value else ("--no-cache", "off", "on")
            err.print(f"{typed}: the response cache is {now} from this resume on (the run had it {was})")
        elif value != where[key]:
            err.print(f"{flag} {value}: used from this resume on (the run had {where[key]})", markup=False)
        where[key] = value
    return dataclasses.replace(options, llm=LLMSettings.model_validate(llm), **run)


def too_many_failures(failed: int, total: int, limit: float) -> bool:
    """Like inspect's ``--fail-on-error``: a limit below 1 is a fraction of the items, else a count."""
    if limit < 1:
        return total > 0 and failed / total > limit
    return failed > limit


def _options(items: list[str] | None) -> dict[str, str]:
    return parse_options(items or [])


def _print(result: EvaluationResult, as_json: bool) -> None:
    meta = result.meta
    if result.report is None:
        summary = meta["summary"]
        if as_json:
            out.print_json(json.dumps(summary))
        else:
            out.print(
                f"questions {summary['total_questions']}  scored {summary['scored']}  failed {summary['failed']} "
                f"({fmt(summary['fraction_failed'], 3)})\n"
                f"Brier score {fmt(summary['avg_brier_score'])}  log score {fmt(summary['avg_log_score'])} bits  "
                f"calibration error {fmt(summary.get('calibration_error'))}"
            )
    elif as_json:
        out.print_json((result.run_dir / "summary.json").read_text(encoding="utf-8"))
    else:
        out.print(render_table(result.report))
    note = None if as_json else how_to_read(result.run_dir, meta)
    if note:
        out.print(note, markup=False, highlight=False)
    totals, session = meta.get("totals", {}), this_session(meta)
    part, count = "", len(meta.get("sessions") or [])
    if count > 1:
        part = (
            f" over {count} sessions (this one: {session.get('calls', 0)} calls, {session.get('cache_hits', 0)} "
            f"cache hits, ${session.get('cost', 0):.4f})"
        )
    err.print(
        f"{meta.get('questions', 0)} questions, {len(result.failures)} failed; "
        f"{totals.get('calls', 0)} model calls, {totals.get('cache_hits', 0)} cache hits, ${totals.get('cost', 0):.4f}"
        f"{part}"
        + (
            " (a bot's own LLM calls go through litellm and are not counted here)"
            if "bot" in meta.get("forecaster", {})
            else ""
        )
    )
    unresolved = (meta.get("summary") or {}).get("unresolved") or 0
    if result.report is None and unresolved and (meta.get("summary") or {}).get("scored"):
        err.print(f"[yellow]{unresolved} answered question(s) have no resolution[/yellow]: forecast, not scored")
    summary_file = "ground_truth_summary.json" if result.report is None else "summary.json"
    print_skipped(result.skipped, str(result.run_dir / summary_file))
    for failure in result.failures[:5]:
        err.print(f"  failed {escape(failure['question_id'])}: {escape(str(failure['error']))}")
    if len(result.failures) > 5:
        err.print(f"  ... and {len(result.failures) - 5} more (listed in summary.json)")
    err.print(f"run directory: [bold]{escape(str(result.run_dir))}[/bold] ({meta['status']})")
    if meta["status"] != "complete" or result.failures:
        err.print(f"retry what is missing with: cc evaluate --resume {escape(str(result.run_dir))}")
