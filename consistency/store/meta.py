"""``run.json``, read once and checked: the typed record of a run that every command reads it through.

A run record is edited by hand, copied between machines, cut short by a full disk, or written by an
older or newer version. :func:`read_run_meta` turns every way it can be unusable (not JSON, not an
object, nested thousands deep, NaN or Infinity, a field of the wrong type, no file at all) into one
:class:`RunMetaError` naming the file and the field, instead of an ``AttributeError`` three modules
later. Fields the readers use are typed; any other key is kept as it was, so records written by
other versions still read and are written back whole.
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError, field_validator

from ..errors import InputError
from ..jsonl import parse_json
from .layout import RUN_FILE

M = TypeVar("M", bound=BaseModel)

#: Deeper than this is no record we write (a repair of a repair nests two levels): refused before any
#: reader recurses into it.
MAX_DEPTH = 100


class RunMetaError(InputError):
    """A ``run.json`` that cannot be used; ``str()`` names the file and the field and says why."""


class _Record(BaseModel):
    """Typed where read, open to any other key (kept as written)."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)


class ForecasterRecord(_Record):
    """``forecaster``: what :meth:`~consistency.forecasters.Forecaster.describe` said of it."""

    name: str | None = None
    forecaster_class: str | None = None
    full_forecaster_config: dict[str, Any] | None = None
    bot: str | None = None  # a forecasting-tools bot's class (module:name): its own LLM calls are not counted


class BenchmarkRecord(_Record):
    """``benchmark`` of a consistency run: which tuples, sampled how, and their fingerprint."""

    tuples: str | None = None
    checks: list[str] | None = None
    limit: int | None = None
    seed: int | None = None
    fingerprint: str | None = None
    tuples_per_check: dict[str, int] | None = None


class Totals(_Record):
    """Counts of model calls and their cost, summed over sessions."""

    calls: int | None = None
    cache_hits: int | None = None
    failures: int | None = None
    retries: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None
    unpriced_calls: int | None = None
    wall_seconds: float | None = None


def _iso_time(value: str | None) -> str | None:
    if value is not None:
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError("not a date and time (ISO 8601, e.g. 2026-01-31T12:00:00Z)") from None
    return value


def _not_null(value: Any) -> Any:
    if value is None:  # readers write `meta.get("benchmark", {})`: absent is fine, null is not
        raise ValueError("should not be null (leave the field out instead)")
    return value


class SessionRecord(_Record):
    """One start or resume of the run (see :mod:`consistency.evaluation.sessions`)."""

    started: str | None = None
    ended: str | None = None
    status: str | None = None
    action: str | None = None
    pid: int | None = None
    transcript_offset: int | None = None
    totals: Totals | None = None
    asked: int | None = None
    answered: int | None = None
    failed: int | None = None
    # declared after the fields above so a record read back is written in the order it always was
    host: str | None = None
    version: str | None = None
    totals_from: str | None = None  # a killed session: the transcript its counts were recovered from

    _times = field_validator("started", "ended")(_iso_time)


class StopRecord(_Record):
    """``stopped``: why the last session stopped before the end (the spending cap), and at what spend."""

    reason: str | None = None
    max_cost: int | float | None = None  # as given
    spent: float | None = None


class RunOptionsRecord(_Record):
    """``run_options``: how the last session ran (the parts of the options that are not the LLM settings)."""

    concurrency: int | None = None
    timeout: int | float | None = None  # as given: 300 stays 300
    max_cost: int | float | None = None


class RunMeta(_Record):
    """A run record: ``cc evaluate`` runs (kind ``consistency`` or ``ground_truth``) and ``cc repair``
    outputs (kind ``repair``). Every field may be absent: each kind writes its own."""

    kind: str | None = None
    status: str | None = None
    failure: str | None = None
    consistency_version: str | None = None
    git_commit: str | None = None
    started: str | None = None
    ended: str | None = None
    forecaster_spec: str | None = None
    forecaster_options: dict[str, Any] | None = None
    forecaster: ForecasterRecord | None = None
    benchmark: BenchmarkRecord | None = None
    parameters: dict[str, Any] | None = None
    questions_file: str | None = None
    limit: int | None = None
    seed: int | None = None
    questions: int | None = None
    failed_questions: int | None = None
    totals: Totals | None = None
    sessions: list[SessionRecord] | None = None
    llm: dict[str, Any] | None = None
    run_options: RunOptionsRecord | None = None
    repair: dict[str, Any] | None = None
    summary: dict[str, Any] | None = None
    stopped: StopRecord | None = None  # null while the run goes on

    _file: Path | None = PrivateAttr(default=None)
    _times = field_validator("started", "ended")(_iso_time)
    _objects = field_validator(
        "forecaster_options",
        "forecaster",
        "benchmark",
        "parameters",
        "totals",
        "sessions",
        "llm",
        "run_options",
        "repair",
        "summary",
        mode="before",
    )(_not_null)

    @property
    def file(self) -> Path | None:
        """The ``run.json`` this was read from (None when built in memory)."""
        return self._file

    @property
    def fingerprint(self) -> str | None:
        return self.benchmark.fingerprint if self.benchmark else None

    @property
    def forecaster_name(self) -> str | None:
        return self.forecaster.name if self.forecaster else None

    @property
    def answered(self) -> int:
        """Questions answered over all sessions."""
        return sum(s.answered or 0 for s in self.sessions or [])

    def session_totals(self) -> Totals:
        """The latest session's counts (its part of :attr:`totals`); empty before any session ended."""
        last = self.sessions[-1] if self.sessions else None
        return last.totals if last and last.totals else Totals()

    def to_dict(self) -> dict[str, Any]:
        """The record as a plain dict (typed fields checked, every other key as written), for code that
        still reads dicts and for writing it back."""
        return self.model_dump(mode="python", exclude_unset=True)

    def part(self, name: str, model: type[M]) -> M:
        """The dict field ``name`` (e.g. ``parameters``) checked by a reader's own model (e.g. the scoring
        parameters): a bad value is a :class:`RunMetaError` naming ``name.field``."""
        try:
            return model.model_validate(getattr(self, name, None) or {})
        except ValidationError as exc:
            raise _error(self._file, exc, prefix=(name,)) from None


