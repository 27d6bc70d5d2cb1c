"""Repair a run or forecast directory and write the repaired one, which every command reads as a run.

No model is called: the forecasts on file are projected onto the coherent set (:mod:`consistency.repair`),
jointly over every tuple that shares a question (one repaired value per question) or tuple by tuple.
The repaired directory holds the same ``<Checker>.jsonl`` files with each probability replaced (its
metadata keeps the original), scored as ``cc score`` scores them, a ``run.json`` of kind ``repair`` that
names the source and 0 model calls, and the repair report (``repair.json``).
"""

from __future__ import annotations

import glob
import logging
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..checks.check import Check
from ..evaluation.scoring import ScoredFile, ScoreReport, write_stats
from ..jsonl import atomic_write, dump_line, iter_json_lines, write_json
from ..locking import try_lock
from ..metrics.scoring import ScoreParams, score_forecasts
from ..models import ForecastEntry
from ..outcomes import forecast_with_columns
from ..store.layout import LOCK_FILE, REPAIR_REPORT, RUN_FILE, forecast_file, partial_name, partial_pattern
from ..store.meta import RunMetaError, optional_run_meta
from ..store.outputs import output_dir
from . import Score, repair_graph, repair_tuples
from .categorical import MAX_HULL_WORLDS
from .common import SCORES
from .conflicts import ConflictingTuples, summary
from .options import RepairOptions
from .report_model import CheckRepair, ConflictTuple, RepairReport, RepairTotal, Sums, contradictory, mean_violation
from .sources import CheckTuples, ForecastGraph, RepairInputError, read_graph

log = logging.getLogger(__name__)

REPORT_FILE = REPAIR_REPORT


class ConflictingForecasts(ConflictingTuples):
    """A joint repair refused: these tuples of the directory contradict each other (``described``: where
    they are and what they ask). Nothing is written; ``skip_conflicts`` repairs the others."""

    def __init__(self, found: ConflictingTuples, described: list[ConflictTuple]) -> None:
        super().__init__(found.tuples, found.status, found.certain, found.kind)
        self.described = described
        self.args = (
            f"{summary(len(described), found.kind, found.certain)}, so there is no joint repair to write: "
            + "; ".join(t.describe() for t in described),
        )


@dataclass
class Repaired:
    """A repair in memory: the repaired forecasts of each check (rows as in the graph) and the report."""

    graph: ForecastGraph
    probs: list[np.ndarray]
    report: RepairReport


def default_out(source: str | Path, score: str, joint: bool) -> Path:
    source = Path(source)
    return source.parent / f"{source.name.rstrip('/')}-repaired-{score}-{'joint' if joint else 'per-tuple'}"


def repair_run(path: str | Path, *args: Any, options: RepairOptions | None = None, **settings: Any) -> RepairReport:
    """Repair the forecasts of ``path`` (a run directory or a directory of ``<Checker>.jsonl`` forecasts) and
    write the repaired directory to ``out`` (default: next to ``path``, ``<name>-repaired-<score>-<joint|per-tuple>``).

    How: ``options``, or its fields (``score``, ``joint``, ``out`` in that order, the others by name).
    ``out`` is refused when it exists, unless ``force`` and it holds an earlier repair (never anything else),
    and when it is, holds or lies inside an input (symbolic links resolved): inputs are never modified.
    A joint repair of tuples that contradict each other raises :class:`ConflictingForecasts` and writes
    nothing, unless ``skip_conflicts``: then the conflicting tuples are left out (listed in the report).
    """
    o = options if options is not None else RepairOptions(*args, **settings)
    score, joint, resolutions = o.score, bool(o.joint), o.resolutions
    source = Path(path)
    target = output_dir(Path(o.out) if o.out is not None else default_out(source, score, joint))
    _check_target([source, *([Path(resolutions)] if resolutions is not None else [])], target, o.force)
    repaired = repair_forecasts(source, score, joint, resolutions=resolutions, skip_conflicts=o.skip_conflicts)  # type: ignore[arg-type]
    repaired.report.out = str(target)
    write_repaired(repaired, target)
    return repaired.report


