"""Exact parts of a tuple: ids, dates, question types, resolutions and provenance."""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..checks import Check
from ..checks.logic import Var
from ..errors import InputError
from ..models import ForecastingQuestion, tuple_model

log = logging.getLogger(__name__)

#: Namespace of the deterministic ids given to generated questions.
NAMESPACE = uuid.UUID("5b0f3a52-9d7e-4c1e-8a43-6f1f0c2d9e11")


class Instantiator(Protocol):
    """Writes the text of each field of a check from its base questions.

    One may also say which questions it cannot use, with ``fits(check, question) -> bool`` and a
    ``skip_reason`` phrase (the template's chains): :func:`instantiate_all` skips those and counts them."""

    name: str

    def bases_for(self, check: Check) -> tuple[str, ...]:
        """The base questions this instantiator needs for ``check``, in order."""
        ...

    async def instantiate(self, check: Check, bases: Mapping[str, ForecastingQuestion]) -> dict[str, Any]:
        """One tuple (field → question dict, plus ``metadata``)."""
        ...


def field_id(check: Check, field: str, bases: Mapping[str, ForecastingQuestion], instantiator: str) -> str:
    """Same bases, check, field and instantiator → same id, so regenerated benchmarks are identical."""
    key = "|".join([check.name, field, instantiator, *(f"{k}={q.id}" for k, q in sorted(bases.items()))])
    return str(uuid.uuid5(NAMESPACE, key))


