"""Read any result directory into one typed :class:`Run`: the one reader every command goes through.

A result is a ``cc evaluate`` run (tuples or ground truth), a ``cc repair`` output, a ``cc score`` output,
a ``cc attack`` directory, or the paper's published forecast or ground-truth directory. :func:`read_run`
tells them apart by the files they hold and reads their records (``run.json``, ``summary.json``, the
ground-truth summary, ``attack.json``, ``repair.json``) typed and checked; the line files are read on
demand, as columns (:mod:`.lines`), because they can hold millions of lines. Consumers turn these typed
values into their own structures (a report's sections, a diff's pairs, a ranking's table, a DataFrame):
nothing here knows about them, so the store depends only on models, checks and JSON reading.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from ..checks import Check
from ..errors import InputError
from ..jsonl import LineError, iter_json_lines, read_json_object
from ..models import GroundTruthRecord
from . import layout
from .lines import GroundTruthColumns, TupleColumns, read_ground_truth_columns, read_tuple_columns
from .meta import ForecasterRecord, RunMeta, optional_run_meta
from .records import (
    AttackRecord,
    GroundTruthSummary,
    RepairRecord,
    ScoreSummary,
    SearchLogRecord,
    TypedResult,
    optional_record,
    read_record,
)

M = TypeVar("M", bound=BaseModel)


class RunKind(StrEnum):
    """What a result directory is, told from the files it holds."""

    CONSISTENCY = "consistency"  # cc evaluate on tuples: run.json, <Checker>.jsonl scored, summary.json
    GROUND_TRUTH = "ground_truth"  # cc evaluate on questions, or the paper's ground_truth_results.jsonl
    REPAIR = "repair"  # cc repair: a consistency run of repaired forecasts, with repair.json
    SCORED = "scored"  # cc score output: scored <Checker>.jsonl and summary.json, no run.json
    FORECASTS = "forecasts"  # <Checker>.jsonl forecast files without our statistics (the paper's)
    ATTACK = "attack"  # cc attack: attack.json, the returned tuples' forecasts in forecasts/


class RunError(InputError):
    """A path that holds no result :func:`read_run` can read; ``str()`` names it and says why."""


@dataclass(frozen=True)
class ForecastFile:
    """One check's line file of a result."""

    check: Check
    path: Path


