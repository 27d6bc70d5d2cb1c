"""Read every kind of result directory into one shape the report draws from.

A PATH is a ``cc evaluate`` run directory (tuple or ground-truth mode), a ``cc score`` output
directory, or the paper's published forecast or ground-truth directory. Our own directories already
hold scored lines and statistics (``summary.json``), which are read as written (no second bootstrap
over 100,000 tuples); forecast files that carry no statistics of ours (the paper's) are scored with
:func:`consistency.evaluation.scoring.score_path`, exactly as ``cc score`` would. Only the worst ``top`` tuples
per check keep their questions; every tuple keeps its two violations, for the distributions.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..accuracy import proper
from ..accuracy.pairing import Identity, identity, identity_of, named
from ..accuracy.table import read_ground_truth
from ..accuracy.typed import TypedBoard, add_run, typed_boards
from ..checks import Check, all_checks, get_check
from ..errors import InputError
from ..evaluation.scoring import ScoredFile, ScoreParams, forecast_files, score_path
from ..metrics import bootstrap_mean_ci
from ..models import ForecastEntry
from ..outcomes import column_labels, forecast_row
from ..store import layout
from ..store.lines import lines_at
from ..store.meta import ForecasterRecord, RunMeta, optional_run_meta
from ..store.records import AttackSummary, QuestionFailure, RecordError
from ..store.runs import Run as StoredRun
from ..store.runs import RunError, RunKind, is_result
from ..store.runs import read_run as read_stored
from .distributions import TuplePicture, picture_of

log = logging.getLogger(__name__)

#: The two lenses on a tuple: arbitrage (guaranteed profit, nats) and frequentist (z-units).
METRICS = ("default", "frequentist")
#: Lists longer than this (failed questions, unscorable lines) are cut on the page, saying so.
LIST_LIMIT = 100
_COLUMN_ROWS = 12  # a categorical field with more forecast columns is one row of the worst-tuple table


class ReportInputError(InputError):
    """A PATH the report cannot read, named with the reason."""


@dataclass
class FieldRow:
    """One question of a tuple: what it says, what the forecaster said, what the arbitrageur would set."""

    field: str
    meaning: str
    title: str
    prob: float
    price: float | None


@dataclass
class WorstTuple:
    line: int
    profit: float  # guaranteed arbitrage profit, nats
    frequentist: float
    passed: bool
    rows: list[FieldRow]
    picture: TuplePicture | None = None  # a multiple-choice or numeric tuple's distribution and answers


@dataclass
class CheckResult:
    check: Check
    lines: int
    scored: int
    unscorable: int
    stats: dict[str, dict[str, Any]]  # metric -> MetricStats fields (avg_violation, ci95, fraction_violated...)
    violations: dict[str, np.ndarray]  # metric -> one value per scored tuple
    worst: list[WorstTuple]


@dataclass
class Accuracy:
    """Scores against resolutions (``consistency.accuracy.proper``), with bootstrap 95% intervals."""

    n: int
    brier: float
    brier_ci: tuple[float, float] | None
    log_bits: float
    log_ci: tuple[float, float] | None
    base_rate: float
    calibration: proper.CalibrationTable
    calibration_error: float
    murphy: proper.MurphyDecomposition
    unresolved: int


@dataclass
class Run:
    path: Path
    name: str
    source: str
    identity: Identity  # runs of one forecaster (by :mod:`consistency.accuracy.pairing`) are one comparison row
    info: dict[str, str]
    checks: list[CheckResult] = field(default_factory=list)
    forecaster: ForecasterRecord | None = None  # as recorded: forecaster_class, full_forecaster_config
    accuracy: Accuracy | None = None
    failures: list[str] = field(default_factory=list)  # first LIST_LIMIT question failures, with reasons
    n_failures: int = 0
    unscorable: list[str] = field(default_factory=list)  # first LIST_LIMIT unscorable lines
    n_unscorable: int = 0
    attack: AttackSummary | None = None  # a ``cc attack`` directory's summary (its attack.json)
    typed: list[TypedBoard] = field(default_factory=list)  # multiple-choice, numeric, date scores: one per type

    def line(self) -> str:
        """``NAME: SOURCE, PATH``, with its failed questions and unscorable lines when it has any."""
        problems = [f"{self.n_failures} failed question(s)"] if self.n_failures else []
        problems += [f"{self.n_unscorable} unscorable line(s)"] if self.n_unscorable else []
        return f"{self.name}: {self.source}, {self.path}" + (f" ({', '.join(problems)})" if problems else "")

    def aggregate(self, metric: str, key: str = "avg_violation") -> float | None:
        """Mean over checks of each check's mean violation (or ``fraction_violated``), as ``cc score``'s aggregate."""
        values = [c.stats[metric][key] for c in self.checks if c.stats[metric][key] is not None]
        return float(np.mean(values)) if values else None


def gather(paths: list[str], top: int = 5) -> list[Run]:
    """One :class:`Run` per PATH; ``NAME=PATH`` names the forecaster (and pairs runs that share a name).

    A directory holding none of the known layouts but subdirectories that do (``cc score`` over several
    runs, the paper's ``forecasts/``) stands for those subdirectories."""
    runs = []
    for raw in paths:
        name, path = _split_name(raw)
        if path.is_dir() and not is_result(path):
            subdirs = sorted(d for d in path.iterdir() if d.is_dir() and is_result(d))
            if subdirs and name is None:
                runs += [read_run(d, None, top) for d in subdirs]
                continue
        runs.append(read_run(path, name, top))
    return runs


def _split_name(raw: str) -> tuple[str | None, Path]:
    if "=" in raw and not Path(raw).exists():
        name, _, rest = raw.partition("=")
        return name, Path(rest)
    return None, Path(raw)


def read_run(path: Path, name: str | None = None, top: int = 5) -> Run:
    """Read one PATH, whatever it holds; raises :class:`ReportInputError` naming it when it holds nothing usable."""
    try:
        stored = read_stored(path)
    except (RunError, RecordError) as exc:
        raise ReportInputError(str(exc)) from None
    if stored.kind is RunKind.ATTACK:
        return _attack_dir(stored, name, top)
    if stored.kind is RunKind.GROUND_TRUTH:
        return _ground_truth_dir(stored, name)
    if stored.kind is RunKind.FORECASTS:
        return _forecasts(path, name, top, stored.forecaster)
    return _scored_dir(stored, name, top)


# --------------------------------------------------------------------------- who made it


def _identity(forecaster: ForecasterRecord | None, fallback: str) -> tuple[str, str]:
    """(display name, models) of a recorded forecaster; which runs pair is decided by
    :mod:`consistency.accuracy.pairing`, as for ``cc correlate``."""
    if forecaster is None:
        return fallback, "—"
    cls = str(forecaster.forecaster_class or forecaster.name or fallback)
    config = forecaster.full_forecaster_config or {}
    models = [str(config[k]) for k in ("model", "extractor", "members") if config.get(k)]
    if models:
        label = f"{cls} ({', '.join(models)})"
    else:  # no model to tell forecasters of one class apart: their options do
        options = ", ".join(f"{k}={v}" for k, v in sorted(config.items()) if isinstance(v, (int, float, str)))
        label = f"{cls} ({options[:60]})" if options else cls
    return label, ", ".join(models) or "—"


def _run_info(meta: RunMeta, models: str) -> dict[str, str]:
    forecaster = meta.forecaster
    totals = meta.totals
    bench = meta.benchmark
    options = " ".join(f"-F {k}={v}" for k, v in (meta.forecaster_options or {}).items())
    config = (forecaster.full_forecaster_config if forecaster else None) or {}
    info = {
        "forecaster": f"{meta.forecaster_spec or '—'} {options}".strip(),
        "class and config": f"{(forecaster.forecaster_class if forecaster else None) or '—'} "
        + json.dumps(config, sort_keys=True, default=str),
        "models": models,
    }
    if meta.kind == "ground_truth":
        info["questions file"] = str(meta.questions_file or "—")
    else:
        checks = ", ".join(bench.checks or []) if bench else ""
        info["benchmark"] = f"{(bench.tuples if bench else None) or 'bundled benchmark'}; checks {checks}"
        info["fingerprint"] = str(meta.fingerprint or "—")
        info["limit, seed"] = f"{bench.limit if bench else None}, {bench.seed if bench else None}"
    info["date"] = f"{meta.started or '—'} → {meta.ended or '—'} ({meta.status or '?'})"
    info["questions"] = str(meta.questions if meta.questions is not None else "—")
    info["failed questions"] = str(meta.failed_questions or 0)
    calls, failures, retries = (totals.calls, totals.failures, totals.retries) if totals else (None, None, None)
    info["calls"] = f"{calls or 0} ({failures or 0} failed, {retries or 0} retries)"
    info["cache hits"] = str((totals.cache_hits if totals else None) or 0)
    tokens_in, tokens_out = (totals.prompt_tokens, totals.completion_tokens) if totals else (None, None)
    info["tokens"] = f"{tokens_in or 0} in + {tokens_out or 0} out"
    cost = totals.cost if totals else None
    unpriced = (totals.unpriced_calls if totals else None) or 0
    info["cost"] = ("—" if cost is None else f"${cost:.4f}") + (f" ({unpriced} calls unpriced)" if unpriced else "")
    info["version"] = f"consistency {meta.consistency_version or '?'}" + (
        f", commit {str(meta.git_commit)[:10]}" if meta.git_commit else ""
    )
    return info


# --------------------------------------------------------------------------- consistency


def _scored_dir(stored: StoredRun, name: str | None, top: int) -> Run:
    """Our scored lines (a run directory or ``cc score`` output): statistics as recorded in summary.json."""
    path, meta, summary = stored.path, stored.meta, stored.summary
    if summary is None:  # a run interrupted before its first scoring: score what is there
        run = _forecasts(path, name, top, stored.forecaster)
        run.source = "cc evaluate run (not scored yet)"
        return run
    if meta is not None:
        label, models = _identity(meta.forecaster, path.name)
        info = _run_info(meta, models)
        source = "cc evaluate run (tuples)"
        if meta.kind == "repair":  # named as recorded: the base forecaster's name + how it was repaired
            label, fix = (meta.forecaster_name or label), meta.repair or {}
            source = f"cc repair ({fix.get('score')}, joint={fix.get('joint')}; 0 model calls) of {fix.get('source')}"
    else:  # a `cc score` output: the forecaster of the one run it scored, else its directory's name
        inputs = [Path(i) for i in summary.inputs]
        scored = optional_run_meta(inputs[0]) if len(inputs) == 1 and inputs[0].is_dir() else None
        label = _identity(scored.forecaster, path.name)[0] if scored is not None else path.name
        info = {
            "inputs": ", ".join(summary.inputs),
            "date": str(summary.created or "—"),
            "version": f"consistency {summary.consistency_version or '?'}",
        }
        source = "cc score output"
    info["parameters"] = ", ".join(f"{k}={v}" for k, v in summary.parameters.items())
    who = named(name) if name else identity_of(path, summary.inputs)
    run = Run(path, name or label, source, who, info)
    run.forecaster = meta.forecaster if meta is not None else None
    for class_name, entry in summary.checks.items():
        try:
            check = get_check(entry.check or class_name)
        except KeyError:
            raise ReportInputError(f"{path / layout.SUMMARY}: unknown check {entry.check or class_name!r}") from None
        file = stored.file(check)
        violations, worst = _read_scored_lines(stored, file, top) if file is not None else (_empty(), [])
        stats = {m: entry.stats(m) for m in METRICS}
        missing = [m for m, st in stats.items() if st is None]
        if missing:
            raise ReportInputError(f"{path / layout.SUMMARY}: {class_name}: no {missing[0]} statistics")
        run.checks.append(
            CheckResult(
                check,
                entry.lines,
                entry.scored,
                entry.unscorable,
                {m: st.model_dump() for m, st in stats.items() if st is not None},
                violations,
                worst,
            )
        )
    _order(run)
    run.n_unscorable = len(summary.errors)
    run.unscorable = [str(e) for e in summary.errors[:LIST_LIMIT]]
    run.n_failures = len(summary.failures)
    run.failures = [str(f) for f in summary.failures[:LIST_LIMIT]]
    return run


def _empty() -> dict[str, np.ndarray]:
    return {m: np.zeros(0) for m in METRICS}


def _order(run: Run) -> None:
    order = {c.name: i for i, c in enumerate(all_checks())}
    run.checks.sort(key=lambda c: order.get(c.check.name, len(order)))


def _rows(check: Check, line: dict[str, Any], prices: dict[str, float] | list[float] | None) -> list[FieldRow]:
    if check.categorical:
        try:
            return _column_rows(check, line, prices)
        except (KeyError, TypeError, ValueError):  # a line that does not parse: its fields as they are
            pass
    rows = []
    for i, name in enumerate(check.field_names):
        entry = line.get(name) or {}
        question = entry.get("question") or {}
        price = None
        if isinstance(prices, dict):
            price = prices.get(name)
        elif prices is not None:
            price = prices[i]
        rows.append(
            FieldRow(
                name,
                check.fields[name],
                str(question.get("title", "?")),
                float((entry.get("forecast") or {}).get("prob", np.nan)),
                None if price is None else float(price),
            )
        )
    return rows


def _column_rows(check: Check, line: dict[str, Any], prices: dict[str, float] | list[float] | None) -> list[FieldRow]:
    """A tuple with multiple-choice or numeric fields, one row per forecast column (a numeric grid's 202 bins
    summarised in one row: its picture shows them)."""
    named = dict(zip(check.columns, prices, strict=True)) if isinstance(prices, list) else dict(prices or {})
    entries = {f: ForecastEntry.model_validate(line[f]) for f in check.field_names}
    row = forecast_row(check, entries)
    questions = {f: e.question for f, e in entries.items()}
    out = []
    for f in check.field_names:
        where, title = check.column_slices[f], questions[f].title
        if f not in check.categorical:
            out.append(FieldRow(f, check.fields[f], title, float(row[where][0]), named.get(f)))
        elif check.categorical[f] > _COLUMN_ROWS:
            out.append(FieldRow(f, f"{check.categorical[f]} bins of a CDF (see the picture)", title, np.nan, None))
        else:
            labels = column_labels(check, f, questions)
            for c, label, value in zip(check.columns[where], labels, row[where], strict=True):
                out.append(FieldRow(c, f"X is {label}", title, float(value), named.get(c)))
    return out


def _picture(check: Check, line: dict[str, Any], prices: dict[str, float] | list[float] | None) -> TuplePicture | None:
    named = dict(zip(check.columns, prices, strict=True)) if isinstance(prices, list) else prices
    return picture_of(check, line, named)


def _read_scored_lines(stored: StoredRun, file, top: int) -> tuple[dict[str, np.ndarray], list[WorstTuple]]:
    """Every tuple's violations (lines scored on both lenses), and the ``top`` largest arbitrage violations
    written out with their questions."""
    columns = stored.tuples(file, metrics=METRICS)
    keep = columns.scored
    arb, freq = columns.violation["default"][keep], columns.violation["frequentist"][keep]
    passed, numbers = columns.passed["default"][keep], columns.line[keep]
    order = [int(i) for i in np.lexsort((numbers, -arb))[:top] if arb[i] > 0] if top > 0 else []
    lines = lines_at(file.path, {int(numbers[i]) for i in order})
    worst = []
    for i in order:
        obj = lines.get(int(numbers[i]), {})
        data = obj.get("violation_data") or {}
        prices = (data.get("default") or {}).get("arbitrage_prices")
        rows = _rows(file.check, obj.get("line") or {}, prices)
        picture = _picture(file.check, obj.get("line") or {}, prices)
        worst.append(WorstTuple(int(numbers[i]), float(arb[i]), float(freq[i]), bool(passed[i]), rows, picture))
    return {"default": arb, "frequentist": freq}, worst


def _forecasts(path: Path, name: str | None, top: int, config: ForecasterRecord | None) -> Run:
    """Forecast files without our statistics (the paper's): scored as ``cc score`` scores them."""
    directory = path if path.is_dir() else path.parent
    label, models = _identity(config, directory.name if path.is_dir() else path.stem)
    info = {
        "forecaster": label,
        "class and config": json.dumps((config.full_forecaster_config if config else None) or {}, default=str),
        "models": models,
        "files": ", ".join(p.name for p in forecast_files([path])),
        "scored by": "cc score's code (recomputed; the files' own violation_data is not used)",
    }
    report = score_path(path, ScoreParams())
    info["parameters"] = ", ".join(f"{k}={v}" for k, v in report.params.model_dump().items())
    source = "published forecasts" if config else "forecast files"
    who = identity_of(directory) if path.is_dir() else identity([path.stem], config)
    run = Run(path, name or label, source, named(name) if name else who, info)
    for scored in report.files:
        run.checks.append(_scored_file(scored, top))
    _order(run)
    errors = report.errors
    run.n_unscorable = len(errors)
    run.unscorable = [str(e) for e in errors[:LIST_LIMIT]]
    return run


def _attack_dir(stored: StoredRun, name: str | None, top: int) -> Run:
    """A ``cc attack`` directory: its returned tuples (``forecasts/``) as a run, with the search's summary."""
    path, attack = stored.path, stored.attack
    answers = path / layout.FORECASTS_DIR
    if attack is None or attack.summary is None or not answers.is_dir():
        raise ReportInputError(
            f"{path}: the attack has not finished (no summary yet): resume it with cc attack --resume"
        )
    run = _forecasts(answers, name or path.name, top, None)
    run.path, run.source, run.attack = path, "cc attack (the most violated tuples found)", attack.summary
    target = attack.forecaster.name if attack.forecaster else None
    run.info["forecaster"] = str(target or run.info.get("forecaster"))
    return run


def _scored_file(scored: ScoredFile, top: int) -> CheckResult:
    scores = scored.scores
    values = scores.values("default")
    order = np.argsort(-values, kind="stable")[:top]
    order = [int(i) for i in order if values[i] > 0]
    wanted = {scored.line_numbers[i]: i for i in order}
    found: dict[int, WorstTuple] = {}
    for number, obj in lines_at(scored.path, set(wanted)).items():
        i = wanted[number]
        prices = scores.arbitrage.prices[i].tolist()
        rows = _rows(scored.check, obj.get("line") or {}, prices)
        if not scored.check.categorical:
            for row, p in zip(rows, scores.probs[i], strict=True):
                row.prob = float(p)
        threshold = scores.params.threshold("default")
        found[number] = WorstTuple(
            number,
            float(values[i]),
            float(scores.frequentist[i]),
            not values[i] > threshold,
            rows,
            _picture(scored.check, obj.get("line") or {}, prices),
        )
    stats = scored.stats()
    return CheckResult(
        scored.check,
        scored.n_lines,
        len(scored.line_numbers),
        scored.n_bad_lines,
        {m: stats[m].model_dump() for m in METRICS},
        {m: np.asarray(scores.values(m)) for m in METRICS},
        [found[scored.line_numbers[i]] for i in order if scored.line_numbers[i] in found],
    )


# --------------------------------------------------------------------------- accuracy


def _ground_truth_dir(stored: StoredRun, name: str | None) -> Run:
    """A ground-truth run (ours or the paper's): scores recomputed from the per-question results file."""
    path, meta = stored.directory, stored.meta
    summary = stored.truth_summary
    if meta is not None:
        label, models = _identity(meta.forecaster, path.name)
        info = _run_info(meta, models)
        source = "cc evaluate run (ground truth)"
    else:
        paper = summary.recorded_forecaster() if summary is not None else None
        label, models = _identity(paper, path.name)
        info = {
            "forecaster": label,
            "class and config": json.dumps((paper.full_forecaster_config if paper else None) or {}, default=str),
            "models": models,
            "questions": str(summary.total_questions if summary and summary.total_questions is not None else "—"),
        }
        source = "published ground truth" if paper else "ground-truth results"
    run = Run(path, name or label, source, named(name) if name else identity_of(path), info)
    results = stored.ground_truth_file
    if results is None or not results.is_file():
        raise ReportInputError(f"{results}: missing; a ground-truth run writes it when it finishes scoring")
    rows = read_ground_truth(results, forecaster=run.name)
    resolved = [r for r in rows if r["resolution"] is not None]
    p = np.array([float(r["prob"]) for r in resolved])
    y = np.array([float(r["resolution"]) for r in resolved])
    if len(p):
        run.accuracy = accuracy(p, y, unresolved=len(rows) - len(resolved))
    run.typed = typed_boards(add_run({}, stored, run.name))
    failures: list[QuestionFailure] = summary.failures if meta is not None and summary is not None else []
    run.n_failures = len(failures)
    run.failures = [str(f) for f in failures[:LIST_LIMIT]]
    unreadable = summary.unreadable_lines if meta is not None and summary is not None else []
    run.n_unscorable = len(unreadable)
    run.unscorable = [str(u) for u in unreadable[:LIST_LIMIT]]
    return run


def accuracy(p: np.ndarray, y: np.ndarray, *, unresolved: int = 0, bins: int = 10) -> Accuracy:
    """Brier and log score (bits, as the paper stores them) with intervals; calibration; exact Murphy terms."""
    brier = proper.brier(p, y)
    log_bits = proper.log_loss(p, y, base=2)

    def ci(values: np.ndarray) -> tuple[float, float] | None:
        return bootstrap_mean_ci(values) if len(values) > 1 else None

    return Accuracy(
        n=len(p),
        brier=float(brier.mean()),
        brier_ci=ci(brier),
        log_bits=float(log_bits.mean()),
        log_ci=ci(log_bits),
        base_rate=float(y.mean()),
        calibration=proper.calibration_table(p, y, bins),
        calibration_error=proper.expected_calibration_error(p, y, bins),
        murphy=proper.murphy_decomposition(p, y, bins=None),
        unresolved=unresolved,
    )
