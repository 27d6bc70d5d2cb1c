"""Which consistency result and which accuracy result come from one forecaster: the one rule that
``cc correlate`` and ``cc report`` share.

A result's :class:`Identity` is the names it is known by (the forecaster its ``run.json`` records,
the run it scored, its own directory) and, when recorded, the forecaster's class and whole
configuration (``run.json``, the paper's ``config.jsonl`` or ``ground_truth_summary.json``). Two
results are one forecaster when both record a class and configuration and these are equal (two
``constant`` forecasters with different ``p`` stay apart even though both are named ``constant``),
otherwise when a name of one equals a name of the other after :func:`pair_key` (case, ``-`` versus
``_`` and the paper's split suffixes ignored). A name given by the user (``--pair NAME=DIR``,
``NAME=PATH``) overrides the rule.

One forecaster often has ground-truth runs on several question sets (the paper's ``_20240501_20240815``
scraped questions and ``_20240701_20240831`` NewsAPI ones). A consistency output matching several is then
paired by :func:`by_questions`: with the split the user named for its tuples (``--split
scraped=20240501_20240815``), else with the ground-truth run whose questions its tuples were built from
(the most titles in common, as the paper's instantiated tuples keep their base questions' titles).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..store.layout import GROUND_TRUTH, forecast_files_in
from ..store.meta import ForecasterRecord
from ..store.runs import is_run_directory, recorded_forecaster, scored_inputs

_SPLIT = re.compile(r"(_tuples(_[a-z0-9]+)*|_\d{8}_\d{8})$")


def split_name(name: str) -> tuple[str, str]:
    """A published directory name as (forecaster, split): ``X_20240501_20240815`` is X on that date range,
    ``X_tuples_scraped`` X on the scraped tuples; ``(name, "")`` when there is no split suffix."""
    match = _SPLIT.search(name.lower())
    if match is None or match.start() == 0:
        return name, ""
    return name[: match.start()], name[match.start() + 1 :]


def pair_key(name: str) -> str:
    """The name two outputs of one forecaster share: lower case, ``_`` for ``-``/space, no split suffix."""
    key = re.sub(r"[-\s]+", "_", name.strip().lower())
    while (stripped := _SPLIT.sub("", key)) != key:
        key = stripped
    return key


@dataclass(frozen=True)
class Identity:
    """Who made a result: its names, best first, and its recorded class and configuration (canonical JSON)."""

    names: tuple[str, ...]
    recorded: str | None = None

    @property
    def keys(self) -> frozenset[str]:
        return frozenset(pair_key(n) for n in self.names)


def identity(names: Iterable[str | None], forecaster: ForecasterRecord | None = None) -> Identity:
    """An :class:`Identity` from names (empty ones skipped) and a recorded class and configuration."""
    recorded = None
    if forecaster is not None and forecaster.forecaster_class:
        config = forecaster.full_forecaster_config or {}
        recorded = str(forecaster.forecaster_class) + json.dumps(config, sort_keys=True, default=str)
    return Identity(tuple(dict.fromkeys(str(n) for n in names if n)), recorded)


def named(name: str) -> Identity:
    """The identity of a result the user named: the name alone decides."""
    return Identity((name,))


def forecaster_record(directory: str | Path) -> ForecasterRecord | None:
    """What a directory records about its forecaster: ``run.json``'s ``forecaster`` (``cc evaluate`` runs), the
    paper's ``config.jsonl`` (first line) or ``ground_truth_summary.json`` (``forecaster`` = its class)."""
    return recorded_forecaster(directory)


def identity_of(directory: str | Path, inputs: Sequence[str | Path] = ()) -> Identity:
    """A result directory's identity; a ``cc score`` output (``inputs`` = what it scored) that records no
    forecaster of its own takes that of the one run it scored."""
    directory = Path(directory)
    mine = forecaster_record(directory)
    own_run = is_run_directory(directory)  # a run directory's summary lists its benchmark as input
    scored = Path(inputs[0]) if len(inputs) == 1 and not own_run else None
    theirs = forecaster_record(scored) if scored is not None else None
    recorded = mine or theirs
    names = [_name(mine), _name(theirs), scored.name if scored is not None else None, directory.name]
    return identity(names, recorded)


def same_forecaster(a: Identity, b: Identity) -> bool:
    """The pairing rule (see the module's docstring)."""
    if a.recorded is not None and b.recorded is not None:
        return a.recorded == b.recorded
    return bool(a.keys & b.keys)


@dataclass
class Matching:
    """Accuracy result index -> consistency result index, and why each other result stays unpaired."""

    pairs: dict[int, int] = field(default_factory=dict)
    consistency_left: dict[int, str] = field(default_factory=dict)
    accuracy_left: dict[int, str] = field(default_factory=dict)