@dataclass
class Run:
    """A result directory (or a single result file), its records typed and its line files located."""

    path: Path  # as given: a directory, or a single file
    kind: RunKind
    meta: RunMeta | None = None  # run.json
    summary: ScoreSummary | None = None  # summary.json (scored results)
    truth_summary: GroundTruthSummary | None = None  # ground_truth_summary.json
    attack: AttackRecord | None = None  # attack.json
    repair: RepairRecord | None = None  # repair.json
    paper_config: ForecasterRecord | None = None  # the paper's config.jsonl (a single file: its directory's record)
    files: list[ForecastFile] = field(default_factory=list)  # <Checker>.jsonl, in the checks' order
    ground_truth_file: Path | None = None
    typed_file: Path | None = None  # the scored multiple-choice, numeric and date questions, when it has them

    @property
    def directory(self) -> Path:
        return self.path if self.path.is_dir() else self.path.parent

    @property
    def forecaster(self) -> ForecasterRecord | None:
        """Who made it, as recorded: ``run.json``'s forecaster, the summary's (a repair), the paper's
        ``config.jsonl``, the paper's ground-truth summary, or an attack's target."""
        for found in (
            self.meta.forecaster if self.meta else None,
            self.summary.forecaster if self.summary else None,
            self.paper_config,
            self.truth_summary.recorded_forecaster() if self.truth_summary else None,
            self.attack.forecaster if self.attack else None,
        ):
            if found is not None:
                return found
        return None

    @property
    def name(self) -> str:
        """The forecaster's recorded name, else the directory's (the file's stem for a single file)."""
        recorded = self.forecaster.name if self.forecaster else None
        if recorded:
            return recorded
        return self.path.name if self.path.is_dir() else self.path.stem

    @property
    def scored(self) -> bool:
        """Whether its lines carry our statistics (a ``summary.json`` with checks), so they need no rescoring."""
        return self.summary is not None

    def file(self, check: Check) -> ForecastFile | None:
        return next((f for f in self.files if f.check.name == check.name), None)

    def tuples(self, file: ForecastFile, *, text: bool = False, metrics: Sequence[str] | None = None) -> TupleColumns:
        """One check's lines as columns (see :func:`.lines.read_tuple_columns`)."""
        return read_tuple_columns(file.path, file.check, text=text, metrics=metrics)

    def ground_truth(self) -> GroundTruthColumns:
        """The scored questions as columns (ids, forecasts, resolutions, Brier scores)."""
        if self.ground_truth_file is None:
            raise RunError(f"{self.path}: holds no {layout.GROUND_TRUTH}")
        if not self.ground_truth_file.is_file():
            raise RunError(f"{self.ground_truth_file}: missing; a ground-truth run writes it when it finishes scoring")
        return read_ground_truth_columns(self.ground_truth_file)

    def attack_log(self) -> Iterator[tuple[int, SearchLogRecord | LineError]]:
        """An attack's scored tuples (its search log), validated line by line; none before it finishes."""
        path = self.directory / layout.SEARCH_LOG
        if self.kind is not RunKind.ATTACK or not path.is_file():
            return
        yield from validated_lines(path, SearchLogRecord)

    def typed_results(self) -> Iterator[tuple[int, TypedResult | LineError]]:
        """The scored multiple-choice, numeric and date questions, validated line by line (none when it has none)."""
        if self.typed_file is None or not self.typed_file.is_file():
            return
        yield from validated_lines(self.typed_file, TypedResult)

    def ground_truth_records(self) -> Iterator[tuple[int, GroundTruthRecord | LineError]]:
        """The scored questions validated line by line (a bad line is its :class:`LineError`)."""
        if self.ground_truth_file is None:
            raise RunError(f"{self.path}: holds no {layout.GROUND_TRUTH}")
        yield from ground_truth_records(self.ground_truth_file)


def ground_truth_records(path: Path) -> Iterator[tuple[int, GroundTruthRecord | LineError]]:
    """The lines of a ``ground_truth_results.jsonl`` validated as :class:`GroundTruthRecord`."""
    return validated_lines(path, GroundTruthRecord)


def validated_lines(path: Path, model: type[M]) -> Iterator[tuple[int, M | LineError]]:
    """A line file's lines validated as ``model``; a bad line is one :class:`LineError` saying why in one line."""
    for number, obj in iter_json_lines(path):
        if isinstance(obj, LineError):
            yield number, obj
            continue
        try:
            yield number, model.model_validate(obj)
        except ValueError as exc:
            yield number, LineError(str(path), number, None, one_line(exc))


