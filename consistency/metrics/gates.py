"""Consistency gates: is a run's mean arbitrage violation within a limit (for CI and tests)?

A limit is checked before it is used: NaN compares false with everything, so ``violation > nan``
would pass every forecaster, and an infinite limit passes everything too. Both are refused, as is a
negative one (no violation is below 0): a gate that cannot fail is a defect, not a setting.
"""

from __future__ import annotations

import math

from ..errors import InputError
from .forecast_files import ScoreReport


class LimitError(InputError):
    """A gate's limit that is not a usable number; one sentence naming the option."""


def checked_limit(name: str, value: float, *, at_least: float = 0.0) -> float:
    """``value`` when it is a finite number of at least ``at_least``; else a :class:`LimitError` naming ``name``."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise LimitError(f"{name} must be a number, got {value!r}") from None
    if isinstance(value, bool) or not math.isfinite(number):
        raise LimitError(f"{name} must be a finite number, got {value!r}: a gate with it could never fail")
    if number < at_least:
        raise LimitError(f"{name} must be at least {at_least:g}, got {value!r}")
    return number


def over_limit(
    report: ScoreReport, limit: float, *, per_check: bool = False, metric: str = "default"
) -> list[tuple[str, float]]:
    """What exceeds ``limit``: ``[("overall", mean)]`` for the mean over checks (each check weighs the
    same, as in the run's aggregate), or each check whose own mean is above it with ``per_check``. A mean
    that is not a number (NaN) is over any limit: it cannot be shown to be within it."""
    limit = checked_limit("max_violation", limit)
    if per_check:
        out = []
        for f in report.files:
            stats = f.stats()[metric]
            if stats.num_samples and not stats.avg_violation <= limit:
                out.append((f.check.name, float(stats.avg_violation)))
        return out
    mean = report.aggregate()[metric]["avg_violation"]
    return [("overall", float(mean))] if mean is not None and not mean <= limit else []
