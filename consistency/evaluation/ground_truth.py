"""Scoring a forecaster against resolved questions: Brier score, log score, calibration, failures.

Yes/no questions are scored as the paper does (``ground_truth_results.jsonl``, Brier and log score in bits,
calibration). Multiple-choice questions get the multi-class Brier score and the log score of the option that
happened, numeric and date questions the log score of the density at the outcome and the CRPS
(:mod:`consistency.accuracy.distribution_scores`: Metaculus's treatment of outcomes beyond the bounds); they are
written to their own file (``ground_truth_typed_results.jsonl``) and summarised per type under ``by_type``, so the
yes/no file and averages read exactly as before."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..accuracy.distribution_scores import SCORES_BY_TYPE, outcome_losses, result_field
from ..accuracy.proper import brier, expected_calibration_error, log_loss, murphy_decomposition
from ..errors import InputError
from ..files import FileKind, detect, validate_lines
from ..forecasters import Forecaster
from ..jsonl import LineError, write_json, write_jsonl
from ..metrics import bootstrap_mean_ci
from ..models import BINARY_TYPES, ForecastingQuestion, GroundTruthRecord, parse_forecast
from ..store import layout
from .asking import Ask, RunOptions, drive, question_key
from .benchmark import check_sample, nothing_usable, sample_in_order
from .rundir import RunDir
from .runner import EvaluationResult, QuestionsRecord, reopen_run, start_run, with_cap

#: How a line that reuses another question's id is said (the first question is kept).
REPEATED_ID = "repeats the id of line"


def load_questions(
    path: str | Path, limit: int | None = None, seed: int = 0
) -> tuple[list[ForecastingQuestion], list[LineError]]:
    """Questions from a questions file or a ground-truth results file; bad lines are returned, not fatal."""
    check_sample(limit, seed)
    info = detect(path)
    if info.kind not in (FileKind.QUESTIONS, FileKind.GROUND_TRUTH):
        raise InputError(f"{path}: holds {info.kind}; --questions needs a questions file")
    questions, errors, seen = [], [], set()
    first_line: dict[str, int] = {}  # id -> the line that used it first
    for number, item in validate_lines(info):
        if isinstance(item, list):
            errors.extend(item)
            continue
        q = item.question if isinstance(item, GroundTruthRecord) else item
        if question_key(q) in seen:
            continue  # the same question again: one forecast serves both
        if q.id in first_line:  # another question under a used id: its results could not be told apart
            why = f"{REPEATED_ID} {first_line[q.id]} with another question; the first is kept"
            errors.append(LineError(str(info.path), number, "id", why))
            continue
        seen.add(question_key(q))
        first_line[q.id] = number
        questions.append(q)
    return sample_in_order(questions, limit, np.random.default_rng(seed)), errors


def read_questions(path: str | Path, strict: bool = True) -> tuple[list[ForecastingQuestion], list[LineError]]:
    """The questions of ``path`` (a questions or ground-truth file, or a ``paper:NAME``/``hf://`` reference) and
    the lines left out with their reasons. ``strict``: an invalid line is an :class:`InputError` naming it (only a
    reused id is left out, the first question kept), for commands that build on every question they are given.
    A file with no usable question is an :class:`InputError` either way."""
    from ..sources.paper import dataset_path

    path = dataset_path(path)
    questions, errors = load_questions(path)
    invalid = [e for e in errors if not e.message.startswith(REPEATED_ID)] if strict else []
    if invalid:
        lines = len({e.line for e in invalid})
        more = f" (and {lines - 1} more invalid line(s); `cc validate {path}` lists them)" if lines > 1 else ""
        raise InputError(f"{invalid[0]}{more}")
    if not questions:
        raise InputError(nothing_usable("question", path, errors))
    return questions, errors


def evaluate_questions(
    forecaster: Forecaster | str,
    questions: str | Path,
    *,
    limit: int | None = None,
    seed: int = 0,
    out: str | Path | None = None,
    forecaster_options: dict[str, str] | None = None,
    options: RunOptions | None = None,
    max_cost: float | None = None,
) -> EvaluationResult:
    """Forecast resolved questions and score the forecasts against their resolutions (``max_cost``: as
    :func:`~consistency.evaluation.evaluate`)."""
    items, errors = load_questions(questions, limit, seed)
    if not items:
        raise InputError(nothing_usable("question", questions, errors))
    options = with_cap(options or RunOptions(), max_cost)
    meta = {"kind": "ground_truth", "questions_file": str(questions), "limit": limit, "seed": seed}
    loaded, run = start_run(forecaster, forecaster_options, out, Path(questions).stem, options, meta)
    return _run(loaded, items, errors, run, options)


def resume_questions(
    run_dir: str | Path,
    *,
    forecaster: Forecaster | None = None,
    options: RunOptions | None = None,
    max_cost: float | None = None,
) -> EvaluationResult:
    run, recorded, forecaster, options = reopen_run(run_dir, QuestionsRecord, forecaster, options)
    options = with_cap(options, max_cost)
    items, errors = load_questions(recorded.questions_file, recorded.limit, recorded.seed)
    return _run(forecaster, items, errors, run, options)


def _run(forecaster, items, errors, run: RunDir, options: RunOptions) -> EvaluationResult:
    asks = [Ask(question_key(q), q) for q in items]
    written: dict[str, Any] = {}

    def finish(done: dict[str, dict[str, Any]]) -> dict[str, Any]:
        summary, failures = _write_results(run.path, asks, done, errors)
        written["failures"] = failures
        return {"summary": summary}

    meta = drive(forecaster, asks, run, options, finish)
    return EvaluationResult(run.path, None, written["failures"], meta, list(errors))


def _write_results(root: Path, asks: Sequence[Ask], done, errors: list[LineError]):
    rows, failures = [], []
    for a in asks:
        record = done.get(a.key)
        if record is None:
            continue
        if record.get("forecast") is None:
            failures.append({"question_id": a.question.id, "title": a.question.title, "error": record.get("error")})
            continue
        rows.append((a.question, record["forecast"]))
    resolved = [(q, f) for q, f in rows if q.resolution is not None and q.question_type in BINARY_TYPES]
    p = np.array([f["prob"] for _, f in resolved], dtype=float)
    y = np.array([float(q.resolution) for q, _ in resolved], dtype=float)
    b, ll = (brier(p, y), log_loss(p, y, base=2)) if len(p) else (np.array([]), np.array([]))
    lines = [
        {
            "question": q.model_dump(mode="json"),
            "forecast": f,
            "prob": f["prob"],
            "resolution": q.resolution,
            "brier_score": float(b[i]),
            "log_score": float(ll[i]),
        }
        for i, (q, f) in enumerate(resolved)
    ]
    write_jsonl(root / layout.GROUND_TRUTH, lines)
    typed = _typed_lines([(q, f) for q, f in rows if q.question_type not in BINARY_TYPES])
    if typed or (root / layout.GROUND_TRUTH_TYPED).exists():
        write_jsonl(root / layout.GROUND_TRUTH_TYPED, typed)
    summary = _summary(p, y, b, ll, total=len(asks), answered=len(rows), failures=failures, errors=errors)
    if typed:
        summary["scored"] += len(typed)
        summary["unresolved"] -= len(typed)
        summary["by_type"] = _by_type(typed)
    write_json(root / layout.GROUND_TRUTH_SUMMARY, summary)
    return summary, failures


def _typed_lines(rows: Sequence[tuple[ForecastingQuestion, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The resolved multiple-choice, numeric and date questions with their forecasts' proper scores."""
    lines = []
    for q, f in rows:
        losses = outcome_losses(q, parse_forecast(q, f))
        if losses is None:
            continue  # unresolved or annulled
        scores = {result_field(k): v / (math.log(2) if k == "log" else 1.0) for k, v in losses.items()}
        lines.append({"question": q.model_dump(mode="json"), "forecast": f, "resolution": q.resolution, **scores})
    return lines


def _by_type(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """Per question type: how many were scored and the mean (95% interval) of each of its scores."""
    out: dict[str, Any] = {}
    for kind, names in SCORES_BY_TYPE.items():
        mine = [line for line in lines if line["question"]["question_type"] == kind]
        if not mine:
            continue
        out[kind] = {"scored": len(mine)}
        for name in sorted(names, key=("brier", "log", "crps").index):  # the summary's order, as before
            key = result_field(name)
            out[kind][key] = _stat(np.array([line[key] for line in mine], dtype=float))
    return out


def _stat(values: np.ndarray) -> dict[str, Any]:
    if not len(values):
        return {"mean": None, "ci95": None}
    return {"mean": float(values.mean()), "ci95": list(bootstrap_mean_ci(values)) if len(values) > 1 else None}


def _summary(p, y, b, ll, *, total, answered, failures, errors) -> dict[str, Any]:
    n = len(p)
    stat = _stat
    out: dict[str, Any] = {
        "total_questions": total,
        "answered": answered,
        "failed": len(failures),
        "fraction_failed": len(failures) / total if total else None,
        "scored": n,
        "unresolved": answered - n,
        "brier_score": stat(b),
        "log_score_bits": stat(ll),
        "avg_brier_score": float(b.mean()) if n else None,
        "avg_log_score": float(ll.mean()) if n else None,
        "base_rate": float(y.mean()) if n else None,
        "always_base_rate_brier": float(y.mean() * (1 - y.mean())) if n else None,
        "failures": failures,
        "unreadable_lines": [str(e) for e in errors],
    }
    if n:
        murphy = murphy_decomposition(p, y, bins=10)
        out["calibration_error"] = float(expected_calibration_error(p, y, bins=10))
        out["brier_score_decomposition"] = {
            "reliability": murphy.reliability,
            "resolution": murphy.resolution,
            "uncertainty": murphy.uncertainty,
        }
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in out.items()}
