"""``cc evaluate``: forecast a benchmark (or resolved questions), score it, write a run directory."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import typer

from ..evaluation import Estimate, EvaluationResult, RunOptions
from ..evaluation.reading import how_to_read
from ..evaluation.request import Gates, Priced, Request, run_request
from ..evaluation.telling import after_stop, cap_sentence, closing_lines, estimate_notes, scores_text, totals_lines
from ..llm import LLMSettings
from ..store.layout import GROUND_TRUTH_SUMMARY, SUMMARY
from .console import err, escape, out, print_skipped, say, table, violations
from .declared import options_from
from .errors import handle_errors
from .exits import ExitCode
from .lazy import typed_options
from .llm_command import llm_settings_command
from .options import AsJson
from .progress import RunBar

request_options = options_from(Request, "request", flags={
    "forecaster": ("--forecaster", "-f"), "forecaster_option": ("--forecaster-option", "-F"),
    "tuples": ("--tuples", "-t"), "checks": ("--checks", "-c"), "limit": ("--limit", "-n"),
    "questions": ("--questions", "-q"), "out_dir": ("--out", "-o")})  # fmt: skip
run_options = options_from(RunOptions, "run_options", flags={"timeout": "--forecast-timeout"},
                           names={"timeout": "forecast_timeout"})  # fmt: skip
call_options = options_from(run_request, "call", flags={"resume_dir": "--resume", "dry_run": "--dry-run"}, build=dict)
gate_options = options_from(Gates, "gates", flags={"per_check": "--check-level"})


@handle_errors(after=lambda exc, kwargs: after_stop(exc, kwargs.get("resume_dir")))
@llm_settings_command
@gate_options
@call_options
@run_options
@request_options
def evaluate_cmd(
    as_json: AsJson = False,
    *,
    request: Request,
    run_options: RunOptions,
    call: dict[str, Any],
    gates: Gates,
    llm_settings: LLMSettings,
) -> None:
    """Forecast every question of a consistency benchmark once, score every tuple, write a run directory."""
    bar = RunBar()
    options = dataclasses.replace(run_options, llm=llm_settings, on_start=bar.start, on_record=bar.record,
                                  on_batch=bar.batch)  # fmt: skip
    try:
        result = run_request(request, options, explicit=typed_options(), **call,
                             say=lambda notice: err.print(notice, markup=False))  # fmt: skip
    finally:
        bar.stop()
    if isinstance(result, Priced):
        print_estimate(result.estimate, as_json, result.max_cost)
        return
    if result.record.stopped:  # by the spending cap: where the run stands and how to go on, its own exit code
        say([cap_sentence(result)])
        raise typer.Exit(ExitCode.SPENDING_CAP)
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


def print_estimate(found: Estimate, as_json: bool, max_cost: float | None = None) -> None:
    """The dry run's figures: per model and in total (a table, or JSON), then how they were had."""
    if as_json:
        out.print_json(json.dumps(found.as_dict()))
        return
    title, columns, rows = found.table()
    out.print(table(title, columns, rows, title_justify="left"))
    say(estimate_notes(found, max_cost))
