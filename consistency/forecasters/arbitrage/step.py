"""One step of the ArbitrageForecaster (paper §5, Algorithm 1): move x's forecast to the price a
weighted arbitrageur would set against one tuple, and the weight rules that say how much x counts.

x sits in the check's first field (``P`` in the paper's ten checks, ``P_1`` in MONOTONE). The exact
solver of :mod:`.arbitrage` gives the arbitrageur's optimal prices, which are coherent; x's new forecast
is its price there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np

from consistency.checks import Check
from consistency.errors import InputError
from consistency.metrics.arbitrage import DEFAULT_EPSILON, arbitrage

WeightRule = Literal["accumulate", "equal", "cf"]
WEIGHT_RULES: tuple[str, ...] = ("accumulate", "equal", "cf")
_ALIASES = {"paper": "accumulate"}


def weight_rule(name: str) -> str:
    """``accumulate`` (alias ``paper``), ``equal`` or ``cf``; anything else is a clear error."""
    key = _ALIASES.get(name.strip().lower(), name.strip().lower())
    if key not in WEIGHT_RULES:
        raise InputError(f"unknown weight rule {name!r}; choose from accumulate (paper), equal, cf")
    return key


def step_weights(rule: str, fields: tuple[str, ...], w: float) -> tuple[dict[str, float], float]:
    """The weights of one step (by field name; every field takes part) and x's weight for the next.

    - ``accumulate`` (the paper's Algorithm 1): x weighs ``w``, every other field 1; then
      ``w += n - 1``, because x's forecast now summarises that many more forecasts.
    - ``equal``: every field weighs 1, always.
    - ``cf``: what the paper's published code did, for reproducing its files only: ``w`` lands on
      the first field after x, x keeps weight 1, and ``w`` grows by ``n - 2``.
    """
    x, others = fields[0], fields[1:]
    n = len(fields)
    if rule == "accumulate":
        return {f: (w if f == x else 1.0) for f in fields}, w + n - 1
    if rule == "equal":
        return dict.fromkeys(fields, 1.0), 1.0
    if rule == "cf":
        return {f: (w if others and f == others[0] else 1.0) for f in fields}, w + n - 2
    raise ValueError(f"unknown weight rule {rule!r}")


@dataclass(frozen=True)
class Step:
    """x arbitraged against one tuple: the forecasts, weights, optimal prices and certificate."""

    check: str
    forecasts: dict[str, float]
    weights: dict[str, float]
    prices: dict[str, float]
    violation: float  # the guaranteed profit before arbitrage (nats, weighted)
    gap: float  # certificate: how far ``violation`` can be from the exact optimum

    @property
    def x_field(self) -> str:
        return next(iter(self.forecasts))

    @property
    def before(self) -> float:
        return self.forecasts[self.x_field]

    @property
    def after(self) -> float:
        """x's new forecast: its optimal price, or unchanged when there is nothing to arbitrage."""
        return self.prices[self.x_field] if self.violation > 0 else self.before


def arbitrage_step(
    check: Check, forecasts: Mapping[str, float], weights: Mapping[str, float], epsilon: float = DEFAULT_EPSILON
) -> Step:
    """Solve one weighted arbitrage exactly; ``forecasts`` and ``weights`` name every field of ``check``."""
    fields = check.field_names
    missing = [f for f in fields if f not in forecasts or f not in weights]
    if missing:
        raise InputError(f"{check.name} step lacks forecasts or weights for {', '.join(missing)}")
    probs = np.array([[forecasts[f] for f in fields]], dtype=float)
    w = np.array([[weights[f] for f in fields]], dtype=float)
    result = arbitrage(probs, check.worlds, w, epsilon=epsilon)
    return Step(
        check.name,
        {f: float(forecasts[f]) for f in fields},
        {f: float(weights[f]) for f in fields},
        {f: float(v) for f, v in zip(fields, result.prices[0], strict=True)},
        float(result.violation[0]),
        float(result.gap[0]),
    )


def min_profit(check: Check, forecasts: Mapping[str, float], prices: Mapping[str, float], weights: Mapping[str, float]):
    """The arbitrageur's worst-case profit (over the check's worlds) for moving ``forecasts`` to ``prices``.

    Negative means the move can lose money: the prices are not an arbitrage of these forecasts.
    """
    fields = check.field_names
    F = np.clip(np.array([forecasts[f] for f in fields], dtype=float), 1e-12, 1 - 1e-12)
    p = np.clip(np.array([prices[f] for f in fields], dtype=float), 1e-12, 1 - 1e-12)
    w = np.array([weights[f] for f in fields], dtype=float)
    worlds = check.worlds
    gain = np.where(worlds == 1, np.log(p / F), np.where(worlds == 0, np.log((1 - p) / (1 - F)), 0.0))
    return float((gain * w).sum(axis=1).min())
