"""Score forecast files and directories of them (``cc score``): read, validate, score, write.

Files are read twice, streaming: once to validate lines and collect probabilities, once to write each
scored line back with our ``violation_data``; input files are never modified. The math is
:func:`consistency.metrics.scoring.score_forecasts`; file names and layouts come from
:mod:`consistency.store.layout`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..checks import Check, all_checks
from ..errors import InputError, RunFailed
from ..files import FileKind, detect, validate_lines
from ..jsonl import LFS_MESSAGE, LineError, atomic_write, dump_line, iter_json_lines, write_json
from ..metrics import MetricStats
from ..metrics.scoring import METRICS, CheckScores, ScoreParams, score_forecasts
from ..models import ForecastLine
from ..outcomes import TupleShapeError, forecast_row
from ..store import layout
from ..store.meta import RunMetaError, optional_run_meta

log = logging.getLogger(__name__)


@dataclass
class ScoredFile:
    path: Path
    check: Check
    line_numbers: list[int]
    errors: list[LineError]
    scores: CheckScores
    n_lines: int = 0

    @property
    def n_bad_lines(self) -> int:
        return len({e.line for e in self.errors})

    @cached_property
    def _stats(self) -> dict[str, MetricStats]:
        return self.scores.stats(n_errors=self.n_bad_lines)

    def stats(self) -> dict[str, MetricStats]:
        """Per-metric statistics; computed once (each runs a bootstrap), then shared by every report."""
        return self._stats


@dataclass
class ScoreReport:
    files: list[ScoredFile]
    params: ScoreParams
    inputs: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[LineError]:
        return [e for f in self.files for e in f.errors]

    def aggregate(self) -> dict[str, dict[str, float | int | None]]:
        """Across checks: the mean of per-check means and fractions (each check weighs the same)."""
        out: dict[str, dict[str, float | int | None]] = {}
        for metric in METRICS:
            stats = [f.stats()[metric] for f in self.files]
            scored = [s for s in stats if s.num_samples]
            out[metric] = {
                "num_checks": len(scored),
                "num_samples": sum(s.num_samples for s in stats),
                "avg_violation": float(np.mean([s.avg_violation for s in scored])) if scored else None,
                "fraction_violated": float(np.mean([s.fraction_violated for s in scored])) if scored else None,
            }
        return out

    def table(self) -> tuple[str, tuple[str, ...], list[list[str]], list[str]]:
        """Title, columns, a row per check and the aggregate row: tuples, then the mean violation and the
        share violated under the arbitrage and the frequentist metric (``cc score``, ``cc evaluate``)."""

        def cells(name: str, stats: dict[str, Any]) -> list[str]:
            d, f = (s if isinstance(s, dict) else s.model_dump() for s in (stats["default"], stats["frequentist"]))
            return [name, str(d["num_samples"]), _fmt(d["avg_violation"]), _pct(d["fraction_violated"]),
                    _fmt(f["avg_violation"]), _pct(f["fraction_violated"])]  # fmt: skip

        columns = ("check", "n", "arbitrage avg", "arb. violated", "frequentist avg", "freq. violated")
        rows = [cells(f.check.name, f.stats()) for f in self.files]
        title = "Consistency violations (arbitrage in nats; frequentist in z-units)"
        return title, columns, rows, cells("aggregate", self.aggregate())

    def summary(self, *, timestamp: bool = True) -> dict[str, Any]:
        """Everything about the scores; ``timestamp=False`` for files that must be reproducible."""
        created = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z") if timestamp else None
        return {
            "consistency_version": __version__,
            **({"created": created} if created else {}),
            "inputs": self.inputs,
            "parameters": self.params.model_dump(),
            "checks": {
                f.check.class_name: {
                    "check": f.check.name,
                    "path": str(f.path),
                    "lines": f.n_lines,
                    "scored": len(f.line_numbers),
                    "unscorable": f.n_bad_lines,
                    **{m: s.model_dump() for m, s in f.stats().items()},
                }
                for f in self.files
            },
            "aggregate": self.aggregate(),
            "errors": [{"path": e.path, "line": e.line, "field": e.field, "message": e.message} for e in self.errors],
        }


class ScoringError(InputError):
    """Forecasts that cannot be scored as asked; one sentence naming the file."""


class NothingToScore(ScoringError, RunFailed):
    """A run directory whose forecast files are all empty (a run that stopped before any forecast)."""

    heading = "no line could be scored"  # how ``cc`` heads its sentence


@dataclass(frozen=True)
class RunSkipped:
    """A run directory :func:`score_runs` passed over, and why (not a failure: there was nothing in it)."""

    reason: str


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _empty(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return not fh.read(4096).strip()
    except OSError:
        return False


def _run_status(path: Path) -> str:
    """`` (run status failed: REASON)`` from a run directory's record, or nothing."""
    try:
        meta = optional_run_meta(path)
    except RunMetaError:
        return ""
    if meta is None:
        return ""
    failure = f": {meta.failure}" if meta.failure else ""
    return f" (run status {meta.status or '?'}{failure})"