def match(
    consistency: Sequence[Identity],
    accuracy: Sequence[Identity],
    overrides: Mapping[int, int] | None = None,
    *,
    override_hint: str = "name one with NAME=",
    tiebreak: Callable[[int, list[int]], int | None] | None = None,
) -> Matching:
    """Pair each accuracy result with at most one consistency result of the same forecaster.

    ``overrides`` (accuracy index -> consistency index) are fixed first; a consistency result matching
    several accuracy results is paired with the one ``tiebreak(i, candidates)`` picks (see
    :func:`by_questions`), else it stays unpaired with the reason, as does a second one for an accuracy result."""
    result = Matching(dict(overrides or {}))
    fixed = set(result.pairs)
    taken = set(result.pairs.values())
    for i, mine in enumerate(consistency):
        if i in taken:
            continue
        found = [j for j, theirs in enumerate(accuracy) if j not in fixed and same_forecaster(mine, theirs)]
        if len(found) > 1 and tiebreak is not None:
            chosen = tiebreak(i, found)
            found = [chosen] if chosen is not None else found
        names = ", ".join(_label(accuracy[j]) for j in found)
        if len(found) == 1 and found[0] not in result.pairs:
            result.pairs[found[0]] = i
        elif len(found) > 1:
            result.consistency_left[i] = f"consistency output matches several forecasters ({names}): {override_hint}"
        elif found:
            first = consistency[result.pairs[found[0]]]
            result.consistency_left[i] = f"a second consistency output for {names} (first: {_label(first)})"
        else:
            result.consistency_left[i] = _no_match(mine, accuracy, override_hint)
    for j in range(len(accuracy)):
        if j not in result.pairs:
            result.accuracy_left[j] = "no consistency output matches this forecaster"
    return result


def split_of(names: Iterable[str]) -> str:
    """The question set a result's names say it is on: ``scraped`` for ``..._tuples_scraped``,
    ``20240501_20240815`` for ``..._20240501_20240815``, ``""`` when none says."""
    for name in names:
        split = split_name(name)[1]
        if split:
            return split.removeprefix("tuples_")
    return ""


def by_questions(
    consistency: Sequence[tuple[Identity, Path | None]],
    accuracy: Sequence[tuple[Identity, Path | None]],
    splits: Mapping[str, str] | None = None,
) -> Callable[[int, list[int]], int | None]:
    """A ``tiebreak`` for :func:`match`: consistency output ``i`` goes with the candidate ground-truth result
    on the split ``splits`` names for its tuples (``{"scraped": "20240501_20240815"}``), else with the one
    sharing the most question titles with its tuples; None when that leaves a tie or nothing in common."""
    wanted = {k.removeprefix("tuples_").lower(): v.lower() for k, v in (splits or {}).items()}
    cache: dict[Path, frozenset[str]] = {}

    def titles(path: Path | None, tuples: bool) -> frozenset[str]:
        if path is None:
            return frozenset()
        if path not in cache:
            cache[path] = _tuple_titles(path) if tuples else _truth_titles(path)
        return cache[path]

    def pick(i: int, candidates: list[int]) -> int | None:
        mine, directory = consistency[i]
        split = wanted.get(split_of(mine.names))
        if split is not None:
            named_split = [j for j in candidates if split_of(accuracy[j][0].names) == split]
            return named_split[0] if len(named_split) == 1 else None
        ours = titles(directory, True)
        common = [len(ours & titles(accuracy[j][1], False)) for j in candidates]
        best = max(common, default=0)
        return candidates[common.index(best)] if best > 0 and common.count(best) == 1 else None

    return pick


def _titles_in(path: Path, limit: int) -> set[str]:
    out: set[str] = set()
    try:
        with path.open(encoding="utf-8") as fh:
            for n, raw in enumerate(fh):
                if n >= limit:
                    break
                try:
                    obj = json.loads(raw)
                except ValueError:
                    continue
                _collect_titles(obj, out)
    except (OSError, UnicodeDecodeError):
        pass
    return out


def _collect_titles(obj: Any, out: set[str]) -> None:
    """Every ``question.title`` (and a bare question's ``title``) in a JSON line, lower-cased."""
    if isinstance(obj, dict):
        title = obj.get("title")
        if isinstance(title, str) and "question_type" in obj:
            out.add(title.strip().lower())
        for value in obj.values():
            if isinstance(value, dict | list):
                _collect_titles(value, out)
    elif isinstance(obj, list):
        for value in obj:
            _collect_titles(value, out)


def _tuple_titles(directory: Path, per_file: int = 100) -> frozenset[str]:
    """Question titles of a consistency output's tuples (the first lines of each ``<Checker>.jsonl``, or of
    the run it scored): enough to tell which question set they were built from, read in a moment."""
    out: set[str] = set()
    for path in forecast_files_in(directory):
        out |= _titles_in(path, per_file)
    if not out:
        inputs = scored_inputs(directory)
        if len(inputs) == 1 and Path(inputs[0]).is_dir():
            for path in forecast_files_in(inputs[0]):
                out |= _titles_in(path, per_file)
    return frozenset(out)


def _truth_titles(directory: Path) -> frozenset[str]:
    return frozenset(_titles_in(directory / GROUND_TRUTH, 1_000_000))


def _no_match(mine: Identity, accuracy: Sequence[Identity], hint: str) -> str:
    namesakes = [_label(a) for a in accuracy if mine.keys & a.keys]
    if namesakes:  # same name, different recorded configuration: say so, it is easy to miss
        return (
            f"consistency output '{_label(mine)}' records another class or configuration than {', '.join(namesakes)} "
            f"of the same name: {hint} to pair them anyway"
        )
    return f"consistency output '{_label(mine)}' matches no ground-truth forecaster"


def _label(ident: Identity) -> str:
    return ident.names[0] if ident.names else "?"


def _name(recorded: ForecasterRecord | None) -> str | None:
    return recorded.name if recorded is not None and recorded.name else None
