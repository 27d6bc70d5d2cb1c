"""Open bounds for numeric options, which typer's ``min``/``max`` (inclusive) cannot state.

Every numeric option of ``cc`` declares its range at the option (tests/cli/test_option_bounds.py holds them
to it), so ``-n -3`` or ``--timeout nan`` is refused with the option's name before any work, instead of
surfacing later as a numpy or asyncio message. ``min``/``max`` also refuse NaN; these callbacks add the
exclusive ends (a timeout of 0 seconds, a significance level of 1).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer


def above(low: float | None, high: float | None = None) -> Callable[[Any, Any, float | None], float | None]:
    """A callback refusing values at or below ``low`` and at or above ``high`` (each end when given)."""

    def check(ctx: Any, param: Any, value: float | None) -> float | None:
        if value is None:
            return value
        if (low is not None and not value > low) or (high is not None and not value < high):
            if high is None:
                where = f"more than {low:g}"
            else:
                where = f"less than {high:g}" if low is None else f"strictly between {low:g} and {high:g}"
            raise typer.BadParameter(f"must be {where}, got {value:g}")
        return value

    return check


#: Seconds, rates, factors that must be positive: 0 would mean every request times out, or a division by 0.
positive = above(0.0)
