"""Which tuples a run evaluates: the bundled benchmark or the user's files, filtered and sampled."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from numbers import Integral
from pathlib import Path
from typing import TypeVar

import numpy as np

from ..checks import Check, all_checks, get_check
from ..datasets import benchmark_dir, tuples_source
from ..errors import InputError
from ..files import FileKind, detect, validate_lines
from ..jsonl import LineError
from ..models import ForecastingQuestion, ForecastLine
from ..store import layout
from .scoring import ScoringError, forecast_files

T = TypeVar("T")


@dataclass
class TupleSet:
    """The tuples of one check selected for a run, with the line each came from."""

    check: Check
    path: Path
    lines: list[int] = field(default_factory=list)
    tuples: list[dict[str, ForecastingQuestion]] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)
    available: int = 0

    def ids(self, i: int) -> tuple[str, ...]:
        return tuple(self.tuples[i][f].id for f in self.check.field_names)


def bundled_tuples() -> Path:
    return benchmark_dir() / layout.TUPLES_DIR


def load_benchmark(
    source: str | Path | None = None,
    checks: Sequence[str | Check] | None = None,
    limit: int | None = None,
    seed: int = 0,
) -> list[TupleSet]:
    """Tuples from ``source`` (a directory of ``<Checker>.jsonl`` tuple or forecast files, or one
    file, or a bundled set by name: ``bundled:typed``; default: the bundled benchmark), for ``checks`` (default:
    all), at most ``limit`` per check sampled with ``seed`` and kept in file order. Bad lines are collected, not
    fatal."""
    check_sample(limit, seed)
    wanted = {get_check(c).name for c in checks} if checks else None
    try:
        paths = forecast_files([_bundled_or_path(source) or bundled_tuples()])
    except ScoringError as exc:
        raise InputError(str(exc).replace("forecast files", "tuple files")) from None
    sets: dict[str, TupleSet] = {}
    for path in paths:
        info = detect(path)
        if info.kind not in (FileKind.TUPLES, FileKind.FORECASTS) or info.check is None:
            raise InputError(f"{path}: holds {info.kind}, not tuples of a check")
        if wanted is not None and info.check.name not in wanted:
            continue
        if info.check.class_name in sets:
            raise InputError(f"{path}: a second file of {info.check.name} tuples; give one file per check")
        ts = TupleSet(info.check, path)
        for number, item in validate_lines(info):
            if isinstance(item, list):
                ts.errors.extend(item)
                continue
            if isinstance(item, ForecastLine):
                ts.tuples.append({f: item.line[f].question for f in info.check.field_names})
            else:
                ts.tuples.append({f: getattr(item, f) for f in info.check.field_names})
            ts.lines.append(number)
        ts.available = len(ts.tuples)
        rng = np.random.default_rng([seed, *info.check.class_name.encode()])
        keep = sample_in_order(list(range(len(ts.tuples))), limit, rng)
        ts.tuples = [ts.tuples[i] for i in keep]
        ts.lines = [ts.lines[i] for i in keep]
        sets[info.check.class_name] = ts
    if wanted is not None:
        missing = wanted - {ts.check.name for ts in sets.values()}
        if missing:
            raise InputError(f"no tuples for {', '.join(sorted(missing))} in {source or 'the bundled benchmark'}")
    if sets and not any(ts.tuples for ts in sets.values()):
        raise InputError(
            nothing_usable("tuple", source or "the bundled benchmark", [e for ts in sets.values() for e in ts.errors])
        )
    order = {c.class_name: i for i, c in enumerate(all_checks())}
    return sorted(sets.values(), key=lambda ts: order.get(ts.check.class_name, len(order)))


def _bundled_or_path(source: str | Path | None) -> Path | None:
    try:
        return tuples_source(source)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def nothing_usable(what: str, source: str | Path, errors: Sequence[LineError]) -> str:
    """One sentence for input of which no line can be used: how many lines were bad, and the first reason."""
    lines = len({(e.path, e.line) for e in errors})
    if not lines:
        return f"{source}: no {what} in it (it is empty)"
    first = f" (first: {errors[0]})" if errors else ""
    return f"{source}: no usable {what}, all {lines} line(s) are invalid{first}; `cc validate {source}` lists them"


def sample_in_order(items: list[T], limit: int | None, rng: np.random.Generator) -> list[T]:
    """At most ``limit`` items drawn without replacement, kept in their original order."""
    check_sample(limit, 0)
    if limit is None or limit >= len(items):
        return list(items)
    return [items[i] for i in np.sort(rng.choice(len(items), size=limit, replace=False))]


def check_sample(limit: int | None, seed: int) -> None:
    """A ``limit`` of at least 1 and a seed of 0 or more, else one sentence (not numpy's "negative dimensions")."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, Integral) or limit < 1):
        raise InputError(f"limit must be a whole number of at least 1 (or None for all), got {limit!r}")
    if isinstance(seed, bool) or not isinstance(seed, Integral) or seed < 0:
        raise InputError(f"seed must be a whole number of 0 or more, got {seed!r}")


def fingerprint(sets: Sequence[TupleSet]) -> str:
    """Identifies the selected tuples, so a resumed run can tell that its inputs are unchanged."""
    h = hashlib.sha256()
    for ts in sets:
        for i, line in enumerate(ts.lines):
            h.update(f"{ts.check.class_name}|{line}|{'|'.join(ts.ids(i))}\n".encode())
            for q in ts.tuples[i].values():
                h.update(q.title.encode())
    return h.hexdigest()[:16]
