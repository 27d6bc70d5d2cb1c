"""``cc evaluate``: forecast a benchmark (or resolved questions), score it, write a run directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..evaluation import EvaluationResult, RunDir, RunDirError, RunOptions, Tally, evaluate, resume
from ..evaluation.ground_truth import evaluate_questions, resume_questions
from ..evaluation.sessions import this_session
from ..files import DetectionError
from ..forecasters import ForecasterSpecError, load_forecaster
from ..forecasters.loading import parse_options
from ..llm import LLMSettings
from ..llm.fatal import FatalError
from ..llm.secrets import redact
from ..metrics.forecast_files import ScoreParams
from .console import err, escape, fmt, out, print_skipped
from .llm_command import llm_settings_command
from .score_cmd import render_table


class _Bar:
    """A rich progress bar fed by the evaluation's callbacks: done / failed / cached / cost so far."""

    def __init__(self) -> None:
        self.tally = Tally()
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
            console=err,
            transient=False,
        )
        self.task: Any = None
        self.batches: Any = None

    def start(self, tally: Tally) -> None:
        self.tally = tally
        self.progress.start()
        self.task = self.progress.add_task("forecasting", total=tally.total, completed=tally.done, info=self._info())

    def record(self, record: dict[str, Any]) -> None:
        ok = record.get("forecast") is not None
        self.tally.done += ok
        self.tally.failed += not ok
        self.tally.cached += bool(record.get("calls")) and record.get("cache_hits") == record.get("calls")
        self.tally.cost += record.get("cost") or 0.0
        self.progress.update(self.task, completed=self.tally.done + self.tally.failed, info=self._info())

    def batch(self, progress: Any) -> None:
        """Batch mode: a second line with the batches' state (called whenever a batch changes)."""
        p = progress
        info = (
            f"{p.batches} submitted ({p.requests} requests)  in progress {p.in_progress}  "
            f"answered {p.completed}  failed {p.failed}  expected ${p.expected_cost:.4f}"
        )
        if self.batches is None:
            self.batches = self.progress.add_task("batches", total=None, info=info)
        self.progress.update(self.batches, info=info)

    def _info(self) -> str:
        t = self.tally
        return f"failed {t.failed}  cached {t.cached}  ${t.cost:.4f}"

    def stop(self) -> None:
        if self.task is not None:  # never started (an error before the run): nothing to close
            self.progress.stop()


@llm_settings_command
def evaluate_cmd(
    forecaster: Annotated[
        str,
        typer.Option(
            "--forecaster",
            "-f",
            help="basic, cot, constant, uniform, crowd, replay, a model spec (gpt-4o, local: the basic "
            "forecaster with that model), name:model (cot:gpt-4o), file.py::Class or package.module:Class.",
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
    limit: Annotated[int | None, typer.Option("--limit", "-n", help="At most N tuples per check (sampled).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the --limit sample.")] = 0,
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
    concurrency: Annotated[int, typer.Option(help="Questions forecast at once.")] = 32,
    forecast_timeout: Annotated[
        float, typer.Option("--forecast-timeout", help="Seconds per question before it is recorded as failed.")
    ] = 300.0,
    epsilon: Annotated[float, typer.Option(help="Forecasts of exactly 0 or 1 become ε / 1-ε for arbitrage.")] = 1e-3,
    bootstrap: Annotated[int, typer.Option(help="Bootstrap resamples for the 95% interval of each mean.")] = 1000,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON instead of a table.")] = False,
    fail_on_error: Annotated[
        float | None,
        typer.Option(
            "--fail-on-error",
            help="Exit 1 when more questions than this failed: a fraction (below 1) or a count (default: exit 0).",
        ),
    ] = None,
    *,
    llm_settings: LLMSettings,
) -> None:
    """Forecast every question of a consistency benchmark once, score every tuple, write a run directory."""
    bar = _Bar()
    options = RunOptions(
        concurrency=concurrency,
        timeout=forecast_timeout,
        llm=llm_settings,
        on_start=bar.start,
        on_record=bar.record,
        on_batch=bar.batch,
    )
    try:
        from ..sources.paper import dataset_path  # paper:NAME and hf:// references → local files

        tuples, questions = dataset_path(tuples), dataset_path(questions)
        if resume_dir is not None:
            recorded = RunDir(resume_dir).read()
            again = None  # a spec with a key in its URL was stored scrubbed: the user gives it again
            if redact(forecaster) != forecaster and redact(forecaster) == recorded.get("forecaster_spec"):
                again = load_forecaster(forecaster, recorded.get("forecaster_options"))
            finish = resume_questions if recorded.get("kind") == "ground_truth" else resume
            result = finish(resume_dir, forecaster=again, options=options)
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
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        bar.stop()
        err.print("[yellow]interrupted[/yellow]: finished forecasts are saved; resume with --resume <run dir>")
        raise typer.Exit(130) from None
    except (ForecasterSpecError, RunDirError, DetectionError, KeyError, ValueError, OSError) as exc:
        bar.stop()
        err.print(f"[red]error[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    bar.stop()
    _print(result, as_json)
    failed, total = len(result.failures), result.meta.get("questions", 0)
    if fail_on_error is not None and too_many_failures(failed, total, fail_on_error):
        err.print(f"[red]failed[/red]: {failed} failed question(s) exceed --fail-on-error {fail_on_error:g}")
        raise typer.Exit(1)
    if total and failed == total:  # not "a few failed items": nothing at all to score
        err.print("[red]failed[/red]: no question got a forecast")
        raise typer.Exit(1)


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
    )
    summary_file = "ground_truth_summary.json" if result.report is None else "summary.json"
    print_skipped(result.skipped, str(result.run_dir / summary_file))
    for failure in result.failures[:5]:
        err.print(f"  failed {escape(failure['question_id'])}: {escape(str(failure['error']))}")
    if len(result.failures) > 5:
        err.print(f"  ... and {len(result.failures) - 5} more (listed in summary.json)")
    err.print(f"run directory: [bold]{escape(str(result.run_dir))}[/bold] ({meta['status']})")
    if meta["status"] != "complete" or result.failures:
        err.print(f"retry what is missing with: cc evaluate --resume {escape(str(result.run_dir))}")
