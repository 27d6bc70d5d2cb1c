"""ForecastBench's combination questions as COMBINATION tuples, and forecasts on them as forecast lines.

A combination asks for the four joint outcomes of two questions P and Q; with the forecasts of P
and Q themselves, those six numbers are one tuple of the COMBINATION check. A tuple file lets any
forecaster be evaluated on them (``cc evaluate --tuples``); a forecast set that already holds the
six forecasts becomes forecast lines that ``cc score`` measures with no outcome at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..checks.combination import COMBINATION, JOINT_FIELDS
from ..models import ForecastingQuestion, tuple_model
from .keys import RowKey, key_of


def combination_tuple(bases: Mapping[str, ForecastingQuestion], joint: Sequence[ForecastingQuestion]) -> dict[str, Any]:
    """One COMBINATION tuple: P and Q, then the four joint questions in direction order."""
    fields: dict[str, Any] = {name: q.model_dump(mode="json") for name, q in bases.items()}
    fields.update({name: q.model_dump(mode="json") for name, q in zip(JOINT_FIELDS, joint, strict=True)})
    first = key_of(joint[0].id)
    fields["metadata"] = {
        "instantiator": "forecastbench",
        "forecastbench": {
            "ids": list(first.ids) if first else None,
            "source": first.source if first else None,
            "forecast_due_date": first.due if first else None,
            "resolution_date": first.resolution_date if first else None,
        },
    }
    return tuple_model(COMBINATION).model_validate(fields).model_dump(mode="json")


def combination_lines(
    tuples: Sequence[Mapping[str, Any]], forecasts: Mapping[RowKey, float]
) -> tuple[list[dict[str, Any]], int]:
    """Forecast lines (the ``{"line": {field: {question, forecast}}}`` layout) for the tuples whose six
    questions all have a forecast; and how many tuples lacked one or more."""
    lines, incomplete = [], 0
    for t in tuples:
        line = {}
        for name in COMBINATION.field_names:
            question = t[name]
            key = key_of(question["id"])
            prob = forecasts.get(key) if key is not None else None
            if prob is None:
                break
            line[name] = {"question": question, "forecast": {"prob": prob}}
        else:
            lines.append({"line": line, "metadata": t.get("metadata")})
            continue
        incomplete += 1
    return lines, incomplete
