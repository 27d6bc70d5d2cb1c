"""``evaluate``: forecast every question of a benchmark once, score every tuple, write the run directory."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np
from pydantic import BaseModel, ValidationError

from ..checks import Check
from ..errors import InputError
from ..forecasters import Forecaster, Occurrence, load_forecaster
from ..forecasters.loading import load_recorded
from ..jsonl import LineError, atomic_write, dump_line
from ..llm.secrets import redact
from ..metrics.scoring import ScoreParams, score_forecasts
from ..models import ForecastEntry, ForecastingQuestion
from ..outcomes import TupleShapeError, forecast_row
from ..paths import new_run_dir
from ..store import layout
from ..store.meta import ForecasterRecord, RunMeta
from .asking import Ask, RunOptions, drive, occurrence_key, options_of, question_key
from .benchmark import TupleSet, fingerprint, load_benchmark
from .rundir import RunDir, RunDirError
from .scoring import ScoredFile, ScoreReport, write_stats

log = logging.getLogger(__name__)


@dataclass
class EvaluationResult:
    run_dir: Path
    report: ScoreReport | None  # None for ground-truth runs (their scores are in meta.summary)
    failures: list[dict[str, Any]]
    meta: RunMeta  # run.json as written at the end
    skipped: list[LineError] = field(default_factory=list)  # input lines that could not be used

    @property
    def record(self) -> RunMeta:
        """:attr:`meta` (the name the command line reads it by)."""
        return self.meta


def start_run(
    forecaster: Forecaster | str,
    forecaster_options: dict[str, str] | None,
    out: str | Path | None,
    name: str,
    options: RunOptions,
    meta: dict[str, Any],
) -> tuple[Forecaster, RunDir]:
    """Build the forecaster and create its run directory, recording how to rebuild both on resume (``meta``:
    the kind's own fields of :class:`~consistency.store.meta.RunMeta`)."""
    loaded = load_forecaster(forecaster, forecaster_options)
    check_keys(loaded.config())
    spec = forecaster if isinstance(forecaster, str) else _spec_of(loaded)
    run = RunDir(out or new_run_dir(f"{loaded.label}_{name}"))
    run.create(
        forecaster=loaded.describe(),
        forecaster_spec=redact(spec),
        forecaster_options={k: redact(str(v)) for k, v in (forecaster_options or {}).items()},
        **meta,
        llm=options.llm.model_dump(mode="json"),
    )
    return loaded, run


def with_cap(options: RunOptions, max_cost: float | None) -> RunOptions:
    """``options`` with the spending cap ``max_cost`` (when given), checked: a number of 0 or more, and not
    with batch mode, whose requests are all sent before the first answer is priced."""
    import dataclasses
    import math

    if max_cost is not None:
        options = dataclasses.replace(options, max_cost=max_cost)
    cap = options.max_cost
    if cap is None:
        return options
    if isinstance(cap, bool) or not isinstance(cap, int | float) or not math.isfinite(cap) or cap < 0:
        raise InputError(f"max_cost must be a number of USD, 0 or more, got {cap!r}")
    if options.llm.batch:
        raise InputError(
            "a spending cap cannot stop batched requests, which are all sent before the first answer is priced; "
            "estimate the cost first (cc evaluate --dry-run, consistency.evaluation.estimate) and drop --batch "
            "or --max-cost"
        )
    return options


def check_keys(config: Any) -> None:
    """Every hosted model a forecaster's configuration names (``model``, ``extractor``, nested forecasters'
    too) has its key, else :class:`FatalError` before any run directory exists: the first call would
    stop the run anyway, leaving a directory with nothing in it."""
    from ..llm.fatal import FatalError
    from ..llm.secrets import MissingKeyError, key_for
    from ..llm.specs import ModelSpecError, parse_model_spec

    if isinstance(config, dict):
        for key, value in config.items():
            if key in ("model", "extractor") and isinstance(value, str):
                try:
                    key_for(parse_model_spec(value))
                except ModelSpecError:
                    continue
                except MissingKeyError as exc:
                    raise FatalError(str(exc)) from None
            else:
                check_keys(value)
    elif isinstance(config, list | tuple):
        for value in config:
            check_keys(value)


def reopen_run(
    run_dir: str | Path, record: type[R], forecaster: Forecaster | None, options: RunOptions | None
) -> tuple[RunDir, R, Forecaster, RunOptions]:
    """The run directory, its recorded configuration (checked as ``record``: what a resume of its kind needs),
    and the forecaster and options to finish it with."""
    run = RunDir(run_dir)
    meta = run.meta()
    if meta.kind != record.kind:
        raise RunDirError(f"{run_dir}: not a {record.kind} run (kind {meta.kind!r})")
    recorded = _check_recorded(run, meta, record)
    if forecaster is None:  # CLI runs recorded their -F options; library runs their constructor's arguments
        if "[redacted]" in recorded.forecaster_spec:
            raise RunDirError(
                f"{run_dir}: the forecaster spec held a key, which is never stored ({recorded.forecaster_spec}); "
                "resume with the same spec again: --resume DIR -f SPEC"
            )
        config = meta.forecaster_options or recorded.forecaster.full_forecaster_config
        forecaster = load_recorded(recorded.forecaster_spec, config, recorded.forecaster.forecaster_class)
    options = options or options_of(meta)
    return run, recorded, forecaster, options


class Recorded(BaseModel):
    """What ``run.json`` must hold, of the right types, for a run to be resumed."""

    kind: ClassVar[str]
    forecaster_spec: str
    forecaster: ForecasterRecord


class RecordedBenchmark(BaseModel):
    tuples: str | None
    checks: list[str] | None
    limit: int | None
    seed: int
    fingerprint: str


class ConsistencyRecord(Recorded):
    """A consistency run's record, as a resume needs it."""

    kind: ClassVar[str] = "consistency"
    benchmark: RecordedBenchmark
    parameters: ScoreParams


class QuestionsRecord(Recorded):
    """A ground-truth run's record, as a resume needs it."""

    kind: ClassVar[str] = "ground_truth"
    questions_file: str
    limit: int | None
    seed: int


R = TypeVar("R", bound=Recorded)


def _check_recorded(run: RunDir, meta: RunMeta, record: type[R]) -> R:
    """One sentence for a ``run.json`` edited or damaged into values a resume cannot use (``"limit": "abc"``)."""
    try:
        return record.model_validate(meta.to_dict())
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        got = "" if first["type"] == "missing" else f" (got {first.get('input')!r})"
        raise RunDirError(
            f"{run.run_file}: {where}: {first['msg']}{got}; the run record is damaged and cannot be resumed"
        ) from None


def plan(sets: Sequence[TupleSet], per_occurrence: bool) -> tuple[list[Ask], list[list[list[str]]]]:
    """The distinct forecasts needed, in order of first appearance, and each tuple field's key."""
    asks: dict[str, Ask] = {}
    keys: list[list[list[str]]] = []
    for ts in sets:
        set_keys = []
        for i, fields in enumerate(ts.tuples):
            row = []
            for name in ts.check.field_names:
                q = fields[name]
                if per_occurrence:
                    occ = Occurrence(ts.check.class_name, name, ts.ids(i))
                    key = occurrence_key(occ)
                    asks.setdefault(key, Ask(key, q, occ))
                else:
                    key = question_key(q)
                    asks.setdefault(key, Ask(key, q))
                row.append(key)
            set_keys.append(row)
        keys.append(set_keys)
    return list(asks.values()), keys


def evaluate(
    forecaster: Forecaster | str,
    *,
    tuples: str | Path | None = None,
    checks: Sequence[str | Check] | None = None,
    limit: int | None = None,
    seed: int = 0,
    out: str | Path | None = None,
    forecaster_options: dict[str, str] | None = None,
    params: ScoreParams | None = None,
    options: RunOptions | None = None,
    max_cost: float | None = None,
) -> EvaluationResult:
    """Evaluate a forecaster on a consistency benchmark (default: the bundled one).

    ``max_cost`` (USD, or ``options.max_cost``): once the run's recorded spend reaches it, no new model call is
    made; the run ends ``interrupted`` (``meta.stopped`` says why) and :func:`resume` with a higher cap goes
    on. Calls in flight at that moment are answered and paid for (see :mod:`.spending`)."""
    sets = load_benchmark(tuples, checks, limit, seed)
    params = params or ScoreParams()
    options = with_cap(options or RunOptions(), max_cost)
    loaded, run = start_run(
        forecaster,
        forecaster_options,
        out,
        Path(tuples).name if tuples else "bundled",
        options,
        {
            "kind": "consistency",
            "benchmark": {
                "tuples": str(tuples) if tuples else None,
                "checks": [ts.check.name for ts in sets],
                "limit": limit,
                "seed": seed,
                "fingerprint": fingerprint(sets),
                "tuples_per_check": {ts.check.class_name: len(ts.tuples) for ts in sets},
            },
            "parameters": params.model_dump(),
        },
    )
    return _run(loaded, sets, run, params, options)


def resume(
    run_dir: str | Path,
    *,
    forecaster: Forecaster | None = None,
    options: RunOptions | None = None,
    max_cost: float | None = None,
) -> EvaluationResult:
    """Finish an interrupted run: forecasts already journaled are not asked again. The run's recorded spending
    cap holds unless ``max_cost`` (or ``options``) gives another."""
    run, recorded, forecaster, options = reopen_run(run_dir, ConsistencyRecord, forecaster, options)
    options = with_cap(options, max_cost)
    bench = recorded.benchmark
    sets = load_benchmark(bench.tuples, bench.checks, bench.limit, bench.seed)
    if fingerprint(sets) != bench.fingerprint:
        where = bench.tuples or "the bundled benchmark"
        raise RunDirError(f"{run_dir}: the tuples at {where} changed since the run began")
    return _run(forecaster, sets, run, recorded.parameters, options)


def _run(
    forecaster: Forecaster, sets: list[TupleSet], run: RunDir, params: ScoreParams, options: RunOptions
) -> EvaluationResult:
    asks, keys = plan(sets, forecaster.context_dependent)
    meta = run.meta()
    written: dict[str, Any] = {}

    def finish(done: dict[str, dict[str, Any]]) -> dict[str, Any]:
        files = [_score_set(run.path, ts, set_keys, done, params) for ts, set_keys in zip(sets, keys, strict=True)]
        report = ScoreReport(files, params, [(meta.benchmark and meta.benchmark.tuples) or "bundled benchmark"])
        failures = [
            {"key": a.key, "question_id": a.question.id, "title": a.question.title, "error": done[a.key]["error"]}
            for a in asks
            if a.key in done and done[a.key].get("forecast") is None
        ]
        unasked = sum(a.key not in done for a in asks)
        summary = report.summary(timestamp=False) | {
            "forecaster": meta.forecaster.model_dump(exclude_unset=True) if meta.forecaster else None,
            "questions": {"total": len(asks), "answered": len(asks) - len(failures) - unasked, "failed": len(failures)},
            "failures": failures,
        }
        write_stats(report, run.path, summary)
        written.update(report=report, failures=failures)
        return {"failed_questions": len(failures)}

    final = drive(forecaster, asks, run, options, finish)
    skipped = [e for ts in sets for e in ts.errors]
    return EvaluationResult(run.path, written["report"], written["failures"], final, skipped)


def _score_set(root: Path, ts: TupleSet, set_keys, done, params: ScoreParams) -> ScoredFile:
    rows, kept, errors = [], [], list(ts.errors)
    for i, row_keys in enumerate(set_keys):
        records = [done.get(k) for k in row_keys]
        missing = [
            (name, r) for name, r in zip(ts.check.field_names, records, strict=True) if not r or not r.get("forecast")
        ]
        if missing:
            for name, r in missing:
                reason = (r or {}).get("error") or "not forecast yet"
                errors.append(LineError(str(ts.path), ts.lines[i], name, f"no forecast: {reason}"))
            continue
        try:
            rows.append(_row(ts.check, ts.tuples[i], [r["forecast"] for r in records]))  # type: ignore[index]
        except (TupleShapeError, ValidationError) as exc:  # a forecast that does not fit its field: named, unscored
            errors.append(LineError(str(ts.path), ts.lines[i], "line", str(exc)))
            continue
        kept.append(i)
    probs = np.array(rows, dtype=float).reshape(len(rows), ts.check.n_columns)
    scores = score_forecasts(ts.check, probs, params=params)
    target = root / layout.forecast_file(ts.check)
    with atomic_write(target) as fh:
        for j, i in enumerate(kept):
            line = {
                name: {"question": ts.tuples[i][name].model_dump(mode="json"), "forecast": done[k]["forecast"]}
                for name, k in zip(ts.check.field_names, set_keys[i], strict=True)
            }
            fh.write(dump_line({"line": line, "violation_data": scores.violation_data(j)}))
    return ScoredFile(Path(target.name), ts.check, [ts.lines[i] for i in kept], errors, scores, len(ts.tuples))


def _row(check: Check, questions: dict[str, ForecastingQuestion], forecasts: list[dict[str, Any]]) -> list[float]:
    """One tuple's forecasts in the check's columns: the probabilities of a yes/no check; the option masses or
    bin masses of a check with multiple-choice or numeric fields (:func:`~consistency.outcomes.forecast_row`)."""
    if not check.categorical:
        return [f["prob"] for f in forecasts]
    entries = {
        name: ForecastEntry(question=questions[name], forecast=f)
        for name, f in zip(check.field_names, forecasts, strict=True)
    }
    return list(forecast_row(check, entries))


def _spec_of(forecaster: Forecaster) -> str:
    if isinstance(getattr(forecaster, "spec", None), str):  # e.g. a forecasting-tools bot: ft:module:Class
        return forecaster.spec  # type: ignore[attr-defined]
    cls = type(forecaster)
    return cls.name or f"{cls.__module__}:{cls.__qualname__}"
