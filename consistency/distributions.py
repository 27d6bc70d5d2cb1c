"""Numeric questions' scales and grids, and the arithmetic of CDFs on them (numpy in, numpy out).

A numeric (or date) question has a range [lower, upper] on a linear or a log scale. Forecasts are CDFs on
Metaculus's grid: :data:`GRID_POINTS` points evenly spaced in the scale's *location* t ∈ [0, 1]
(t = (x - lower) / (upper - lower) on a linear scale; on a log scale with zero point z,
t = log((x - z) / (lower - z)) / log((upper - z) / (lower - z)), z = 0 for a plain log scale). Point j is
P(X <= x_j); point 0 is the mass below the lower bound and 1 - point 200 the mass above the upper bound, so a
forecast is a distribution over :data:`BINS` = 202 bins: below, the 200 cells of the grid, above. Inside a cell
the CDF is taken as linear in the location (a uniform density there), as Metaculus does.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping

import numpy as np

from consistency.errors import InputError

#: Points of a numeric forecast's CDF (Metaculus's layout), and the bins they delimit (with both tails).
GRID_POINTS = 201
CELLS = GRID_POINTS - 1
BINS = GRID_POINTS + 1
#: The resolutions of an outcome outside the range (Metaculus's words).
BELOW, ABOVE = "below_lower_bound", "above_upper_bound"


class PercentileError(InputError, ValueError):
    """Percentiles that do not describe a distribution on the question's range."""


def locations() -> np.ndarray:
    """The grid's locations t_j = j / 200."""
    return np.linspace(0.0, 1.0, GRID_POINTS)


def to_location(x, lower: float, upper: float, zero_point: float | None) -> np.ndarray:
    """Values → locations in [0, 1] inside the range (outside it: below 0 or above 1; beyond a log scale's zero
    point, -inf or +inf). ``zero_point`` None is a linear scale."""
    x = np.asarray(x, dtype=float)
    if zero_point is None:
        return (x - lower) / (upper - lower)
    z = zero_point
    ratio = (x - z) / (lower - z)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.log(ratio) / math.log((upper - z) / (lower - z))
    beyond = ratio <= 0  # the other side of the zero point: further out than any value of the scale
    side = -np.inf if z < lower else np.inf
    return np.where(beyond, side, t)


def from_location(t, lower: float, upper: float, zero_point: float | None) -> np.ndarray:
    """Locations → values (the inverse of :func:`to_location`)."""
    t = np.asarray(t, dtype=float)
    if zero_point is None:
        return lower + t * (upper - lower)
    z = zero_point
    return z + (lower - z) * ((upper - z) / (lower - z)) ** t


def pmf(cdf) -> np.ndarray:
    """The 202 bin masses of CDFs (last axis 201 points): below the range, each cell, above the range."""
    cdf = np.asarray(cdf, dtype=float)
    zero = np.zeros((*cdf.shape[:-1], 1))
    return np.diff(np.concatenate([zero, cdf, zero + 1.0], axis=-1), axis=-1)


def cdf_at(cdf, t) -> np.ndarray:
    """P(X <= x) at locations ``t``, linear inside each cell. ``cdf`` has shape (..., 201) and its leading axes
    broadcast against ``t``'s (a CDF per row and a threshold per column: ``cdf[:, None, :]`` with ``t`` (N, k)).
    Locations outside [0, 1] are taken at the bound: the grid says nothing finer there."""
    cdf = np.asarray(cdf, dtype=float)
    t = np.clip(np.asarray(t, dtype=float), 0.0, 1.0)
    lead = np.broadcast_shapes(cdf.shape[:-1], t.shape)
    c = np.broadcast_to(cdf, (*lead, cdf.shape[-1]))
    pos = np.broadcast_to(t, lead) * CELLS
    j = np.minimum(np.floor(pos).astype(np.intp), CELLS - 1)
    lo = np.take_along_axis(c, j[..., None], axis=-1)[..., 0]
    hi = np.take_along_axis(c, j[..., None] + 1, axis=-1)[..., 0]
    return lo + (pos - j) * (hi - lo)


