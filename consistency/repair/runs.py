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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..checks.check import NONE
from ..evaluation.scoring import ScoredFile, ScoreReport, write_stats
from ..jsonl import atomic_write, dump_line, iter_json_lines, write_json
from ..locking import try_lock
from ..metrics.scoring import ScoreParams, score_forecasts
from ..store.layout import LOCK_FILE, REPAIR_REPORT, RUN_FILE, forecast_file, partial_name, partial_pattern
from ..store.meta import RunMetaError, optional_run_meta
from ..store.outputs import output_dir
from . import Score, repair_graph, repair_tuples
from .conflicts import ConflictingTuples, summary
from .report_model import CheckRepair, ConflictTuple, RepairReport, RepairTotal, Sums, contradictory, mean_violation
from .sources import CheckTuples, ForecastGraph, RepairInputError, read_graph

log = logging.getLogger(__name__)

REPORT_FILE = REPAIR_REPORT
SCORES: tuple[Score, ...] = ("brier", "log")


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


def repair_run(
    path: str | Path,
    score: Score = "brier",
    joint: bool = True,
    out: str | Path | None = None,
    *,
    force: bool = False,
    resolutions: str | Path | None = None,
    skip_conflicts: bool = False,
) -> RepairReport:
    """Repair the forecasts of ``path`` (a run directory or a directory of ``<Checker>.jsonl`` forecasts) and
    write the repaired directory to ``out`` (default: next to ``path``, ``<name>-repaired-<score>-<joint|per-tuple>``).

    ``out`` is refused when it exists, unless ``force`` and it holds an earlier repair (never anything else),
    and when it is, holds or lies inside an input (symbolic links resolved): inputs are never modified.
    A joint repair of tuples that contradict each other raises :class:`ConflictingForecasts` and writes
    nothing, unless ``skip_conflicts``: then the conflicting tuples are left out (listed in the report).
    """
    source = Path(path)
    target = output_dir(Path(out) if out is not None else default_out(source, score, joint))
    _check_target([source, *([Path(resolutions)] if resolutions is not None else [])], target, force)
    repaired = repair_forecasts(source, score, joint, resolutions=resolutions, skip_conflicts=skip_conflicts)
    repaired.report.out = str(target)
    write_repaired(repaired, target)
    return repaired.report


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
    start = graph.start()
    outcome = graph.outcome()
    used = [c for c in graph.checks if c.rows]
    begun = time.perf_counter()
    status = iterations = worlds = None
    left_out: list[ConflictTuple] = []
    if joint:
        conditional = sorted({c.check.name for c in used if (c.check.worlds == NONE).any()})
        if score == "log" and conditional:
            raise RepairInputError(
                f"a joint log repair covers checks without conditional fields, and these have them: "
                f"{', '.join(conditional)}; repair with the log score tuple by tuple (--per-tuple), or jointly "
                "with the Brier score"
            )
        try:
            result = repair_graph([(c.check, c.idx) for c in used], start, score, skip_conflicts=skip_conflicts)
        except ConflictingTuples as exc:
            raise ConflictingForecasts(exc, _describe(graph, used, exc.tuples)) from None
        for number, conflict in enumerate(result.conflicts):
            left_out += _describe(graph, used, conflict.tuples, number)
        worlds = result.worlds
        blocks = dict(zip([id(c) for c in used], result.per_block, strict=True))
        per_check = [(blocks[id(c)] if c.rows else None) for c in graph.checks]
        status, iterations = result.status, result.iterations
        after_q = result.repaired
        total_moved, total_guaranteed = float(result.moved), float(result.guaranteed)
    else:
        per_check = [repair_tuples(c.check, c.probs, score) if c.rows else None for c in graph.checks]
        after_q = _question_means(graph, per_check)
        total_moved = float(sum(float(r.moved.sum()) for r in per_check if r is not None))
        total_guaranteed = float(sum(float(r.guaranteed.sum()) for r in per_check if r is not None))
    seconds = time.perf_counter() - begun
    probs, rows, forecast_sums = [], [], Sums()
    excluded = np.zeros(graph.n_questions, dtype=bool)  # in a tuple whose resolutions no world allows
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
    question_sums = Sums()
    in_tuples = np.zeros(graph.n_questions, dtype=bool)
    for c in used:
        in_tuples[c.idx.ravel()] = True
    keep = in_tuples & ~excluded
    question_sums.add(start[keep], after_q[keep], outcome[keep])
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
            moved=total_moved,
            guaranteed=total_guaranteed,
            violation_before=float(np.mean([r.violation_before for r in scored])) if scored else None,
            violation_after=float(np.mean([r.violation_after for r in scored])) if scored else None,
            realized=forecast_sums.result("forecast"),
            realized_questions=question_sums.result("question"),
        ),
        solver_status=status,
        iterations=iterations,
        seconds=seconds,
        errors=[str(e) for e in graph.errors],
        left_out=left_out,
        joint_worlds=worlds,
    )
    return Repaired(graph, probs, report)


def _describe(
    graph: ForecastGraph, used: list[CheckTuples], tuples: list[tuple[int, int]], conflict: int = 0
) -> list[ConflictTuple]:
    """The (block, row) pairs of a conflict as file lines and question titles."""
    out = []
    for b, r in tuples:
        c = used[b]
        questions = {name: graph.titles[q] for name, q in zip(c.check.field_names, c.rows[r], strict=True)}
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
                for j, field in enumerate(c.check.field_names):
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