def assemble_tuple(
    check: Check,
    meaning: Check,
    bases: Mapping[str, ForecastingQuestion],
    texts: Mapping[str, tuple[str, str]],
    *,
    instantiator: str,
    model: str | None = None,
    extra_metadata: Mapping[str, Any] | None = None,
    resolution_dates: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A validated tuple of ``check`` whose field ``f`` means ``meaning.formulas[f]`` over ``bases``.

    ``texts`` gives (title, body) of every field that is not simply one of the bases. Resolution
    date is the latest of the bases a field mentions (or ``resolution_dates[f]``: a chain's later
    horizons), created date the latest creation date, and the resolution is propagated from the
    bases' resolutions through the field's formula.
    """
    resolved = meaning.resolve({name: q.resolution for name, q in bases.items() if name in meaning.bases})
    fields: dict[str, Any] = {}
    for name, formula in meaning.formulas.items():
        if isinstance(formula, Var) and formula.name == name and name in bases:
            fields[name] = bases[name].model_dump(mode="json")
            continue
        if name not in texts:
            raise KeyError(f"{instantiator} gave no text for field {name} of {check.name}")
        # A field about an event that is no base (CONSEQUENCE's model-written cons_P) is dated by the bases.
        involved = [bases[b] for b in sorted(formula.atoms()) if b in bases] or list(bases.values())
        title, body = texts[name]
        fields[name] = ForecastingQuestion(
            id=field_id(check, name, bases, instantiator),
            title=title,
            body=body,
            resolution_date=(resolution_dates or {}).get(name) or _latest(q.resolution_date for q in involved),
            created_date=_latest(q.created_date for q in involved),
            question_type=meaning.question_types[name],
            data_source=instantiator,
            metadata={},
            resolution=resolved[name],
        ).model_dump(mode="json")
    fields["metadata"] = {
        "base_sentences": {name: q.model_dump(mode="json") for name, q in bases.items()},
        "instantiator": instantiator,
        **({"model": model} if model else {}),
        **dict(extra_metadata or {}),
    }
    return tuple_model(check).model_validate(fields).model_dump(mode="json")


def _latest(values: Iterable[Any]) -> Any:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def choose_bases(
    questions: Sequence[ForecastingQuestion],
    names: Sequence[str],
    n: int,
    rng: np.random.Generator,
    *,
    group_key: str | None = "category",
) -> list[dict[str, ForecastingQuestion]]:
    """``n`` distinct assignments of questions to base names, without repeating a question inside one.

    With ``group_key``, the questions of one assignment share ``metadata[group_key]`` when the
    pool allows it (related questions make more natural conjunctions and conditionals).
    """
    k = len(names)
    if len(questions) < k:
        raise InputError(f"need at least {k} base questions, got {len(questions)}")
    groups: dict[Any, list[int]] = {}
    for i, q in enumerate(questions):
        key = (q.metadata or {}).get(group_key) if group_key else None
        groups.setdefault(key, []).append(i)
    pools = [idx for idx in groups.values() if len(idx) >= k] or [list(range(len(questions)))]
    room = [math.perm(len(pool), k) for pool in pools]  # distinct assignments left in each pool
    seen: set[tuple[int, ...]] = set()
    out: list[dict[str, ForecastingQuestion]] = []
    attempts = 0
    while len(out) < n and attempts < 50 * n + 100:
        open_pools = [j for j, left in enumerate(room) if left > 0]
        if not open_pools:
            break
        attempts += 1
        j = open_pools[len(out) % len(open_pools)]
        picked = tuple(int(i) for i in rng.choice(pools[j], size=k, replace=False))
        if picked in seen:
            continue
        seen.add(picked)
        room[j] -= 1
        out.append({name: questions[i] for name, i in zip(names, picked, strict=True)})
    return out


@dataclass
class Instantiated:
    """The tuples made from a pool of questions, and how many of the pool the instantiator had to skip."""

    tuples: list[dict[str, Any]]
    pool: int  # questions offered
    skipped: int = 0  # of them, those the instantiator cannot build the check from
    reason: str = ""  # why (one phrase for all: e.g. a chain's source with no deadline to move)

    def note(self, check: Check) -> str | None:
        """One sentence saying how many questions were skipped and why (None: none were)."""
        if not self.skipped:
            return None
        return f"{check.name}: skipped {self.skipped} of {self.pool} question(s): {self.reason}"


def usable(instantiator: Instantiator, check: Check, questions: Sequence[ForecastingQuestion]) -> list:
    """The questions ``instantiator`` can build ``check`` from (an instantiator without ``fits`` takes any)."""
    fits = getattr(instantiator, "fits", None)
    return list(questions) if fits is None else [q for q in questions if fits(check, q)]


async def instantiate_all(
    instantiator: Instantiator,
    check: Check,
    questions: Sequence[ForecastingQuestion],
    n: int,
    seed: int = 0,
) -> Instantiated:
    """``n`` tuples of ``check`` from ``questions`` (bases chosen with ``seed``), in a stable order.

    Questions the instantiator cannot build ``check`` from (the horizon template's chains need a "by
    DATE" deadline) are skipped and counted, never raised on; too few usable questions is a ValueError."""
    pool = usable(instantiator, check, questions)
    made = Instantiated([], len(questions), len(questions) - len(pool), getattr(instantiator, "skip_reason", ""))
    if made.skipped:
        log.info("%s", made.note(check))
    rng = np.random.default_rng([seed, sum(check.name.encode())])
    chosen = choose_bases(pool, instantiator.bases_for(check), n, rng)
    made.tuples = [await instantiator.instantiate(check, bases) for bases in chosen]
    return made


def choose_around(
    source: ForecastingQuestion,
    others: Sequence[ForecastingQuestion],
    names: Sequence[str],
    n: int,
    rng: np.random.Generator,
) -> list[dict[str, ForecastingQuestion]]:
    """Up to ``n`` assignments that all contain ``source``, taking each base position in turn
    (appendix J: in COND the source is ``P`` in some tuples and ``Q`` in others)."""
    pool = [q for q in others if q.id != source.id]
    if len(names) == 1:
        return [{names[0]: source}]
    if len(pool) < len(names) - 1:
        raise InputError(f"need at least {len(names) - 1} related questions besides the source, got {len(pool)}")
    seen: set[tuple[int, ...]] = set()
    out: list[dict[str, ForecastingQuestion]] = []
    attempts = 0
    while len(out) < n and attempts < 50 * n + 100:
        position = attempts % len(names)
        attempts += 1
        picked = [int(i) for i in rng.choice(len(pool), size=len(names) - 1, replace=False)]
        key = (position, *picked)
        if key in seen:
            continue
        seen.add(key)
        chosen = [pool[i] for i in picked]
        chosen.insert(position, source)
        out.append(dict(zip(names, chosen, strict=True)))
    return out
