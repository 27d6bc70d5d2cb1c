"""Read every kind of result directory into one shape the report draws from.

A PATH is a ``cc evaluate`` run directory (tuple or ground-truth mode), a ``cc score`` output
directory, or the paper's published forecast or ground-truth directory. Our own directories already
hold scored lines and statistics (``summary.json``), which are read as written (no second bootstrap
over 100,000 tuples); forecast files that carry no statistics of ours (the paper's) are scored with
:func:`consistency.metrics.forecast_files.score_path`, exactly as ``cc score`` would. Only the worst ``top`` tuples
per check keep their questions; every tuple keeps its two violations, for the distributions.
"""

from __future__ import annotations

import heapq
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..accuracy import proper
from ..accuracy.pairing import Identity, forecaster_record, identity, identity_of, named
from ..accuracy.table import read_ground_truth
from ..checks import Check, all_checks, get_check
from ..errors import InputError
from ..jsonl import iter_json_lines, parse_json
from ..metrics import bootstrap_mean_ci
from ..metrics.forecast_files import ScoredFile, ScoreParams, forecast_files, is_checker_file, score_path
from ..models import ForecastEntry
from ..outcomes import column_labels, forecast_row
from ..store.layout import ATTACK_FILE, GROUND_TRUTH, GROUND_TRUTH_SUMMARY, RUN_FILE, SUMMARY
from ..store.meta import optional_run_meta, read_run_meta
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
    forecaster: dict[str, Any] | None = None  # as recorded: forecaster_class, full_forecaster_config
    accuracy: Accuracy | None = None
    failures: list[str] = field(default_factory=list)  # first LIST_LIMIT question failures, with reasons
    n_failures: int = 0
    unscorable: list[str] = field(default_factory=list)  # first LIST_LIMIT unscorable lines
    n_unscorable: int = 0
    attack: dict[str, Any] | None = None  # a ``cc attack`` directory's summary (its attack.json)

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
        if path.is_dir() and not _recognised(path):
            subdirs = sorted(d for d in path.iterdir() if d.is_dir() and _recognised(d))
            if subdirs and name is None:
                runs += [read_run(d, None, top) for d in subdirs]
                continue
        runs.append(read_run(path, name, top))
    return runs


def _recognised(path: Path) -> bool:
    known = (RUN_FILE, SUMMARY, GROUND_TRUTH, ATTACK_FILE)
    return any((path / f).is_file() for f in known) or any(is_checker_file(p) for p in path.glob("*.jsonl"))


def _split_name(raw: str) -> tuple[str | None, Path]:
    if "=" in raw and not Path(raw).exists():
        name, _, rest = raw.partition("=")
        return name, Path(rest)
    return None, Path(raw)


def read_run(path: Path, name: str | None = None, top: int = 5) -> Run:
    """Read one PATH, whatever it holds; raises :class:`ReportInputError` naming it when it holds nothing usable."""
    if not path.exists():
        raise ReportInputError(f"{path}: no such file or directory")
    if (path / ATTACK_FILE).is_file():
        return _attack_dir(path, name, top)
    if path.is_file():
        if path.name == GROUND_TRUTH:
            return _ground_truth_dir(path.parent, name, path)
        return _forecasts(path, name, top)
    if (path / RUN_FILE).exists():
        meta = read_run_meta(path).to_dict()  # checked: a damaged run.json is one sentence naming the field
        if meta.get("kind") == "ground_truth":
            return _ground_truth_dir(path, name, path / GROUND_TRUTH, meta)
        return _scored_dir(path, name, top, meta)
    if (path / GROUND_TRUTH).is_file():
        return _ground_truth_dir(path, name, path / GROUND_TRUTH)
    summary = path / SUMMARY
    if summary.is_file() and "checks" in _json(summary):
        return _scored_dir(path, name, top, None)
    if any(is_checker_file(p) for p in path.glob("*.jsonl")):
        return _forecasts(path, name, top)
    raise ReportInputError(
        f"{path}: not a run directory ({RUN_FILE}), a `cc score` output ({SUMMARY}), "
        f"nor a directory of <Checker>.jsonl forecasts or {GROUND_TRUTH}"
    )


