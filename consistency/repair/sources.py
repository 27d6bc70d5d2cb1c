"""Read a run or forecast directory into tuples over shared questions: the input of a repair.

A question is identified by its text (title, body, resolution date and type), not by its id: the
paper's files give one question a fresh id in every tuple it appears in, and a reused id with new
text is another question (as :func:`consistency.evaluation.asking.question_key` decides). A question
forecast differently in different tuples starts a joint repair from the mean of those forecasts.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..checks import Check, all_checks
from ..errors import InputError, RunFailed
from ..evaluation.scoring import NothingToScore, ScoringError, forecast_files
from ..files import FileKind, detect, validate_lines
from ..jsonl import LineError
from ..metrics.scoring import ScoreParams
from ..models import ForecastingQuestion, ForecastLine, format_datetime
from ..outcomes import TupleShapeError, column_labels, forecast_row, tuple_outcomes
from ..store.meta import ForecasterRecord, RunMeta, optional_run_meta
from ..store.runs import recorded_forecaster

log = logging.getLogger(__name__)


class RepairInputError(InputError):
    """A path a repair cannot read; one sentence naming it."""


class NothingToRepair(RepairInputError, RunFailed):
    """A directory of forecast files none of whose lines could be read (or all empty)."""

    heading = "nothing to repair"  # how ``cc`` heads its sentence


def question_identity(q: ForecastingQuestion) -> str:
    """The same event: same title, body, resolution date and type, whatever the id."""
    text = "\x00".join([q.title, q.body, format_datetime(q.resolution_date) or "", q.question_type])
    return hashlib.sha256(text.encode()).hexdigest()[:20]


@dataclass
class CheckTuples:
    """One check's valid forecast lines: where each came from, and its questions' positions and forecasts."""

    check: Check
    path: Path
    lines: list[int] = field(default_factory=list)
    rows: list[list[int]] = field(default_factory=list)  # question positions, in column order
    given: list[list[float]] = field(default_factory=list)  # the forecasts as the file holds them
    errors: list[LineError] = field(default_factory=list)
    n_lines: int = 0

    @property
    def idx(self) -> np.ndarray:
        return np.array(self.rows, dtype=np.intp).reshape(len(self.rows), self.check.n_columns)

    @property
    def probs(self) -> np.ndarray:
        return np.array(self.given, dtype=float).reshape(len(self.given), self.check.n_columns)


@dataclass
class ForecastGraph:
    """Every distinct question of a directory, the tuples that share them, and what the source records."""

    source: Path
    checks: list[CheckTuples]
    titles: list[str]
    forecasts: list[list[float]]  # per question: every forecast it received
    resolutions: list[bool | None]  # None: unresolved, not resolving, or resolved differently in two places
    conflicting: int  # questions whose occurrences disagree on the resolution
    meta: RunMeta  # the source's run.json (empty for the paper's layout)
    forecaster: ForecasterRecord | None  # run.json's forecaster, or the paper's config.jsonl

    @property
    def errors(self) -> list[LineError]:
        return [e for c in self.checks for e in c.errors]

    @property
    def n_questions(self) -> int:
        return len(self.titles)

    def start(self) -> np.ndarray:
        """One forecast per question: the mean of those it received."""
        return np.array([float(np.mean(f)) for f in self.forecasts], dtype=float)

    def n_disagreeing(self) -> int:
        """Questions forecast differently in different tuples (a joint repair starts them from the mean)."""
        return sum(1 for f in self.forecasts if max(f) - min(f) > 0)

    def outcome(self) -> np.ndarray:
        """Per question: 1.0 / 0.0 when resolved, NaN otherwise."""
        return np.array([np.nan if r is None else float(r) for r in self.resolutions], dtype=float)


def read_graph(path: str | Path, resolutions: str | Path | None = None) -> ForecastGraph:  # noqa: C901
    """Read every ``<Checker>.jsonl`` forecast file of a run or forecast directory (ours or the paper's).

    Bad lines are kept as :class:`LineError` (file and line) and left out; ``resolutions`` (a questions or
    ground-truth results file) adds resolutions to questions of the same text that have none.

    Kept whole: each branch names one way a forecast file can be unfit for repair, in the order they are read."""
    root = Path(path)
    if not root.is_dir():
        raise RepairInputError(f"{root}: not a directory; give a run directory or a directory of <Checker>.jsonl")
    record = optional_run_meta(root)  # a damaged run.json is refused here, before any line is read
    if record is not None:
        record.part("parameters", ScoreParams)  # the repaired run is scored with them
    try:
        files = forecast_files([root])
    except NothingToScore as exc:
        raise NothingToRepair(str(exc).replace("to score", "to repair")) from None
    except ScoringError as exc:
        raise RepairInputError(str(exc)) from None
    positions: dict[str, int] = {}
    titles: list[str] = []
    forecasts: list[list[float]] = []
    resolved: list[set[bool | None]] = []
    checks: dict[str, CheckTuples] = {}
    for file in files:
        info = detect(file)
        if info.kind is not FileKind.FORECASTS or info.check is None:
            raise RepairInputError(f"{file}: holds {info.kind}, not forecast lines; nothing to repair in it")
        if info.check.class_name in checks:
            raise RepairInputError(f"{file}: a second file of {info.check.name} forecasts in {root}")
        tuples = checks[info.check.class_name] = CheckTuples(info.check, file)
        for number, item in validate_lines(info):
            tuples.n_lines += 1
            if isinstance(item, list):
                tuples.errors.extend(item)
                continue
            assert isinstance(item, ForecastLine)
            try:
                nodes = _nodes(info.check, item.line)
            except TupleShapeError as exc:
                tuples.errors.append(LineError(str(file), number, "line", str(exc)))
                continue
            row, given = [], []
            for key, title, value, resolution in nodes:
                at = positions.get(key)
                if at is None:
                    at = positions[key] = len(titles)
                    titles.append(title)
                    forecasts.append([])
                    resolved.append(set())
                forecasts[at].append(value)
                resolved[at].add(resolution)
                row.append(at)
                given.append(value)
            tuples.rows.append(row)
            tuples.given.append(given)
            tuples.lines.append(number)
        if tuples.errors:
            log.warning("%s: %d line(s) left out", file, len({e.line for e in tuples.errors}))
    outcomes, conflicting = _outcomes(resolved)
    if resolutions is not None:
        _add_resolutions(resolutions, positions, outcomes)
    order = {c.class_name: i for i, c in enumerate(all_checks())}
    kept = sorted(checks.values(), key=lambda t: order.get(t.check.class_name, len(order)))
    if not any(t.rows for t in kept):
        first = next((str(e) for t in kept for e in t.errors), "")
        why = f" (first: {first})" if first else ""
        raise NothingToRepair(f"{root}: no forecast line could be read, nothing to repair{why}")
    meta = record if record is not None else RunMeta()
    forecaster = meta.forecaster if record is not None else recorded_forecaster(root)
    return ForecastGraph(root, kept, titles, forecasts, outcomes, conflicting, meta, forecaster)


def _nodes(check: Check, line) -> list[tuple[str, str, float, bool | None]]:
    """One line's values in the check's columns: (identity, title, forecast, resolution) each.

    A categorical field gives one value per column (its outcome as the tuple groups it), identified by its
    question and what the column stands for, so a joint repair shares a column only with the same event."""
    if not check.categorical:
        return [
            (question_identity(e.question), e.question.title, e.forecast.prob, e.question.resolution)  # type: ignore[union-attr]
            for e in (line[name] for name in check.field_names)
        ]
    questions = {name: e.question for name, e in line.items()}
    values = forecast_row(check, line)
    outcome = tuple_outcomes(check, questions)
    out = []
    for name in check.field_names:
        question, where = questions[name], check.column_slices[name]
        if name not in check.categorical:
            out.append((question_identity(question), question.title, float(values[where][0]), question.resolution))
            continue
        labels = column_labels(check, name, questions)
        for o, (label, value) in enumerate(zip(labels, values[where], strict=True)):
            resolution = None if outcome[name] is None else outcome[name] == o
            key = question_identity(question) + "\x00" + label
            out.append((key, f"{question.title} [{label}]", float(value), resolution))
    return out


def _outcomes(resolved: list[set[bool | None]]) -> tuple[list[bool | None], int]:
    out: list[bool | None] = []
    conflicting = 0
    for values in resolved:
        known = values - {None}
        if len(known) > 1:
            conflicting += 1
        out.append(next(iter(known)) if len(known) == 1 else None)
    return out, conflicting


def _add_resolutions(path: str | Path, positions: dict[str, int], outcomes: list[bool | None]) -> None:
    from ..evaluation.ground_truth import load_questions

    try:
        questions, errors = load_questions(path)
    except ValueError as exc:
        raise RepairInputError(f"--resolutions: {exc}") from None
    for e in errors:
        log.warning("--resolutions: %s", e)
    for q in questions:
        at = positions.get(question_identity(q))
        if at is not None and outcomes[at] is None and q.resolution is not None:
            outcomes[at] = q.resolution