def one_line(exc: ValueError) -> str:
    """A validation error on one line (pydantic's are several, with a URL)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        parts = [
            f"{'.'.join(map(str, e['loc']))}: {e['msg']}" if e["loc"] else e["msg"] for e in errors(include_url=False)
        ]
        return "; ".join(parts)
    return str(exc).replace("\n", " ")


# --------------------------------------------------------------------------- telling results apart


def is_result(path: Path) -> bool:
    """Whether ``path`` is a directory :func:`read_run` reads as one result (rather than a folder of them)."""
    known = (layout.RUN_FILE, layout.SUMMARY, layout.GROUND_TRUTH, layout.ATTACK_FILE)
    return path.is_dir() and (any((path / f).is_file() for f in known) or bool(layout.forecast_files_in(path)))


def result_paths(path: Path) -> list[Path]:
    """``path`` itself when it is a result (or a file), else the results one level down (``cc score`` over
    several runs, the paper's ``forecasts/``); empty when neither."""
    if not path.is_dir() or is_result(path):
        return [path]
    return sorted(d for d in path.iterdir() if d.is_dir() and is_result(d))


def find_files(directory: Path, name: str) -> list[Path]:
    """Every file called ``name`` under ``directory`` (recursively), sorted: results kept in a tree."""
    return sorted(directory.rglob(name))


def read_run(path: str | Path) -> Run:
    """The result at ``path``, whatever it holds; a :class:`RunError` naming it when it holds nothing usable.

    A damaged ``run.json`` is a :class:`~.meta.RunMetaError` naming the field; a damaged summary a
    :class:`~.records.RecordError`."""
    path = Path(path)
    if not path.exists():
        raise RunError(f"{path}: no such file or directory")
    if path.is_file():
        return _single_file(path)
    if (path / layout.ATTACK_FILE).is_file():
        attack = read_record(path / layout.ATTACK_FILE, AttackRecord)
        answers = path / layout.FORECASTS_DIR
        run = Run(path, RunKind.ATTACK, attack=attack, files=_files(answers))
        return run
    meta = optional_run_meta(path)  # a damaged run.json is refused here, before any line is read
    summary = _score_summary(path)
    truth = optional_record(path / layout.GROUND_TRUTH_SUMMARY, GroundTruthSummary)
    files = _files(path)
    gt = path / layout.GROUND_TRUTH
    run = Run(path, RunKind.FORECASTS, meta, summary, truth, files=files, paper_config=_paper_config(path))
    if meta is not None:
        run.kind = {"ground_truth": RunKind.GROUND_TRUTH, "repair": RunKind.REPAIR}.get(
            meta.kind or "", RunKind.CONSISTENCY
        )
        if run.kind is RunKind.GROUND_TRUTH:
            run.ground_truth_file = gt
            run.typed_file = _typed_file(path)
        if run.kind is RunKind.REPAIR:
            run.repair = optional_record(path / layout.REPAIR_REPORT, RepairRecord)
        return run
    if gt.is_file():
        run.kind, run.ground_truth_file, run.typed_file = RunKind.GROUND_TRUTH, gt, _typed_file(path)
    elif summary is not None:
        run.kind = RunKind.SCORED
    elif not files:
        raise RunError(
            f"{path}: not a run directory ({layout.RUN_FILE}), a `cc score` output ({layout.SUMMARY}), "
            f"nor a directory of <Checker>.jsonl forecasts or {layout.GROUND_TRUTH}"
        )
    return run


def _typed_file(directory: Path) -> Path | None:
    path = directory / layout.GROUND_TRUTH_TYPED
    return path if path.is_file() else None


def _single_file(path: Path) -> Run:
    if path.name in (layout.GROUND_TRUTH, layout.GROUND_TRUTH_TYPED):
        directory = path.parent
        truth = optional_record(directory / layout.GROUND_TRUTH_SUMMARY, GroundTruthSummary)
        run = Run(path, RunKind.GROUND_TRUTH, truth_summary=truth, typed_file=_typed_file(directory))
        run.ground_truth_file = path if path.name == layout.GROUND_TRUTH else None
        return run
    check = layout.check_of(path)
    if check is None:
        from ..files import detect  # what the file holds, from its first line (a file named otherwise)

        check = detect(path).check
    if check is None:
        raise RunError(f"{path}: not a file of forecast lines")
    recorded = recorded_forecaster(path.parent)  # a file in a run directory: that run's forecaster
    return Run(path, RunKind.FORECASTS, files=[ForecastFile(check, path)], paper_config=recorded)


def _files(directory: Path) -> list[ForecastFile]:
    from ..checks import all_checks

    order = {c.name: i for i, c in enumerate(all_checks())}
    found = []
    for p in layout.forecast_files_in(directory):
        check = layout.check_of(p)
        assert check is not None
        found.append(ForecastFile(check, p))
    return sorted(found, key=lambda f: (order.get(f.check.name, len(order)), f.path.name))


def _score_summary(directory: Path) -> ScoreSummary | None:
    """``summary.json`` when it is one of ours (it lists checks); a file of another shape is not a summary."""
    path = directory / layout.SUMMARY
    if not path.is_file():
        return None
    summary = read_record(path, ScoreSummary)
    return summary if "checks" in summary.model_fields_set else None


def _paper_config(directory: Path) -> ForecasterRecord | None:
    """The paper's ``config.jsonl``: the forecaster's class and configuration, on its first line."""
    path = directory / layout.PAPER_CONFIG
    try:
        with path.open(encoding="utf-8") as fh:
            first = fh.readline()
    except (OSError, UnicodeDecodeError):
        return None
    from ..jsonl import parse_json

    try:
        obj = parse_json(first)
    except ValueError:
        return None
    return _forecaster_of(obj) if isinstance(obj, dict) and obj.get("forecaster_class") else None


def recorded_forecaster(directory: str | Path) -> ForecasterRecord | None:
    """What ``directory`` records about its forecaster, without reading anything else: ``run.json``'s
    ``forecaster`` (unchecked beyond being an object), the paper's ``config.jsonl`` or its ground-truth summary."""
    directory = Path(directory)
    run = read_json_object(directory / layout.RUN_FILE)
    if run is not None:
        return _forecaster_of(run.get("forecaster"))
    paper = _paper_config(directory)
    if paper is not None:
        return paper
    truth = read_json_object(directory / layout.GROUND_TRUTH_SUMMARY)
    if truth is not None and truth.get("forecaster"):
        config = truth.get("full_forecaster_config")
        return _forecaster_of(
            {
                "forecaster_class": str(truth["forecaster"]),
                "full_forecaster_config": config if isinstance(config, dict) else {},
            }
        )
    return None


def _forecaster_of(value: object) -> ForecasterRecord | None:
    """A recorded forecaster, or None when the record is not one (optional metadata: never an error)."""
    if not isinstance(value, dict):
        return None
    try:
        return ForecasterRecord.model_validate(value)
    except ValueError:
        return None


def is_score_summary(path: str | Path) -> bool:
    """Whether the JSON file ``path`` is a ``cc score`` summary (it lists checks and their aggregate)."""
    summary = read_json_object(path)
    return summary is not None and isinstance(summary.get("checks"), dict) and "aggregate" in summary


def scored_inputs(directory: str | Path) -> list[str]:
    """What a ``cc score`` output scored (its summary's ``inputs``), read leniently: empty when unknown."""
    summary = read_json_object(Path(directory) / layout.SUMMARY) or {}
    inputs = summary.get("inputs")
    return [str(i) for i in inputs] if isinstance(inputs, list) else []


def recorded_questions_file(directory: str | Path) -> str | None:
    """The questions file a ground-truth run records (``questions_file``), read leniently: None when unknown."""
    run = read_json_object(Path(directory) / layout.RUN_FILE) or {}
    recorded = run.get("questions_file")
    return str(recorded) if recorded else None


def typed_result_runs(path: str | Path) -> list[Run]:
    """The ground-truth runs at or under ``path`` holding scored multiple-choice, numeric or date questions (a run
    directory, a tree of them, or the results file itself); none for anything else (a long table, say)."""
    path = Path(path)
    if path.is_file():
        return [read_run(path)] if path.name == layout.GROUND_TRUTH_TYPED else []
    if not path.is_dir():
        return []
    return [read_run(file.parent) for file in find_files(path, layout.GROUND_TRUTH_TYPED)]


def truth_summaries_only(path: str | Path) -> bool:
    """Whether ``path`` holds ground-truth summaries but no scored questions: a summary file, or a tree of
    them without any ``ground_truth_results.jsonl`` (all a ranking by mean Brier can use)."""
    path = Path(path)
    if path.is_file():
        return path.name == layout.GROUND_TRUTH_SUMMARY
    return path.is_dir() and any(path.rglob(layout.GROUND_TRUTH_SUMMARY)) and not any(path.rglob(layout.GROUND_TRUTH))


def is_run_directory(directory: str | Path) -> bool:
    """Whether ``directory`` holds a run record (``run.json``) of its own."""
    return (Path(directory) / layout.RUN_FILE).is_file()


__all__ = [
    "ForecastFile",
    "GroundTruthColumns",
    "Run",
    "RunError",
    "RunKind",
    "TupleColumns",
    "find_files",
    "ground_truth_records",
    "is_result",
    "is_run_directory",
    "is_score_summary",
    "read_run",
    "recorded_forecaster",
    "recorded_questions_file",
    "result_paths",
    "scored_inputs",
    "truth_summaries_only",
    "typed_result_runs",
]
