"""What directories hold for the cross-forecaster commands, and which outputs belong to one forecaster.

``cc correlate GT_DIR SCORED_DIR`` is given ground-truth results (per question, or only a summary with
the forecaster's mean Brier score) and consistency outputs (``cc score`` or ``cc evaluate`` directories
with a ``summary.json``) for many forecasters at once. Outputs and ground-truth runs are paired by
:mod:`.pairing`, the rule ``cc report`` uses too: by recorded class and configuration, else by name (the
forecaster recorded in ``run.json``, the directory scored, the own directory) after normalising case,
``-`` versus ``_`` and the paper's split suffixes (``_tuples_scraped``, ``_20240501_20240815``), so the
published ``BasicForecaster_gpt4o_mini_2024-07-18_tuples_scraped`` pairs with
``BasicForecaster_gpt4o-mini-2024-07-18_20240501_20240815``. Everything left out is listed with why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np

from ..jsonl import LineError
from ..store import layout
from ..store.records import GroundTruthSummary, RecordError, ScoreSummary, read_record
from ..store.runs import find_files, is_score_summary
from . import proper
from .inputs import ScoreInputError
from .pairing import Identity, by_questions, identity, identity_of, match
from .table import load_table

T = TypeVar("T")


@dataclass
class ConsistencyRun:
    """Mean violation per check and metric (``default`` = arbitrage, ``frequentist``) of one forecaster."""

    path: Path
    identity: Identity  # names: recorded forecaster, scored directory, own directory
    violations: dict[str, dict[str, float]]

    @property
    def name(self) -> str:
        return self.identity.names[0]


@dataclass
class Truth:
    """One forecaster's mean Brier score and the number of resolved questions behind it."""

    brier: float
    questions: int
    source: str
    identity: Identity | None = None  # None: known by its name alone
    path: Path | None = None  # its directory, when it has one
    ci95: tuple[float, float] | None = None  # the summary's interval of the mean Brier score, when it has one


@dataclass
class Sources:
    runs: list[ConsistencyRun] = field(default_factory=list)
    truth: dict[str, Truth] = field(default_factory=dict)
    duplicates: int = 0  # repeated forecasts merged by the duplicates policy


def read_consistency(path: str | Path) -> ConsistencyRun:
    """A ``cc score``/``cc evaluate`` output directory (or its ``summary.json``)."""
    path = Path(path)
    summary_path = path / layout.SUMMARY if path.is_dir() else path
    not_one = f"{summary_path}: not a `cc score` summary"
    try:
        summary = read_record(summary_path, ScoreSummary)
    except RecordError:
        raise ScoreInputError(f"{not_one} (run `cc score` on the forecasts first)") from None
    if "checks" not in summary.model_fields_set:
        raise ScoreInputError(f"{not_one} (run `cc score` on the forecasts first)")
    violations: dict[str, dict[str, float]] = {}
    for metric in ("default", "frequentist"):
        violations[metric] = {}
        for entry in summary.checks.values():
            stats = entry.stats(metric)
            if stats is None:
                raise ScoreInputError(f"{not_one} (missing '{metric}')")
            if stats.avg_violation is not None:
                violations[metric][entry.check] = stats.avg_violation
    directory = summary_path.parent
    return ConsistencyRun(directory, identity_of(directory, summary.inputs), violations)


def find_sources(
    paths: Sequence[str | Path], duplicates: str = "error", skipped: list[LineError] | None = None
) -> Sources:
    """Sort PATHS (files or directories, searched recursively) into consistency outputs and ground truth.

    Per-question ground truth (``ground_truth_results.jsonl``, long tables) gives each forecaster's mean
    Brier score over resolved questions; a ``ground_truth_summary.json`` without results beside it gives
    the stored mean, which is all the correlation needs. Bad per-question rows are an error, or left out
    into ``skipped`` when it is given (see :func:`~.table.load_table`).
    """
    found = Sources()
    per_question: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise ScoreInputError(f"{path}: no such file or directory")
        if path.is_file():
            if path.name == layout.GROUND_TRUTH_SUMMARY:
                _add_summary(found, path)
            elif path.suffix.lower() == ".json":
                if not is_score_summary(path):
                    raise ScoreInputError(f"{path}: neither a `cc score` summary nor a ground-truth summary")
                found.runs.append(read_consistency(path))
            else:
                per_question.append(path)
            continue
        summaries = [p for p in find_files(path, layout.SUMMARY) if is_score_summary(p)]
        results = find_files(path, layout.GROUND_TRUTH)
        truth_summaries = [  # a summary is used only where the per-question results are not beside it
            p for p in find_files(path, layout.GROUND_TRUTH_SUMMARY) if p.parent not in {r.parent for r in results}
        ]
        found.runs += _each(summaries, read_consistency, skipped)
        per_question += results
        _each(truth_summaries, lambda p: _add_summary(found, p), skipped)
        if not (summaries or results or truth_summaries):
            raise ScoreInputError(
                f"{path}: holds no `cc score` {layout.SUMMARY}, {layout.GROUND_TRUTH} or {layout.GROUND_TRUTH_SUMMARY} "
                "(score forecast directories with `cc score` first)"
            )
    if per_question:
        table = load_table(per_question, duplicates, skipped)
        found.duplicates = table.duplicates
        resolved = np.isfinite(table.resolution)
        losses = proper.brier(table.prob[resolved], table.resolution[resolved])
        names = table.forecaster[resolved]
        where = ", ".join(table.sources)
        directories = _directories(per_question)
        for name in sorted(set(table.forecaster.tolist())):
            mine = losses[names == name]
            directory = directories.get(name)
            found.truth[name] = Truth(
                float(mine.mean()) if len(mine) else float("nan"),
                len(mine),
                where,
                identity_of(directory) if directory else identity([name]),
                directory,
            )
    return found