def cdf_from_percentiles(  # noqa: C901
    percentiles: Mapping[float, float],
    lower: float,
    upper: float,
    zero_point: float | None,
    open_lower: bool,
    open_upper: bool,
) -> np.ndarray:
    """A 201-point CDF through the given quantiles ({0.05: x, 0.5: y, ...}), linear in the scale's location.

    Kept whole: each branch is one validation of the quantiles or one case of the bounds (open, closed, log),
    read best in the order a forecast is checked.

    Between two percentiles the CDF is linear in the location. On a closed side it runs to 0 at the lower bound
    (1 at the upper); on an open side it continues the slope of the nearest two percentiles to the bound, cut at
    0 and 1, so the mass it leaves beyond the bound is what that slope implies. A percentile at a closed bound is
    taken to lie one cell inside it (a closed bound holds no mass beyond it).
    """
    items = sorted((float(p), float(x)) for p, x in percentiles.items())
    if len(items) < 2:
        raise PercentileError(f"give at least two percentiles, got {len(items)}")
    for p, x in items:
        if not (math.isfinite(p) and 0.0 < p < 1.0):
            raise PercentileError(f"a percentile is a probability strictly between 0 and 1, got {p:g}")
        if not math.isfinite(x):
            raise PercentileError(f"the {p:g} quantile must be a finite number, got {x}")
    for (p1, x1), (p2, x2) in itertools.pairwise(items):
        if not x2 > x1:
            raise PercentileError(
                f"percentiles out of order: the {p2:g} quantile {x2:g} is not above the {p1:g} quantile {x1:g}"
            )
    ps = np.array([p for p, _ in items])
    us = to_location([x for _, x in items], lower, upper, zero_point)
    if not np.isfinite(us).all():
        bad = items[int(np.flatnonzero(~np.isfinite(us))[0])]
        raise PercentileError(
            f"the {bad[0]:g} quantile {bad[1]:g} lies beyond the log scale's zero point {zero_point:g}"
        )
    step = 1.0 / CELLS
    if not open_lower:
        if us[0] < 0.0:
            raise PercentileError(f"the {ps[0]:g} quantile {items[0][1]:g} lies below the closed lower bound {lower:g}")
        us[0] = max(us[0], min(step, us[1] / 2))
        us, ps = np.concatenate([[0.0], us]), np.concatenate([[0.0], ps])
    if not open_upper:
        if us[-1] > 1.0:
            raise PercentileError(
                f"the {ps[-1]:g} quantile {items[-1][1]:g} lies above the closed upper bound {upper:g}"
            )
        us[-1] = min(us[-1], max(1.0 - step, (1.0 + us[-2]) / 2))
        us, ps = np.concatenate([us, [1.0]]), np.concatenate([ps, [1.0]])
    t = locations()
    cdf = np.interp(t, us, ps)
    # Open sides: the outer segments' slopes carried on to the bound (np.interp holds the end values flat).
    if open_lower:
        left = t < us[0]
        cdf[left] = ps[0] - (us[0] - t[left]) * (ps[1] - ps[0]) / (us[1] - us[0])
    if open_upper:
        right = t > us[-1]
        cdf[right] = ps[-1] + (t[right] - us[-1]) * (ps[-1] - ps[-2]) / (us[-1] - us[-2])
    cdf = np.maximum.accumulate(np.clip(cdf, 0.0, 1.0))
    if not open_lower:
        cdf[0] = 0.0
    if not open_upper:
        cdf[-1] = 1.0
    return cdf


def outcome_bin(t: float) -> int:
    """The bin (0 below the range, 1 … 200 the cells, 201 above) of an outcome at location ``t``.

    Cells are half-open [x_{j-1}, x_j): an outcome on a boundary counts in the cell above it, within 1e-7 of a
    cell (so 50 on a 0-100 range falls in cell 101 however the division rounds), and the upper bound itself in
    the last cell; this is Metaculus's rule.
    """
    if t < 0.0:
        return 0
    if t > 1.0:
        return BINS - 1
    return min(CELLS, math.floor(t * CELLS + 1e-7) + 1)
