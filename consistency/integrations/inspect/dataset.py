"""Consistency tuples as inspect samples: one Sample per tuple, its questions in the metadata.

Kept free of inspect imports at module level so the converters can share the metadata layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ...evaluation.benchmark import TupleSet, load_benchmark
from ...models import ForecastingQuestion

if TYPE_CHECKING:
    from inspect_ai.dataset import Sample

#: Where the solvers leave each field's answer (``state.store``), read by the scorer.
ANSWERS_KEY = "consistency_answers"


def split_checks(checks: str | Sequence[str] | None) -> list[str] | None:
    """``-T checks=neg,cond`` (a comma list, or a list from a YAML/JSON task arg) → names."""
    if checks is None:
        return None
    items = checks.replace(";", ",").split(",") if isinstance(checks, str) else list(checks)
    names = [str(c).strip() for c in items if str(c).strip()]
    return names or None


def tuple_sets(
    tuples: str | Path | None, checks: Sequence[str] | None, limit: int | None, seed: int = 0
) -> list[TupleSet]:
    """The tuples ``cc evaluate`` would ask: a directory or file, a ``paper:`` name or ``hf://`` path."""
    from ...sources.paper import dataset_path

    source = dataset_path(str(tuples)) if tuples is not None else None
    return load_benchmark(source, checks, None if limit is None else int(limit), int(seed))


def samples(sets: Sequence[TupleSet]) -> list[Sample]:
    from inspect_ai.dataset import Sample

    out = []
    for ts in sets:
        for i, line in enumerate(ts.lines):
            questions = ts.tuples[i]
            out.append(
                Sample(
                    id=f"{ts.check.class_name}:{line}",
                    input=describe(ts.check.name, questions),
                    metadata=tuple_metadata(ts.check.class_name, line, str(ts.path), questions),
                )
            )
    return out


class TupleMetadata(BaseModel):
    """A sample's ``metadata``: which check, which line of which tuples file, and the tuple's questions (as
    JSON objects, checked when they are read as forecast lines). Samples of other tasks lack ``check``."""

    check: str
    line: int | None = None
    source: str | None = None
    questions: dict[str, dict[str, Any]]


def tuple_metadata(check: str, line: int, path: str, questions: dict[str, ForecastingQuestion]) -> dict[str, Any]:
    dumped = {field: q.model_dump(mode="json") for field, q in questions.items()}
    return TupleMetadata(check=check, line=line, source=path, questions=dumped).model_dump()


def questions_of(metadata: dict[str, Any]) -> dict[str, ForecastingQuestion]:
    return {field: ForecastingQuestion.model_validate(q) for field, q in metadata["questions"].items()}


def describe(check: str, questions: dict[str, ForecastingQuestion]) -> str:
    """The sample's input as inspect's viewer shows it: the check and its questions, one per line."""
    lines = [f"{check.lower()} tuple; each question is asked separately:"]
    lines += [f"{field}: {q.title}" for field, q in questions.items()]
    return "\n".join(lines)


def check_order(class_name: str) -> tuple[int, str]:
    """The bundled checks in their order, then any other check (not yet in the bundled benchmark) by name."""
    from ...checks import all_checks

    listed = [c.class_name for c in all_checks()]
    return (listed.index(class_name), "") if class_name in listed else (len(listed), class_name)