def _json(path: Path) -> dict[str, Any]:
    try:
        data = parse_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReportInputError(f"{path}: cannot read it as JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ReportInputError(f"{path}: expected a JSON object")
    return data


# --------------------------------------------------------------------------- who made it


def _identity(forecaster: dict[str, Any] | None, fallback: str) -> tuple[str, str]:
    """(display name, models) of ``{forecaster_class, full_forecaster_config}``; which runs pair is
    decided by :mod:`consistency.accuracy.pairing`, as for ``cc correlate``."""
    if not forecaster:
        return fallback, "—"
    cls = str(forecaster.get("forecaster_class") or forecaster.get("name") or fallback)
    config = forecaster.get("full_forecaster_config") or {}
    models = [str(config[k]) for k in ("model", "extractor", "members") if config.get(k)]
    if models:
        label = f"{cls} ({', '.join(models)})"
    else:  # no model to tell forecasters of one class apart: their options do
        options = ", ".join(f"{k}={v}" for k, v in sorted(config.items()) if isinstance(v, (int, float, str)))
        label = f"{cls} ({options[:60]})" if options else cls
    return label, ", ".join(models) or "—"


def _run_info(meta: dict[str, Any], models: str) -> dict[str, str]:
    forecaster = meta.get("forecaster") or {}
    totals = meta.get("totals") or {}
    bench = meta.get("benchmark") or {}
    options = " ".join(f"-F {k}={v}" for k, v in (meta.get("forecaster_options") or {}).items())
    info = {
        "forecaster": f"{meta.get('forecaster_spec', '—')} {options}".strip(),
        "class and config": f"{forecaster.get('forecaster_class', '—')} "
        + json.dumps(forecaster.get("full_forecaster_config") or {}, sort_keys=True, default=str),
        "models": models,
    }
    if meta.get("kind") == "ground_truth":
        info["questions file"] = str(meta.get("questions_file", "—"))
    else:
        info["benchmark"] = f"{bench.get('tuples') or 'bundled benchmark'}; checks {', '.join(bench.get('checks', []))}"
        info["fingerprint"] = str(bench.get("fingerprint", "—"))
        info["limit, seed"] = f"{bench.get('limit')}, {bench.get('seed')}"
    info["date"] = f"{meta.get('started', '—')} → {meta.get('ended', '—')} ({meta.get('status', '?')})"
    info["questions"] = str(meta.get("questions", "—"))
    info["failed questions"] = str(meta.get("failed_questions", 0))
    info["calls"] = f"{totals.get('calls', 0)} ({totals.get('failures', 0)} failed, {totals.get('retries', 0)} retries)"
    info["cache hits"] = str(totals.get("cache_hits", 0))
    info["tokens"] = f"{totals.get('prompt_tokens', 0)} in + {totals.get('completion_tokens', 0)} out"
    cost = totals.get("cost")
    unpriced = totals.get("unpriced_calls") or 0
    info["cost"] = ("—" if cost is None else f"${cost:.4f}") + (f" ({unpriced} calls unpriced)" if unpriced else "")
    info["version"] = f"consistency {meta.get('consistency_version', '?')}" + (
        f", commit {str(meta['git_commit'])[:10]}" if meta.get("git_commit") else ""
    )
    return info


# --------------------------------------------------------------------------- consistency


def _scored_dir(path: Path, name: str | None, top: int, meta: dict[str, Any] | None) -> Run:
    """Our scored lines (a run directory or ``cc score`` output): statistics as recorded in summary.json."""
    summary_path = path / SUMMARY
    if not summary_path.is_file():  # a run interrupted before its first scoring: score what is there
        run = _forecasts(path, name, top)
        run.source = "cc evaluate run (not scored yet)"
        return run
    summary = _json(summary_path)
    if meta is not None:
        label, models = _identity(meta.get("forecaster"), path.name)
        info = _run_info(meta, models)
        source = "cc evaluate run (tuples)"
        if meta.get("kind") == "repair":  # named as recorded: the base forecaster's name + how it was repaired
            label, fix = str((meta.get("forecaster") or {}).get("name") or label), meta.get("repair") or {}
            source = f"cc repair ({fix.get('score')}, joint={fix.get('joint')}; 0 model calls) of {fix.get('source')}"
    else:  # a `cc score` output: the forecaster of the one run it scored, else its directory's name
        inputs = [Path(i) for i in summary.get("inputs") or []]
        scored = optional_run_meta(inputs[0]) if len(inputs) == 1 and inputs[0].is_dir() else None
        if scored is not None:
            label, _ = _identity(scored.to_dict().get("forecaster"), path.name)
        else:
            label = path.name
        info = {
            "inputs": ", ".join(summary.get("inputs", [])),
            "date": str(summary.get("created", "—")),
            "version": f"consistency {summary.get('consistency_version', '?')}",
        }
        source = "cc score output"
    params = summary.get("parameters") or {}
    info["parameters"] = ", ".join(f"{k}={v}" for k, v in params.items())
    who = named(name) if name else identity_of(path, summary.get("inputs") or [])
    run = Run(path, name or label, source, who, info)
    run.forecaster = (meta or {}).get("forecaster")
    for class_name, entry in summary.get("checks", {}).items():
        try:
            check = get_check(entry.get("check", class_name))
        except KeyError:
            raise ReportInputError(f"{summary_path}: unknown check {entry.get('check', class_name)!r}") from None
        file = path / f"{check.class_name}.jsonl"
        violations, worst = _read_scored_lines(file, check, top) if file.is_file() else (_empty(), [])
        run.checks.append(
            CheckResult(
                check,
                int(entry.get("lines", 0)),
                int(entry.get("scored", 0)),
                int(entry.get("unscorable", 0)),
                {m: entry[m] for m in METRICS},
                violations,
                worst,
            )
        )
    _order(run)
    errors = summary.get("errors", [])
    run.n_unscorable = len(errors)
    run.unscorable = [_error_text(e) for e in errors[:LIST_LIMIT]]
    failures = summary.get("failures", [])
    run.n_failures = len(failures)
    run.failures = [_failure_text(f) for f in failures[:LIST_LIMIT]]
    return run


def _empty() -> dict[str, np.ndarray]:
    return {m: np.zeros(0) for m in METRICS}


def _order(run: Run) -> None:
    order = {c.name: i for i, c in enumerate(all_checks())}
    run.checks.sort(key=lambda c: order.get(c.check.name, len(order)))


def _error_text(e: dict[str, Any]) -> str:
    where = f"{e.get('path')}:{e.get('line')}"
    return f"{where}: {e['field']}: {e.get('message')}" if e.get("field") else f"{where}: {e.get('message')}"


def _failure_text(f: dict[str, Any]) -> str:
    return f"{f.get('title') or f.get('question_id')}: {f.get('error')}"


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


def _read_scored_lines(file: Path, check: Check, top: int) -> tuple[dict[str, np.ndarray], list[WorstTuple]]:
    """Every tuple's violations, and the ``top`` largest arbitrage violations written out, in one pass."""
    arb: list[float] = []
    freq: list[float] = []
    heap: list[tuple[float, int, WorstTuple]] = []
    for number, obj in iter_json_lines(file):
        if not isinstance(obj, dict):
            continue
        data = obj.get("violation_data") or {}
        try:
            v = float(data["default"]["violation"])
            z = float(data["frequentist"]["violation"])
        except (KeyError, TypeError, ValueError):
            continue
        arb.append(v)
        freq.append(z)
        if top > 0 and v > 0 and (len(heap) < top or v > heap[0][0]):
            item = WorstTuple(
                number,
                v,
                z,
                bool(data["default"].get("check", True)),
                _rows(check, obj.get("line") or {}, data["default"].get("arbitrage_prices")),
                _picture(check, obj.get("line") or {}, data["default"].get("arbitrage_prices")),
            )
            entry = (v, -number, item)
            if len(heap) < top:
                heapq.heappush(heap, entry)
            else:
                heapq.heapreplace(heap, entry)
    worst = [item for _, _, item in sorted(heap, key=lambda e: (-e[0], -e[1]))]
    return {"default": np.array(arb), "frequentist": np.array(freq)}, worst


def _forecasts(path: Path, name: str | None, top: int) -> Run:
    """Forecast files without our statistics (the paper's): scored as ``cc score`` scores them."""
    directory = path if path.is_dir() else path.parent
    config = forecaster_record(directory)  # the paper's config.jsonl, or an unscored run's run.json
    label, models = _identity(config, directory.name if path.is_dir() else path.stem)
    info = {
        "forecaster": label,
        "class and config": json.dumps((config or {}).get("full_forecaster_config") or {}, default=str),
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


def _attack_dir(path: Path, name: str | None, top: int) -> Run:
    """A ``cc attack`` directory: its returned tuples (``forecasts/``) as a run, with the search's summary."""
    meta = _json(path / ATTACK_FILE)
    if "summary" not in meta or not (path / "forecasts").is_dir():
        raise ReportInputError(
            f"{path}: the attack has not finished (no summary yet): resume it with cc attack --resume"
        )
    run = _forecasts(path / "forecasts", name or path.name, top)
    run.path, run.source, run.attack = path, "cc attack (the most violated tuples found)", meta["summary"]
    run.info["forecaster"] = str((meta.get("forecaster") or {}).get("name") or run.info.get("forecaster"))
    return run


def _scored_file(scored: ScoredFile, top: int) -> CheckResult:
    scores = scored.scores
    values = scores.values("default")
    order = np.argsort(-values, kind="stable")[:top]
    order = [int(i) for i in order if values[i] > 0]
    wanted = {scored.line_numbers[i]: i for i in order}
    found: dict[int, WorstTuple] = {}
    for number, obj in _lines(scored.path, set(wanted)):
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


def _lines(path: Path, numbers: set[int]) -> Iterator[tuple[int, dict[str, Any]]]:
    if not numbers:
        return
    for number, obj in iter_json_lines(path):
        if number in numbers and isinstance(obj, dict):
            yield number, obj


# --------------------------------------------------------------------------- accuracy


def _ground_truth_dir(path: Path, name: str | None, results: Path, meta: dict[str, Any] | None = None) -> Run:
    """A ground-truth run (ours or the paper's): scores recomputed from the per-question results file."""
    summary_path = path / GROUND_TRUTH_SUMMARY
    summary = _json(summary_path) if summary_path.is_file() else {}
    if meta is not None:
        label, models = _identity(meta.get("forecaster"), path.name)
        info = _run_info(meta, models)
        source = "cc evaluate run (ground truth)"
    else:
        paper = {k: summary[k] for k in ("forecaster", "full_forecaster_config") if k in summary}
        if "forecaster" in paper:
            paper["forecaster_class"] = paper.pop("forecaster")
        label, models = _identity(paper or None, path.name)
        info = {
            "forecaster": label,
            "class and config": json.dumps(paper.get("full_forecaster_config") or {}, default=str),
            "models": models,
            "questions": str(summary.get("total_questions", "—")),
        }
        source = "published ground truth" if paper else "ground-truth results"
    run = Run(path, name or label, source, named(name) if name else identity_of(path), info)
    if not results.is_file():
        raise ReportInputError(f"{results}: missing; a ground-truth run writes it when it finishes scoring")
    rows = read_ground_truth(results, forecaster=run.name)
    resolved = [r for r in rows if r["resolution"] is not None]
    p = np.array([float(r["prob"]) for r in resolved])
    y = np.array([float(r["resolution"]) for r in resolved])
    if len(p):
        run.accuracy = accuracy(p, y, unresolved=len(rows) - len(resolved))
    failures = summary.get("failures", []) if meta is not None else []
    run.n_failures = len(failures)
    run.failures = [_failure_text(f) for f in failures[:LIST_LIMIT]]
    unreadable = summary.get("unreadable_lines", []) if meta is not None else []
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