@dataclass
class _Solved:
    """The repair's numbers before the report: per check its tuples' repair (None: no rows), the repaired value of
    every question, the totals, and what the joint repair's solver said."""

    per_check: list
    after_q: np.ndarray
    moved: float
    guaranteed: float
    status: str | None = None
    iterations: int | None = None
    worlds: str | None = None
    left_out: list[ConflictTuple] = field(default_factory=list)


def repair_forecasts(
    path: str | Path | ForecastGraph,
    score: Score = "brier",
    joint: bool = True,
    *,
    resolutions=None,
    skip_conflicts: bool = False,
) -> Repaired:
    """The repair in memory (nothing written): what ``cc report --repair`` shows."""
    if score not in SCORES:
        raise RepairInputError(f"unknown score {score!r}; choose brier or log")
    graph = path if isinstance(path, ForecastGraph) else read_graph(path, resolutions)
    begun = time.perf_counter()
    start = graph.start()
    solved = _repair_joint(graph, start, score, skip_conflicts) if joint else _repair_each(graph, score)
    seconds = time.perf_counter() - begun
    outcome = graph.outcome()
    probs, rows, forecast_sums, excluded = _check_rows(graph, solved.per_check, outcome)
    question_sums = _question_sums(graph, start, solved.after_q, outcome, excluded)
    scored = [r for r in rows if r.violation_before is not None]
    report = RepairReport(
        source=str(graph.source),
        score=score,
        joint=joint,
        questions=graph.n_questions,
        disagreeing_questions=graph.n_disagreeing(),
        conflicting_resolutions=graph.conflicting,
        resolved_questions=int((~np.isnan(outcome)).sum()),
        checks=rows,
        total=RepairTotal(
            tuples=sum(r.tuples for r in rows),
            moved=solved.moved,
            guaranteed=solved.guaranteed,
            violation_before=float(np.mean([r.violation_before for r in scored])) if scored else None,
            violation_after=float(np.mean([r.violation_after for r in scored])) if scored else None,
            realized=forecast_sums.result("forecast"),
            realized_questions=question_sums.result("question"),
        ),
        solver_status=solved.status,
        iterations=solved.iterations,
        seconds=seconds,
        errors=[str(e) for e in graph.errors],
        left_out=solved.left_out,
        joint_worlds=solved.worlds,
    )
    return Repaired(graph, probs, report)


def _repair_joint(graph: ForecastGraph, start: np.ndarray, score: Score, skip_conflicts: bool) -> _Solved:
    """One value per question over every tuple (:func:`.graph.repair_graph`); checks whose tuples are each a
    component of their own (:func:`_alone`) are repaired tuple by tuple, which is their joint repair."""
    used = [c for c in graph.checks if c.rows]
    categorical = sorted({c.check.name for c in used if c.check.categorical})
    if score == "log" and categorical:
        raise RepairInputError(
            f"a joint log repair covers yes/no checks, and these have multiple-choice or numeric fields: "
            f"{', '.join(categorical)}; repair with the log score tuple by tuple (--per-tuple), or jointly with "
            "the Brier score"
        )
    alone = _alone(used, graph.n_questions)
    joined = [c for c in used if not any(c is a for a in alone)]
    try:
        result = repair_graph([(c.check, c.idx) for c in joined], start, score, skip_conflicts=skip_conflicts)
    except ConflictingTuples as exc:
        raise ConflictingForecasts(exc, _describe(graph, joined, exc.tuples)) from None
    left_out: list[ConflictTuple] = []
    for number, conflict in enumerate(result.conflicts):
        left_out += _describe(graph, joined, conflict.tuples, number)
    blocks = dict(zip([id(c) for c in joined], result.per_block, strict=True))
    after_q = result.repaired.copy()
    moved, guaranteed = float(result.moved), float(result.guaranteed)
    for c in alone:
        own = blocks[id(c)] = repair_tuples(c.check, c.probs, score)
        after_q[c.idx.ravel()] = own.repaired.ravel()
        moved += float(own.moved.sum())
        guaranteed += float(own.guaranteed.sum())
    per_check = [(blocks[id(c)] if c.rows else None) for c in graph.checks]
    return _Solved(per_check, after_q, moved, guaranteed, result.status, result.iterations, result.worlds, left_out)


