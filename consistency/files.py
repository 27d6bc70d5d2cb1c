"""What a JSONL file holds (questions, tuples of a check, forecasts, ground-truth results) and how to check it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from .checks import Check, check_for_fields, get_check
from .errors import InputError
from .jsonl import LFS_MESSAGE, LineError, iter_json_lines, validation_errors
from .models import (
    ForecastingQuestion,
    ForecastLine,
    GroundTruthRecord,
    RunConfig,
    tuple_model,
    validate_forecast_line,
)
from .store.layout import check_of


class FileKind(StrEnum):
    QUESTIONS = "questions"
    TUPLES = "tuples"
    FORECASTS = "forecasts"
    GROUND_TRUTH = "ground-truth results"
    RUN_CONFIG = "run configuration"


class DetectionError(InputError):
    pass


def _kind_of(obj: dict[str, Any]) -> FileKind | None:
    if "line" in obj:
        return FileKind.FORECASTS
    if "question" in obj and "forecast" in obj:
        return FileKind.GROUND_TRUTH
    if "title" in obj:
        return FileKind.QUESTIONS
    if "forecaster_class" in obj and "checkers" in obj:
        return FileKind.RUN_CONFIG
    if check_for_fields(obj) is not None:
        return FileKind.TUPLES
    return None


@dataclass
class FileInfo:
    path: Path
    kind: FileKind
    check: Check | None = None


def detect(path: str | Path, check: str | Check | None = None) -> FileInfo:
    """Look at the first JSON object of ``path`` (and its name) to tell what the file holds."""
    path = Path(path)
    if path.is_dir():
        raise DetectionError(f"{path}: is a directory, not a JSONL file")
    if not path.is_file():
        if path.is_symlink():  # dangling, or a loop: is_file() says False for both
            raise DetectionError(f"{path}: a symbolic link that leads to no file (its target is missing, or a loop)")
        raise DetectionError(f"{path}: no such file")
    first, problem = None, None
    for _, obj in iter_json_lines(path):
        if isinstance(obj, dict):
            first = obj
            break
        problem = problem or obj
    if first is None:
        if problem is not None and problem.message == LFS_MESSAGE:
            raise DetectionError(f"{path}: {LFS_MESSAGE}")
        why = f"; line {problem.line}: {problem.message}" if problem else " (the file is empty)"
        raise DetectionError(f"{path}: no JSON object found{why}")
    kind = _kind_of(first)
    if kind is None:
        raise DetectionError(
            f"{path}: cannot tell what this file holds (first object has keys {', '.join(sorted(first)) or 'none'}); "
            "expected questions, tuples of a check, forecast lines or ground-truth results"
        )
    chosen = get_check(check) if check is not None else None
    if kind in (FileKind.TUPLES, FileKind.FORECASTS) and chosen is None:
        fields = first["line"] if kind is FileKind.FORECASTS and isinstance(first["line"], dict) else first
        chosen = check_of(path) or check_for_fields(fields)
        if chosen is None:
            raise DetectionError(
                f"{path}: fields {', '.join(sorted(set(fields) - {'metadata'}))} match no registered check; "
                "name the file <Checker>.jsonl or pass --check"
            )
    return FileInfo(path, kind, chosen)


@dataclass
class ValidationReport:
    info: FileInfo
    n_lines: int = 0
    errors: list[LineError] = field(default_factory=list)
    unknown_keys: set[str] = field(default_factory=set)

    @property
    def n_bad_lines(self) -> int:
        return len({e.line for e in self.errors})


def _parser(info: FileInfo) -> type[BaseModel]:
    if info.kind is FileKind.QUESTIONS:
        return ForecastingQuestion
    if info.kind is FileKind.GROUND_TRUTH:
        return GroundTruthRecord
    if info.kind is FileKind.RUN_CONFIG:
        return RunConfig
    if info.kind is FileKind.FORECASTS:
        return ForecastLine
    assert info.check is not None
    return tuple_model(info.check)


def validate_lines(info: FileInfo) -> Iterator[tuple[int, BaseModel | list[LineError]]]:
    """Parse every line of the file as its kind; yields the object or the line's errors."""
    model = _parser(info)
    for number, obj in iter_json_lines(info.path):
        if isinstance(obj, LineError):
            yield number, [obj]
            continue
        try:
            item = model.model_validate(obj)
        except ValidationError as exc:
            yield number, validation_errors(info.path, number, exc)
            continue
        if isinstance(item, ForecastLine) and info.check is not None:
            problems = validate_forecast_line(info.check, item)
            if problems:
                yield number, [LineError(str(info.path), number, f, m) for f, m in problems]
                continue
        yield number, item


def validate_file(path: str | Path, check: str | Check | None = None) -> ValidationReport:
    report = ValidationReport(detect(path, check))
    for _, item in validate_lines(report.info):
        report.n_lines += 1
        if isinstance(item, list):
            report.errors.extend(item)
        else:
            report.unknown_keys |= _extra_keys(item)
    return report


def _extra_keys(item: BaseModel, prefix: str = "") -> set[str]:
    out = {f"{prefix}{k}" for k in (item.model_extra or {})}
    for name, value in item:
        if isinstance(value, BaseModel):
            out |= _extra_keys(value, f"{prefix}{name}.")
        elif isinstance(value, dict):
            for key, sub in value.items():
                if isinstance(sub, BaseModel):
                    out |= _extra_keys(sub, f"{prefix}{name}.{key}.")
    return out


def jsonl_files(paths: Iterable[str | Path]) -> tuple[list[Path], list[str]]:
    """The files to read: each file as given, each directory's ``*.jsonl`` files; and one problem sentence per
    directory that holds none (said, while the other paths are still read)."""
    files, problems = [], []
    for path in map(Path, paths):
        if path.is_dir():
            found = sorted(path.glob("*.jsonl"))
            files.extend(found)
            if not found:
                problems.append(f"{path}: is a directory with no .jsonl files")
        else:
            files.append(path)
    return files, problems
