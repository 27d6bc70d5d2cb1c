"""Streaming JSONL: read line by line with errors that name the file, line and field; write atomically."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, TypeVar

from pydantic import BaseModel, ValidationError

T = TypeVar("T")


@dataclass(frozen=True)
class LineError:
    """Why one line of a file could not be used."""

    path: str
    line: int
    field: str | None
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}"
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


def iter_json_lines(path: str | Path) -> Iterator[tuple[int, dict[str, Any] | LineError]]:
    """Yield ``(line_number, object)`` per non-blank line, or a :class:`LineError` for bad JSON."""
    path = Path(path)
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield number, LineError(str(path), number, None, f"not valid UTF-8 (byte {exc.start}): {exc.reason}")
                continue
            if not text.strip():
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                truncated = not text.endswith("\n")
                hint = "truncated last line: " if truncated else "invalid JSON: "
                yield number, LineError(str(path), number, None, f"{hint}{exc.msg} at column {exc.colno}")
                continue
            if not isinstance(obj, dict):
                yield number, LineError(str(path), number, None, f"expected a JSON object, got {type(obj).__name__}")
                continue
            yield number, obj


def validation_errors(path: str | Path, number: int, exc: ValidationError) -> list[LineError]:
    """One :class:`LineError` per pydantic error, with a dotted field path."""
    out = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or None
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "missing":
            msg = "missing required field"
        out.append(LineError(str(path), number, loc, msg))
    return out


def read_jsonl(
    path: str | Path, parse: type[T] | Callable[[dict[str, Any]], T]
) -> Iterator[tuple[int, T | list[LineError]]]:
    """Parse each line with a pydantic model (or any callable); yield the object or its errors."""
    for number, obj in iter_json_lines(path):
        if isinstance(obj, LineError):
            yield number, [obj]
            continue
        try:
            if isinstance(parse, type) and issubclass(parse, BaseModel):
                yield number, parse.model_validate(obj)
            else:
                yield number, parse(obj)
        except ValidationError as exc:
            yield number, validation_errors(path, number, exc)
        except (ValueError, KeyError, TypeError) as exc:
            yield number, [LineError(str(path), number, None, str(exc))]


def dump_line(item: BaseModel | dict[str, Any]) -> str:
    """One JSON line. NaN/Infinity inside data we pass through (e.g. a forecaster's metadata)
    are written back as they were read; our own fields never hold them."""
    data = item.model_dump(mode="json") if isinstance(item, BaseModel) else item
    return json.dumps(data, ensure_ascii=False) + "\n"


@contextmanager
def atomic_write(path: str | Path) -> Iterator[TextIO]:
    """A text file that replaces ``path`` only once fully written; removed if writing fails."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield fh
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def write_jsonl(path: str | Path, items: Iterable[BaseModel | dict[str, Any]]) -> int:
    """Write all items atomically; returns the number written."""
    count = 0
    with atomic_write(path) as fh:
        for item in items:
            fh.write(dump_line(item))
            count += 1
    return count


def write_json(path: str | Path, data: Any) -> None:
    """Write a JSON document atomically."""
    with atomic_write(path) as fh:
        json.dump(data, fh, indent=2, ensure_ascii=False, allow_nan=False)
        fh.write("\n")


class AppendLog:
    """A JSONL file written one line at a time (flushed), resumable after a crash.

    On opening, a partial last line (a run killed mid-write) is cut off and the complete lines
    are kept in :attr:`existing`, so a restarted run can skip what is already there.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.existing: list[dict[str, Any]] = []
        if self.path.exists():
            data = self.path.read_bytes()
            end = data.rfind(b"\n") + 1
            if end < len(data):
                with self.path.open("r+b") as fh:
                    fh.truncate(end)
            for _, obj in iter_json_lines(self.path):
                if isinstance(obj, LineError):
                    raise ValueError(f"{obj} (cannot resume from a damaged file)")
                self.existing.append(obj)
        self._fh = self.path.open("a", encoding="utf-8")

    def append(self, item: BaseModel | dict[str, Any]) -> None:
        self._fh.write(dump_line(item))
        self._fh.flush()

    def extend(self, items: Iterable[BaseModel | dict[str, Any]]) -> None:
        """Several lines, flushed once (a batch is kept or lost whole-lines at a time)."""
        self._fh.write("".join(dump_line(item) for item in items))
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> AppendLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
