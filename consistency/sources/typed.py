"""What the three platform sources share for multiple-choice and numeric questions: the question types
a scrape can keep, the crowd's distribution as metadata, and building the typed question.

A crowd distribution is kept only when reading it cannot leak the answer: the current one while a
question is open, otherwise the one in force ``--market-lead-days`` before it closed (the same
cut-off as a binary question's ``market_prob``). It is kept as the platform gives it: a multiple-choice
one that does not sum to one (a Polymarket event's Yes prices, a Manifold market read from its bets)
is not normalised, and its sum is noted in ``crowd_forecast_sum``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
from pydantic import ValidationError

from ..models import ForecastingQuestion, NumericRange
from .scraper import Skip

log = logging.getLogger(__name__)

#: Points of a numeric question's CDF (Metaculus' layout: 200 bins between the bounds).
GRID = 201

#: A crowd distribution over options whose sum is this far from one has its sum noted.
SUM_TOLERANCE = 1e-6

#: Metaculus' words for a numeric outcome outside the question's bounds.
OUT_OF_BOUNDS = ("below_lower_bound", "above_upper_bound")


def regrid_cdf(cdf: Sequence[float], points: int = GRID) -> list[float]:
    """A CDF given at ``len(cdf)`` evenly spaced positions of the question's range, read at ``points``
    evenly spaced positions, linearly in between (exact where the grids meet: a discrete question with
    10, 20, 25, 40, 50, 100 or 200 outcomes). Values read in between are rounded to 9 places, which keeps
    them non-decreasing; a CDF already on the grid is returned as given."""
    if len(cdf) == points:
        return [float(v) for v in cdf]
    values = np.asarray(cdf, dtype=float)
    at = np.interp(np.linspace(0.0, 1.0, points), np.linspace(0.0, 1.0, len(values)), values)
    return np.round(at, 9).tolist()


def choice_crowd(probs: Sequence[Any], at: datetime) -> dict[str, Any]:
    """``crowd_forecast`` (a probability per option, as given) and when it was read; nothing when a
    value is missing or not a probability."""
    try:
        values = [float(p) for p in probs]
    except (TypeError, ValueError):
        return {}
    if not values or not all(math.isfinite(v) and 0.0 <= v <= 1.0 for v in values):
        return {}
    out: dict[str, Any] = {"crowd_forecast": {"probs": values}, "crowd_forecast_at": at.isoformat()}
    total = math.fsum(values)
    if abs(total - 1.0) > SUM_TOLERANCE:
        out["crowd_forecast_sum"] = round(total, 9)
    return out


def cdf_crowd(cdf: Sequence[Any] | None, at: datetime) -> dict[str, Any]:
    """``crowd_forecast`` as a CDF on the 201-point grid, and when it was read (nothing without one)."""
    if not cdf or len(cdf) < 2:
        return {}
    try:
        values = np.asarray(cdf, dtype=float)
    except (TypeError, ValueError):
        return {}
    if values.ndim != 1 or not (np.isfinite(values) & (values >= 0.0) & (values <= 1.0)).all():
        return {}
    return {"crowd_forecast": {"cdf": regrid_cdf(values.tolist())}, "crowd_forecast_at": at.isoformat()}


def numeric_range(
    lower: Any,
    upper: Any,
    *,
    open_lower: bool = False,
    open_upper: bool = False,
    zero_point: float | None = None,
    unit: str | None = None,
) -> NumericRange | Skip:
    """The question's range (a ``zero_point`` means a log scale: Metaculus' and Manifold's rule), or why
    the data model refuses it."""
    fields: dict[str, Any] = {"lower": float(lower), "upper": float(upper), "open_lower": bool(open_lower),
                              "open_upper": bool(open_upper), "unit": unit or None}  # fmt: skip
    if zero_point is not None:  # a zero point of 0 is a plain log scale
        fields |= {"scale": "log", **({"zero_point": float(zero_point)} if zero_point != 0 else {})}
    try:
        return NumericRange(**fields)
    except ValidationError as exc:
        return Skip(f"invalid range: {_first_error(exc)}")


def build_question(**fields: Any) -> ForecastingQuestion | Skip:
    """A typed question, or why the data model refuses it (counted as a skip, not a malformed item:
    the platform gave it, but it is not a question we can hold, e.g. options that repeat)."""
    try:
        return ForecastingQuestion(**fields)
    except ValidationError as exc:
        log.info("refused %s question %r: %s", fields.get("question_type"), fields.get("title"), exc)
        return Skip(f"invalid {fields.get('question_type')} question: {_first_error(exc)}")


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ()))
    return f"{where}: {err.get('msg')}" if where else str(err.get("msg"))


def settled_winner(prices: Sequence[float], tolerance: float) -> int | Skip:
    """The index of the one market of a set whose Yes price settled at 1 while the others settled at 0,
    or why there is none."""
    if not all(min(p, 1.0 - p) <= tolerance for p in prices):
        return Skip("closed without a 0/1 settlement")
    winners = [i for i, p in enumerate(prices) if p > 0.5]
    if len(winners) != 1:
        return Skip("no market settled Yes" if not winners else "several markets settled Yes")
    return winners[0]