def _repair_each(graph: ForecastGraph, score: Score) -> _Solved:
    """Each tuple on its own; a question's repaired value is its mean over the tuples it is in."""
    per_check = [repair_tuples(c.check, c.probs, score) if c.rows else None for c in graph.checks]
    done = [r for r in per_check if r is not None]
    moved = float(sum(float(r.moved.sum()) for r in done))
    guaranteed = float(sum(float(r.guaranteed.sum()) for r in done))
    return _Solved(per_check, _question_means(graph, per_check), moved, guaranteed)


def _check_rows(
    graph: ForecastGraph, per_check: list, outcome: np.ndarray
) -> tuple[list[np.ndarray], list[CheckRepair], Sums, np.ndarray]:
    """Per check its repaired forecasts and report row; the realised scores over every tuple; and the questions
    in a tuple whose resolutions no world allows (left out of the realised scores)."""
    probs, rows, forecast_sums = [], [], Sums()
    excluded = np.zeros(graph.n_questions, dtype=bool)
    for c, r in zip(graph.checks, per_check, strict=True):
        after = r.repaired if r is not None else c.probs
        probs.append(np.asarray(after, dtype=float))
        sums = Sums()
        out_c = outcome[c.idx]
        bad = contradictory(c.check, out_c)
        excluded[c.idx[bad].ravel()] = True
        sums.add(c.probs[~bad], after[~bad], out_c[~bad])
        forecast_sums.add(c.probs[~bad], after[~bad], out_c[~bad])
        rows.append(
            CheckRepair(
                check=c.check.name,
                class_name=c.check.class_name,
                tuples=len(c.rows),
                unreadable_lines=len({e.line for e in c.errors}),
                moved=float(r.moved.sum()) if r is not None else 0.0,
                guaranteed=float(r.guaranteed.sum()) if r is not None else 0.0,
                guaranteed_min=float(r.guaranteed.min()) if r is not None and len(r.guaranteed) else None,
                violation_before=mean_violation(c.check, c.probs),
                violation_after=mean_violation(c.check, after),
                realized=sums.result("forecast"),
                contradictory_resolutions=int(bad.sum()),
            )
        )
    return probs, rows, forecast_sums, excluded


def _question_sums(
    graph: ForecastGraph, start: np.ndarray, after_q: np.ndarray, outcome: np.ndarray, excluded: np.ndarray
) -> Sums:
    """The realised scores over the questions (each once), before and after."""
    in_tuples = np.zeros(graph.n_questions, dtype=bool)
    for c in graph.checks:
        if c.rows:
            in_tuples[c.idx.ravel()] = True
    keep = in_tuples & ~excluded
    sums = Sums()
    sums.add(start[keep], after_q[keep], outcome[keep])
    return sums


def _alone(used: list[CheckTuples], n_questions: int) -> list[CheckTuples]:
    """The checks whose worlds are too many for the joint projection (a numeric grid): allowed in a joint repair
    when none of their tuples shares a value with another tuple, so that each is a component of its own."""
    large = [c for c in used if c.check.categorical and len(c.check.worlds) > MAX_HULL_WORLDS]
    if not large:
        return []
    counts = np.bincount(np.concatenate([c.idx.ravel() for c in used]), minlength=n_questions)
    shared = sorted({c.check.name for c in large if (counts[c.idx] > 1).any()})
    if shared:
        raise RepairInputError(
            f"a joint repair projects onto hulls of at most {MAX_HULL_WORLDS} worlds, and tuples of "
            f"{', '.join(shared)} (a numeric question's grid, more worlds) share a question with other tuples; "
            "repair tuple by tuple (--per-tuple), or leave their file out"
        )
    return large


def _describe(
    graph: ForecastGraph, used: list[CheckTuples], tuples: list[tuple[int, int]], conflict: int = 0
) -> list[ConflictTuple]:
    """The (block, row) pairs of a conflict as file lines and question titles."""
    out = []
    for b, r in tuples:
        c = used[b]
        questions = {name: graph.titles[q] for name, q in zip(c.check.columns, c.rows[r], strict=True)}
        out.append(
            ConflictTuple(check=c.check.name, file=str(c.path), line=c.lines[r], questions=questions, conflict=conflict)
        )
    return out