def _each(paths: list[Path], read: Callable[[Path], T], skipped: list[LineError] | None) -> list[T]:
    """``read`` of each of the summaries found in a directory; with ``skipped``, a damaged one is
    listed there and left out, as a bad row would be, instead of stopping everything."""
    out = []
    for path in paths:
        try:
            out.append(read(path))
        except ScoreInputError as exc:
            if skipped is None:
                raise
            skipped.append(LineError(str(path), 1, None, str(exc).removeprefix(f"{path}: ")))
    return out


def _add_summary(found: Sources, path: Path) -> None:
    try:
        summary = read_record(path, GroundTruthSummary)
    except RecordError:
        summary = None
    if summary is None or "avg_brier_score" not in summary.model_fields_set:
        raise ScoreInputError(f"{path}: not a ground-truth summary (no avg_brier_score)")
    brier = summary.avg_brier_score
    questions = summary.scored if summary.scored is not None else summary.total_questions
    ci = summary.brier_score.ci95 if summary.brier_score is not None else None
    found.truth[path.parent.name] = Truth(
        float("nan") if brier is None else float(brier),
        int(questions or 0),
        str(path),
        identity_of(path.parent),
        path.parent,
        (float(ci[0]), float(ci[1])) if ci is not None else None,
    )


def _directories(files: Sequence[Path]) -> dict[str, Path]:
    """Forecaster name -> the one directory its ``ground_truth_results.jsonl`` is in (as the table names it)."""
    found: dict[str, list[Path]] = {}
    for file in files:
        if file.name == layout.GROUND_TRUTH:
            ident = identity_of(file.parent)
            found.setdefault(ident.names[0], []).append(file.parent)
    return {name: dirs[0] for name, dirs in found.items() if len(dirs) == 1}


@dataclass(frozen=True)
class Pairing:
    pairs: dict[str, ConsistencyRun]  # ground-truth forecaster -> its consistency output
    left_out: dict[str, str]  # forecaster or output -> reason


def pair(
    runs: Sequence[ConsistencyRun],
    truth: Mapping[str, Truth],
    overrides: Mapping[str, ConsistencyRun] | None = None,
    *,
    max_brier: float | None = 0.25,
    min_questions: int = 1,
    splits: Mapping[str, str] | None = None,
) -> Pairing:
    """Pair each ground-truth forecaster with its consistency output (:func:`.pairing.match`, the rule
    ``cc report`` uses too); say why anything is left out."""
    overrides = dict(overrides or {})
    left: dict[str, str] = {}
    names = list(truth)
    runs = list(runs)
    fixed: dict[int, int] = {}
    for name, run in overrides.items():
        if name not in truth:
            left[name] = f"--pair {name}: no ground-truth forecaster of that name (known: {', '.join(truth)})"
            continue
        same = [i for i, r in enumerate(runs) if r.path.resolve() == run.path.resolve()]
        fixed[names.index(name)] = same[0] if same else len(runs)
        if not same:
            runs.append(run)
    truth_ids = [truth[n].identity or identity([n]) for n in names]
    candidates = [(t, truth[n].path) for t, n in zip(truth_ids, names, strict=True)]
    tiebreak = by_questions([(r.identity, r.path) for r in runs], candidates, splits)
    hint = "use --split TUPLES=SPLIT (e.g. --split scraped=20240501_20240815) or --pair"
    found = match([r.identity for r in runs], truth_ids, fixed, override_hint=hint, tiebreak=tiebreak)
    pairs = {names[j]: runs[i] for j, i in found.pairs.items()}
    left.update({str(runs[i].path): why for i, why in found.consistency_left.items()})
    left.update({names[j]: why for j, why in found.accuracy_left.items()})
    for name in list(pairs):
        t = truth[name]
        if t.questions < min_questions or np.isnan(t.brier):
            left[name] = f"too few resolved questions ({t.questions} < {min_questions})"
        elif max_brier is not None and t.brier > max_brier:
            left[name] = f"Brier {t.brier:.4f} above --max-brier {max_brier}"
        else:
            continue
        del pairs[name]
    return Pairing(pairs, left)
