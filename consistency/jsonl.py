"""Streaming JSONL: read line by line with errors that name the file, line and field; write atomically."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TextIO, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import InputError
from .locking import lock_for_append

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


#: How a Git LFS pointer file begins: a clone made without Git LFS holds these small text files in place of the data.
LFS_POINTER = b"version https://git-lfs.github.com/spec/v1"
LFS_MESSAGE = (
    "a Git LFS pointer, not the data: the clone was made without Git LFS; "
    "fetch the files with `git lfs install && git lfs pull` in the repository"
)

#: How ``json`` says a document nests deeper than the interpreter's stack allows (it raises RecursionError).
TOO_DEEP = "nested too deeply to read (JSON arrays/objects inside each other beyond Python's recursion limit)"


def parse_json(text: str | bytes) -> Any:
    """``json.loads`` whose every failure is a :class:`ValueError` (a document nested a few
    thousand levels deep makes ``json`` raise RecursionError, which no caller expects)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(TOO_DEEP) from None


def iter_json_lines(path: str | Path) -> Iterator[tuple[int, dict[str, Any] | LineError]]:
    """Yield ``(line_number, object)`` per non-blank line, or a :class:`LineError` for bad JSON."""
    path = Path(path)
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if number == 1:
                encoding = utf16_encoding(raw)
                if encoding:
                    yield number, LineError(str(path), number, None, f"the file is {encoding}; save it as UTF-8")
                    return
                raw = raw.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark
                if raw.startswith(LFS_POINTER):
                    yield number, LineError(str(path), number, None, LFS_MESSAGE)
                    return
            parsed = parse_line(path, number, raw)
            if parsed is not None:
                yield number, parsed


def parse_line(path: str | Path, number: int, raw: bytes) -> dict[str, Any] | LineError | None:
    """One line of a JSONL file: its object, a :class:`LineError` saying why it is not one, or None (blank)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return LineError(str(path), number, None, f"not valid UTF-8 (byte {exc.start}): {exc.reason}")
    if not text.strip():
        return None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        truncated = not text.endswith("\n")
        hint = "truncated last line: " if truncated else "invalid JSON: "
        return LineError(str(path), number, None, f"{hint}{_json_problem(exc)}")
    except RecursionError:
        return LineError(str(path), number, None, TOO_DEEP)
    if not isinstance(obj, dict):
        return LineError(str(path), number, None, f"expected a JSON object, got {type(obj).__name__}")
    return obj


def utf16_encoding(head: bytes) -> str | None:
    """Why ``head`` (the start of a file) is UTF-16 text, or None: a UTF-16 byte-order mark, or
    ASCII interleaved with NUL bytes as Windows tools write it without one."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16 (it starts with a UTF-16 byte-order mark)"
    sample = head[:64]
    if len(sample) >= 4 and (sample[1::2].count(0) > len(sample) // 4 or sample[0::2].count(0) > len(sample) // 4):
        return "UTF-16 (every other byte is zero)"
    return None


def _json_problem(exc: json.JSONDecodeError) -> str:
    """``json``'s message with its column ("...starting at" already ends in "at")."""
    joiner = " " if exc.msg.endswith(" at") else " at "
    return f"{exc.msg}{joiner}column {exc.colno}"


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


def _name_file(exc: OSError, path: Path) -> NoReturn:
    """Raise ``exc`` naming the file it concerns (a failed write, e.g. on a full disk, does not say)."""
    if exc.filename is not None:
        raise exc
    raise type(exc)(exc.errno, exc.strerror or str(exc), str(path)) from exc


def _umask() -> int:
    """The process umask: from /proc on Linux, else by setting it and putting it straight back
    (which another thread creating a file at that instant could notice)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def atomic_write(path: str | Path) -> Iterator[TextIO]:
    """A text file that replaces ``path`` only once fully written; removed if writing fails."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; the result must read like any file we create
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield fh
        os.replace(tmp, path)
    except OSError as exc:
        _name_file(exc, path)
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


def cut_torn_tail(path: str | Path) -> int:
    """Cut a partial last line (a write killed or refused midway: kill -9, a full disk, a file-size
    limit) off an appended JSONL file, so lines appended next start on a line of their own; returns
    the bytes cut. A missing file is left alone."""
    path = Path(path)
    try:
        with path.open("r+b") as fh:
            size = fh.seek(0, os.SEEK_END)
            if size == 0:
                return 0
            fh.seek(size - 1)
            if fh.read(1) == b"\n":
                return 0
            fh.seek(0)
            end = fh.read().rfind(b"\n") + 1
            fh.truncate(end)
            return size - end
    except FileNotFoundError:
        return 0


class AppendLog:
    """A JSONL file written one line at a time (flushed), resumable after a crash.

    On opening, a partial last line (a run killed mid-write) is cut off and the complete lines
    are kept in :attr:`existing`, so a restarted run can skip what is already there.
    """

    def __init__(self, path: str | Path, *, lock: bool = True) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.existing: list[dict[str, Any]] = []
        try:
            self._fh = self.path.open("a", encoding="utf-8")
        except OSError as exc:
            _name_file(exc, self.path)
        if lock:  # owned before the existing lines are read: a second writer cannot append the same ids
            lock_for_append(self._fh, self.path)
        self._failed = False
        try:
            cut_torn_tail(self.path)
            for _, obj in iter_json_lines(self.path):
                if isinstance(obj, LineError):
                    raise InputError(f"{obj} (cannot resume from a damaged file)")
                self.existing.append(obj)
        except BaseException:
            self._fh.close()
            raise

    def append(self, item: BaseModel | dict[str, Any]) -> None:
        try:
            self._fh.write(dump_line(item))
            self._fh.flush()
        except OSError as exc:
            self._failed = True
            _name_file(exc, self.path)

    def extend(self, items: Iterable[BaseModel | dict[str, Any]]) -> None:
        """Several lines, flushed once (a batch is kept or lost whole-lines at a time)."""
        try:
            self._fh.write("".join(dump_line(item) for item in items))
            self._fh.flush()
        except OSError as exc:
            self._failed = True
            _name_file(exc, self.path)

    def close(self) -> None:
        try:
            self._fh.close()
        except OSError:
            if not self._failed:  # after a failed append the error is known; the torn line is cut on resume
                raise

    def __enter__(self) -> AppendLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_json_object(path: str | Path) -> dict[str, Any] | None:
    """The JSON object a file holds, or None when it is missing, unreadable or not an object (optional metadata)."""
    try:
        obj = parse_json(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return obj if isinstance(obj, dict) else None