def _question_means(graph: ForecastGraph, per_check) -> np.ndarray:
    """Per question, the mean of its repaired values over the tuples it is in (per-tuple repair)."""
    total = np.zeros(graph.n_questions)
    count = np.zeros(graph.n_questions)
    for c, r in zip(graph.checks, per_check, strict=True):
        if r is not None:
            np.add.at(total, c.idx.ravel(), np.asarray(r.repaired).ravel())
            np.add.at(count, c.idx.ravel(), 1)
    return np.where(count > 0, total / np.maximum(count, 1), graph.start())


# --------------------------------------------------------------------------- writing


def _is_repair(path: Path) -> bool:
    try:
        meta = optional_run_meta(path)
    except RunMetaError:
        return False  # a damaged record is nothing --force may replace
    return meta is not None and meta.kind == "repair"


def _check_target(inputs: list[Path], target: Path, force: bool) -> None:
    """Refuse an output that would modify an input (the repair replaces its whole output directory), or that
    exists and is not an earlier repair to replace with ``force``."""
    where = target.resolve()
    for given in inputs:
        real = given.resolve()
        if real == where:
            raise RepairInputError(f"{target} is the input {given}; choose another --out (inputs are never modified)")
        if real.is_relative_to(where):
            raise RepairInputError(
                f"{target} contains the input {given}, and a repair replaces its whole --out: "
                "choose an --out outside every input (inputs are never modified)"
            )
        if where.is_relative_to(real):
            raise RepairInputError(f"{target} lies inside the input {given}; choose an --out outside every input")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        if not force:
            raise RepairInputError(f"{target} exists; choose another --out, or --force to replace an earlier repair")
        if not _is_repair(target):
            raise RepairInputError(f"{target} exists and is not a repair directory; --force replaces only repairs")