def read_run_meta(path: str | Path) -> RunMeta:
    """The record of the run directory ``path`` (or of the ``run.json`` file ``path``), checked.

    Raises :class:`RunMetaError` with one sentence when the file is missing, unreadable, not a JSON
    object, nested deeper than :data:`MAX_DEPTH`, holds NaN or Infinity, or has a typed field of the
    wrong type."""
    path = Path(path)
    file = path if path.name == RUN_FILE and not path.is_dir() else path / RUN_FILE
    if not file.exists():
        where = "no such directory" if not file.parent.exists() else f"no {RUN_FILE}; not a run directory"
        raise RunMetaError(f"{file.parent}: {where}")
    try:
        data = parse_json(file.read_bytes().decode("utf-8").removeprefix("\ufeff"))
    except OSError as exc:
        raise RunMetaError(f"{file}: cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise RunMetaError(f"{file}: not a run record: not UTF-8 text (byte {exc.start})") from None
    except ValueError as exc:  # json.JSONDecodeError, or nested too deeply to parse
        raise RunMetaError(f"{file}: not a run record: {_json_reason(exc)}") from None
    return run_meta_of(data, file)


def optional_run_meta(directory: str | Path) -> RunMeta | None:
    """The record of ``directory`` when it has a ``run.json`` (checked as :func:`read_run_meta` does), else
    None: for directories that may be a run or a bare set of forecast files (the paper's layout)."""
    if not (Path(directory) / RUN_FILE).exists() and not (Path(directory) / RUN_FILE).is_symlink():
        return None
    return read_run_meta(directory)


def run_meta_of(data: Any, file: str | Path | None = None) -> RunMeta:
    """Check an already parsed record (``file`` is named in errors)."""
    where = Path(file) if file is not None else Path(RUN_FILE)
    if not isinstance(data, dict):
        raise RunMetaError(f"{where}: not a run record: the file holds {_json_type(data)}, not a JSON object")
    problem = value_problem(data)
    if problem is not None:
        field, why = problem
        raise RunMetaError(f"{where}: {field}: {why}; the run record is damaged")
    try:
        meta = RunMeta.model_validate(data)
    except ValidationError as exc:
        raise _error(where, exc) from None
    meta._file = where
    return meta


def value_problem(data: Any, max_depth: int = MAX_DEPTH) -> tuple[str, str] | None:
    """``(dotted field, why)`` for the first value no JSON record of ours may hold (NaN or Infinity, which
    JSON cannot write back, or nesting deeper than ``max_depth``), or None. Iterative: safe at any depth."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(data, ())]
    while stack:
        value, at = stack.pop()
        if len(at) > max_depth:
            return _dotted(at[:max_depth]) or "(top)", f"nested more than {max_depth} levels deep"
        if isinstance(value, float) and not math.isfinite(value):
            return _dotted(at) or "(top)", f"{value} is not a number JSON can hold (NaN or Infinity)"
        if isinstance(value, dict):
            stack.extend((v, (*at, str(k))) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((v, (*at, str(i))) for i, v in reversed(list(enumerate(value))))
    return None


def _dotted(at: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in at)


def _error(file: Path | None, exc: ValidationError, prefix: tuple[str, ...] = ()) -> RunMetaError:
    first = exc.errors(include_url=False)[0]
    where = _dotted((*prefix, *first["loc"])) or "(top)"
    msg = _plain(first["msg"])
    shown = first["type"] != "missing" and first.get("input") is not None
    got = f" (got {_shown(first.get('input'))})" if shown else ""
    name = file if file is not None else RUN_FILE
    return RunMetaError(f"{name}: {where}: {msg}{got}; the run record is damaged")


def _plain(msg: str) -> str:
    """pydantic's message in the words of a JSON file ("should be a JSON object", no class names)."""
    msg = re.sub(r" or instance of \w+", "", msg.removeprefix("Value error, "))
    for said, plain in (
        ("Input should be", "should be"),
        ("a valid dictionary", "a JSON object"),
        ("a valid list", "a JSON array"),
    ):
        msg = msg.replace(said, plain)
    return msg


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _json_type(data: Any) -> str:
    if data is None:
        return "JSON null"
    kind = {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return f"a JSON {kind.get(type(data), type(data).__name__)}"


def _json_reason(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno})"
    return str(exc)