def forecast_files(paths: Iterable[str | Path]) -> list[Path]:
    """Expand directories to their ``<Checker>.jsonl`` files (the paper's layout); empty ones are left out
    (a check none of whose tuples got forecasts), and a directory with nothing else is :class:`NothingToScore`."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = layout.forecast_files_in(path)
            if not found:
                raise ScoringError(
                    f"{path}: no <Checker>.jsonl forecast files (e.g. {layout.forecast_file('neg')}) in this directory"
                )
            kept = [p for p in found if not _empty(p)]
            if not kept:
                why = _run_status(path)
                raise NothingToScore(f"{path}: no forecasts to score, every <Checker>.jsonl is empty{why}")
            out.extend(kept)
        elif path.is_file():
            out.append(path)
        else:
            raise ScoringError(f"{path}: no such file or directory")
    return out


def run_directories(paths: Sequence[str | Path]) -> list[Path] | None:
    """The run directories to score one by one, or ``None`` when PATHS are one set of forecasts.

    Several directories of ``<Checker>.jsonl`` files are separate runs (one forecaster each), and a
    directory holding no such files but subdirectories that do (the paper's ``forecasts/``) stands for
    those subdirectories; a file among PATHS means everything is scored together, as before.
    """
    items = [Path(p) for p in paths]
    if any(not p.is_dir() for p in items):
        return None
    out: list[Path] = []
    expanded = False
    for path in items:
        if layout.forecast_files_in(path):
            out.append(path)
            continue
        subdirs = sorted(d for d in path.iterdir() if d.is_dir() and layout.forecast_files_in(d))
        if not subdirs:
            raise ScoringError(
                f"{path}: no <Checker>.jsonl forecast files (e.g. {layout.forecast_file('neg')}) here or one level down"
            )
        out += subdirs
        expanded = True
    return out if expanded or len(out) > 1 else None


def _score_run(run: Path, out_dir: Path, params: ScoreParams, check: str | None) -> dict[str, Any] | str | RunSkipped:
    try:
        report = score_path(run, params, check)
        write_report(report, out_dir / run.name)
    except NothingToScore as exc:
        return RunSkipped(str(exc))
    except (ScoringError, KeyError, OSError, ValueError) as exc:  # DetectionError is a ValueError
        if LFS_MESSAGE in str(exc):  # a clone without Git LFS: not damaged data, data that is not there yet
            return RunSkipped(str(exc))
        return str(exc)
    return report.summary()


@dataclass
class Corpus:
    """Several run directories scored one by one (``cc score`` on a corpus): what each gave, as it comes."""

    runs: Sequence[Path]
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)  # run name -> its summary
    failed: int = 0
    skipped: int = 0

    def score(self, out_dir: Path, params: ScoreParams, check: str | None = None) -> Iterator[str]:
        """Score every run into ``out_dir/<name>/`` on every core, saying each run skipped, failed or with bad lines."""
        import os

        names = [r.name for r in self.runs]
        if len(set(names)) != len(names):
            raise InputError("two run directories share a name; score them into different --out directories")
        for run, result in score_runs(self.runs, out_dir, params, check, jobs=min(os.cpu_count() or 1, len(names))):
            if isinstance(result, RunSkipped):
                self.skipped += 1
                yield f"skipped {result.reason}"
            elif isinstance(result, str):
                self.failed += 1
                yield f"error {result}"
            else:
                self.summaries[run.name] = result
                if result["errors"]:
                    yield f"{run.name}: {len(result['errors'])} line error(s) (listed in its {layout.SUMMARY})"

    @property
    def done(self) -> int:
        return len(self.runs) - self.failed - self.skipped

    def closing(self, out_dir: Path) -> str:
        extra = f", {self.skipped} skipped" if self.skipped else ""
        return f"results written to {out_dir}/<run>/ ({self.done} of {len(self.runs)} scored{extra})"


def score_runs(
    runs: Sequence[Path],
    out_dir: str | Path,
    params: ScoreParams | None = None,
    check: str | None = None,
    jobs: int = 1,
) -> Iterator[tuple[Path, dict[str, Any] | str | RunSkipped]]:
    """Score each run directory into ``out_dir/<name>/``, ``jobs`` at a time, yielding (run, summary, error
    or :class:`RunSkipped`).

    Runs are independent, so on several cores they are scored in worker processes; a failing run is
    reported and the others go on.
    """
    params = params or ScoreParams()
    out = Path(out_dir)
    if jobs <= 1 or len(runs) <= 1:
        for run in runs:
            yield run, _score_run(run, out, params, check)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        futures = [pool.submit(_score_run, run, out, params, check) for run in runs]
        for run, future in zip(runs, futures, strict=True):
            yield run, future.result()


def is_checker_file(path: Path) -> bool:
    """Whether ``path`` is named after a check (``<Checker>.jsonl``)."""
    return layout.check_of(path) is not None


def score_file(path: str | Path, params: ScoreParams | None = None, check: str | Check | None = None) -> ScoredFile:
    """Validate and score one forecasts file; bad lines are collected, never silently dropped."""
    params = params or ScoreParams()
    info = detect(path, check)
    if info.kind is not FileKind.FORECASTS or info.check is None:
        raise ScoringError(f"{path}: holds {info.kind}, not forecast lines; `cc score` needs forecasts")
    chk = info.check
    rows: list[list[float]] = []
    numbers: list[int] = []
    errors: list[LineError] = []
    n_lines = 0
    for number, item in validate_lines(info):
        n_lines += 1
        if isinstance(item, list):
            errors.extend(item)
            continue
        assert isinstance(item, ForecastLine)
        if chk.categorical:  # multiple-choice / numeric fields: their distributions as the check's columns
            try:
                rows.append(list(forecast_row(chk, item.line)))
            except TupleShapeError as exc:
                errors.append(LineError(str(path), number, "line", str(exc)))
                continue
        else:
            rows.append([item.line[name].forecast.prob for name in chk.field_names])
        numbers.append(number)
    probs = np.array(rows, dtype=float).reshape(len(rows), chk.n_columns)
    if errors:
        log.warning("%s: %d line(s) could not be scored", path, len({e.line for e in errors}))
    return ScoredFile(Path(path), chk, numbers, errors, score_forecasts(chk, probs, params=params), n_lines)


def score_path(
    paths: str | Path | Sequence[str | Path], params: ScoreParams | None = None, check: str | Check | None = None
) -> ScoreReport:
    """Score forecast files and directories of ``<Checker>.jsonl`` files."""
    params = params or ScoreParams()
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    files = forecast_files(items)
    seen: dict[str, Path] = {}
    scored = []
    for path in files:
        result = score_file(path, params, check)
        other = seen.get(result.check.class_name)
        if other is not None:
            raise ScoringError(f"{path} and {other} both hold {result.check.name} forecasts; score them separately")
        seen[result.check.class_name] = path
        scored.append(result)
    order = {c.name: i for i, c in enumerate(all_checks())}
    scored.sort(key=lambda f: order.get(f.check.name, len(order)))
    return ScoreReport(scored, params, [str(p) for p in items])


def write_report(report: ScoreReport, out_dir: str | Path) -> Path:
    """Write ``<Checker>.jsonl``, ``stats_<Checker>.json`` and ``summary.json`` into ``out_dir``."""
    from ..store.outputs import output_dir

    out = output_dir(out_dir)  # a link to a directory is followed; one leading nowhere is one sentence
    inputs = {p.resolve() for f in report.files for p in (f.path, f.path.parent)}
    if out.resolve() in inputs:
        raise ScoringError(f"{out} holds the input files; choose another --out so inputs are never modified")
    out.mkdir(parents=True, exist_ok=True)
    try:
        for scored in report.files:  # check by check, so a partial output holds whole checks
            _write_scored_lines(scored, out / layout.forecast_file(scored.check))
            _write_check_stats(report, scored, out)
        write_json(out / layout.SUMMARY, report.summary())
    except OSError as exc:  # a full disk, most likely: say what the partial output lacks
        missing = [
            f.check.class_name
            for f in report.files
            if not (out / layout.forecast_file(f.check)).exists() or not (out / layout.stats_file(f.check)).exists()
        ]
        raise ScoringError(
            f"cannot write {exc.filename or out}: {exc.strerror or exc}; {out} is incomplete: "
            f"{len(report.files) - len(missing)} of {len(report.files)} checks written, not written: "
            f"{', '.join(missing) or 'none'}, and no {layout.SUMMARY}"
        ) from exc
    return out


def write_stats(report: ScoreReport, out: Path, summary: dict[str, Any]) -> None:
    """``stats_<Checker>.json`` per check and ``summary.json``."""
    for scored in report.files:
        _write_check_stats(report, scored, out)
    write_json(out / layout.SUMMARY, summary)


def _write_check_stats(report: ScoreReport, scored: ScoredFile, out: Path) -> None:
    stats = {
        "overall": {m: s.model_dump() for m, s in scored.stats().items()},
        "parameters": report.params.model_dump(),
    }
    write_json(out / layout.stats_file(scored.check), stats)


def _write_scored_lines(scored: ScoredFile, target: Path) -> None:
    position = {number: i for i, number in enumerate(scored.line_numbers)}
    with atomic_write(target) as fh:
        for number, obj in iter_json_lines(scored.path):
            i = position.get(number)
            if i is None or not isinstance(obj, dict):
                continue
            obj["violation_data"] = scored.scores.violation_data(i)
            fh.write(dump_line(obj))