def write_repaired(repaired: Repaired, target: Path) -> Path:
    """Write the repaired directory into a hidden sibling owned by this process, then move it into place:
    never half written. An error, Ctrl-C or SIGTERM removes the sibling; one left by a killed process
    (``kill -9``) is removed by the next repair into the same place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_partials(target)
    partial = target.with_name(partial_name(target.name, os.getpid()))
    if partial.exists():  # this very process's own, from an earlier call that failed to remove it
        shutil.rmtree(partial)
    partial.mkdir()
    lock = (partial / LOCK_FILE).open("a+", encoding="utf-8")
    try_lock(lock)  # held until the end: another repair sees this sibling as in use, not stale
    try:
        _write_into(repaired, partial)
        if target.exists():
            shutil.rmtree(target)  # an earlier repair (checked before any work)
        os.replace(partial, target)
        (target / LOCK_FILE).unlink(missing_ok=True)
    except BaseException:  # an error, Ctrl-C or SIGTERM: no half-written sibling left behind
        shutil.rmtree(partial, ignore_errors=True)
        raise
    finally:
        lock.close()
    log.info("repaired %s into %s (%s)", repaired.graph.source, target, repaired.report.method)
    return target


def remove_stale_partials(target: Path) -> list[Path]:
    """Remove the hidden siblings of ``target`` left by repairs that were killed (their process is gone and
    holds no lock on them); returns them. One another repair is writing right now is left alone."""
    removed = []
    pattern = partial_pattern(glob.escape(target.name))
    for old in sorted(target.parent.glob(pattern)):
        pid_text = old.name[len(target.name) + 2 :].removesuffix("partial").strip(".")
        if not old.is_dir() or old.is_symlink() or not (pid_text == "" or pid_text.isdigit()):
            continue
        if pid_text and _alive(int(pid_text)):
            continue
        with (old / LOCK_FILE).open("a+", encoding="utf-8") as fh:
            if not try_lock(fh):
                continue
            shutil.rmtree(old, ignore_errors=True)
        removed.append(old)
        log.warning("removed %s: an unfinished copy of %s left by a repair that was killed", old, target)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # our own leftover
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _write_into(repaired: Repaired, partial: Path) -> None:
    graph, report = repaired.graph, repaired.report
    params = graph.meta.part("parameters", ScoreParams)
    files = []
    method = {"score": report.score, "joint": report.joint, "model_calls": 0}
    for c, probs in zip(graph.checks, repaired.probs, strict=True):
        if not c.rows:
            continue
        scores = score_forecasts(c.check, probs, params=params)
        position = {number: i for i, number in enumerate(c.lines)}
        name = forecast_file(c.check)
        with atomic_write(partial / name) as fh:
            for number, obj in iter_json_lines(c.path):
                i = position.get(number)
                if i is None or not isinstance(obj, dict):
                    continue
                if c.check.categorical:
                    _write_distributions(c.check, obj, probs[i], {**method, "source": f"{c.path}:{number}"})
                for j, field in enumerate(() if c.check.categorical else c.check.field_names):
                    forecast = obj["line"][field]["forecast"]
                    given = forecast.get("metadata")
                    forecast["prob"] = float(probs[i, j])
                    repair = {"original_prob": c.given[i][j], **method, "source": f"{c.path}:{number}"}
                    forecast["metadata"] = {"repair": repair, "original_metadata": given}
                obj["violation_data"] = scores.violation_data(i)
                fh.write(dump_line(obj))
        files.append(ScoredFile(Path(name), c.check, list(range(1, len(c.lines) + 1)), [], scores, len(c.lines)))
    scored = ScoreReport(files, params, [str(graph.source)])
    forecaster = _repaired_forecaster(graph, report)
    summary = scored.summary(timestamp=False) | {
        "forecaster": forecaster,
        "repair": {"source": report.source, **method, "total": report.total.model_dump()},
    }
    write_stats(scored, partial, summary)
    write_json(partial / REPORT_FILE, report.model_dump(mode="json"))
    write_json(partial / RUN_FILE, _run_record(graph, report, forecaster))


def _write_distributions(check: Check, obj: dict[str, Any], row: np.ndarray, method: dict[str, Any]) -> None:
    """A line of a check with categorical fields takes its repaired columns: a yes/no field its prob, a
    multiple-choice or numeric field its distribution moved to the repaired masses (the original kept)."""
    entries = {name: ForecastEntry.model_validate(obj["line"][name]) for name in check.field_names}
    for name in check.field_names:
        forecast = obj["line"][name]["forecast"]
        values = row[check.column_slices[name]]
        if name in check.categorical:
            new = forecast_with_columns(check, name, entries, values).model_dump(mode="json", exclude={"metadata"})
        else:
            new = {"prob": float(values[0])}
        original = {k: v for k, v in forecast.items() if k != "metadata"}
        repair = {**{f"original_{k}": v for k, v in original.items()}, **method}
        obj["line"][name]["forecast"] = {
            **new,
            "metadata": {"repair": repair, "original_metadata": forecast.get("metadata")},
        }


def base_name(graph: ForecastGraph) -> str:
    """The source's forecaster as rankings name it: its recorded name, else its directory's."""
    return str((graph.forecaster.name if graph.forecaster else None) or graph.source.resolve().name)


def _repaired_forecaster(graph: ForecastGraph, report: RepairReport) -> dict[str, Any]:
    base = graph.forecaster.model_dump(exclude_unset=True) if graph.forecaster else {}
    return {
        "name": f"{base_name(graph)}+repair-{report.score}-{'joint' if report.joint else 'per-tuple'}",
        "forecaster_class": "RepairedForecaster",
        "full_forecaster_config": {"base": base, "score": report.score, "joint": report.joint},
    }


def _run_record(graph: ForecastGraph, report: RepairReport, forecaster: dict[str, Any]) -> dict[str, Any]:
    from ..evaluation.rundir import now

    keep = ("benchmark", "parameters", "forecaster_spec", "forecaster_options")
    recorded = graph.meta.to_dict()
    stamp = now()
    return {
        "consistency_version": __version__,
        **{k: recorded[k] for k in keep if k in recorded},
        "kind": "repair",
        "status": "completed",
        "started": stamp,
        "ended": stamp,
        "forecaster": forecaster,
        "repair": {
            "source": report.source,
            "source_kind": graph.meta.kind or "forecast files",
            "score": report.score,
            "joint": report.joint,
            "model_calls": 0,
        },
        "questions": report.questions,
        "totals": {"calls": 0, "failures": 0, "retries": 0, "cache_hits": 0, "cost": 0.0},
    }
