"""Proper scores for multiple-choice and numeric forecasts against outcomes, and their proxy versions.

Every score is a per-forecast loss, lower is better, vectorised over forecasts (as :mod:`.proper` for yes/no ones).

Multiple choice (``probs`` of shape (N, m), ``outcome`` the index of the option that happened):

- :func:`multiclass_brier`: Σ_o (p_o - [o happened])², in [0, 2] (Brier's original sum over options; with two
  options it is twice the yes/no Brier score (p - y)²).
- :func:`multiclass_log`: -log p_outcome, the probability clipped below at ``eps`` as :func:`.proper.log_loss`
  does (a zero on what happened costs -log eps, 6.9 nats for 10⁻³).

Numeric and date (``cdf`` of shape (N, 201) on the question's grid, ``t`` the outcome's location on the scale,
see :mod:`consistency.distributions`):

- :func:`numeric_log`: Metaculus's treatment. Inside the range, minus the log of the forecast's density at the
  outcome, per unit of location (the range has length 1 on its scale, so a uniform forecast scores 0): the mass of
  the outcome's cell times 200. Outside an open bound, minus the log of the mass the forecast left beyond that
  bound. Beyond a closed bound the outcome is counted at the bound (a closed bound holds no mass beyond it). The
  density or mass is clipped below at ``eps``. Inside the range it is a density and outside a probability, as on
  Metaculus: compare it across questions through a baseline (Metaculus divides by the uniform forecast's), not raw.
- :func:`crps`: ∫₀¹ (F(t) - [t ≥ y])² dt over the range in location units, exactly for the CDF linear inside each
  cell; an outcome beyond a bound sits at the bound and the mass beyond the bounds enters through F at the bounds
  (the CRPS of the forecast censored to the range, which is proper for the censored outcome). In [0, 1].

Proxy scores (no outcome: score against an aggregate of the crowd's forecasts, see :mod:`.proxy`), in the loss form
of the quadratic proxy score there (constants dropped): :func:`proxy_multiclass_brier` Σ_o (p_o - a_o)² — the expected
multi-class Brier under the aggregate a, minus a term without p — and :func:`proxy_crps` ∫ (F - A)² dt, the expected
CRPS under the aggregate CDF A minus ∫ A (1 - A). Both are minimised by reporting the aggregate, as the yes/no
quadratic proxy is. :func:`pool` makes the aggregate: the mean of distributions (linear pool) or their normalised
geometric mean (Metaculus's peer-score aggregate), optionally leaving each forecaster out.

Difficulty adjustment (:mod:`.difficulty`): the two-way fixed-effects fit α_i + γ_j takes any per-forecast loss, so
multi-class Brier or CRPS values can be passed as its ``brier`` argument and peer scores compare them question by
question. What does not carry over is the final rescaling, which anchors the scale at a forecaster who always says
0.5 (Brier 0.25): for m options the uninformed forecast scores 1 - 1/m and for a numeric question the uniform CDF's
CRPS depends on the outcome, so scores of questions with different m or of different types should not be pooled
into one adjusted number.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import distributions as dist
from .inputs import ScoreInputError

FloatArray = NDArray[np.float64]
DEFAULT_EPS = 1e-3
_ROWS = 256  # CDFs per block: the grid's temporaries then stay in cache


def _choices(probs: ArrayLike, outcome: ArrayLike) -> tuple[FloatArray, NDArray[np.intp]]:
    p = np.asarray(probs, dtype=float)
    if p.ndim != 2 or p.shape[1] < 2:
        raise ScoreInputError(f"forecasts must have shape (N, options >= 2), got {p.shape}")
    bad = ~np.isfinite(p) | (p < 0) | (p > 1)
    if bad.any():
        raise ScoreInputError(f"forecast {int(np.argwhere(bad)[0][0])} has a probability outside [0, 1]")
    total = p.sum(axis=1)
    off = np.flatnonzero(np.abs(total - 1.0) > 1e-6)
    if off.size:
        raise ScoreInputError(f"forecast {off[0]}'s probabilities sum to {total[off[0]]:.6g}, not 1")
    y = np.asarray(outcome)
    if y.shape != (len(p),) or y.dtype.kind not in "iu" or (y < 0).any() or (y >= p.shape[1]).any():
        raise ScoreInputError(f"outcomes must be {len(p)} option indices from 0 to {p.shape[1] - 1}")
    return p, y.astype(np.intp)


def multiclass_brier(probs: ArrayLike, outcome: ArrayLike) -> FloatArray:
    """Σ_o (p_o - [o = outcome])² per forecast."""
    p, y = _choices(probs, outcome)
    rows = np.arange(len(p))
    return (p * p).sum(axis=1) - 2.0 * p[rows, y] + 1.0


def multiclass_log(probs: ArrayLike, outcome: ArrayLike, eps: float = DEFAULT_EPS, base: float = math.e) -> FloatArray:
    """-log p_outcome per forecast (``eps`` clips it below; ``base=2`` gives bits)."""
    if not 0.0 <= eps < 1.0:
        raise ScoreInputError(f"eps must be in [0, 1), got {eps!r}")
    p, y = _choices(probs, outcome)
    with np.errstate(divide="ignore"):
        return -np.log(np.maximum(p[np.arange(len(p)), y], eps)) / math.log(base)


def _cdfs(cdf: ArrayLike, check: bool = True) -> FloatArray:
    F = np.asarray(cdf, dtype=float)
    if F.ndim != 2 or F.shape[1] != dist.GRID_POINTS:
        raise ScoreInputError(f"CDFs must have shape (N, {dist.GRID_POINTS}), got {F.shape}")
    if check:
        for s in range(0, len(F), _ROWS):
            _check_block(F[s : s + _ROWS], s)
    return F


def _check_block(F: FloatArray, offset: int) -> None:
    """Values in [0, 1] that never decrease (NaN fails both tests); the error names the first bad CDF."""
    ok = (F[:, 0] >= 0) & (F[:, -1] <= 1) & (F[:, 1:] >= F[:, :-1]).all(axis=1)
    if not ok.all():
        raise ScoreInputError(f"CDF {offset + int(np.flatnonzero(~ok)[0])} is not a CDF in [0, 1] that never decreases")


def _locations(t: ArrayLike, n: int) -> FloatArray:
    loc = np.broadcast_to(np.asarray(t, dtype=float), (n,))
    if np.isnan(loc).any():
        raise ScoreInputError(f"outcome {int(np.flatnonzero(np.isnan(loc))[0])} has no location (NaN)")
    return loc


def numeric_log(
    cdf: ArrayLike,
    t: ArrayLike,
    open_lower: ArrayLike = True,
    open_upper: ArrayLike = True,
    eps: float = DEFAULT_EPS,
) -> FloatArray:
    """Minus the log density (per unit location) at the outcome, or of the mass beyond the bound it passed."""
    F = _cdfs(cdf)
    n = len(F)
    loc = _locations(t, n)
    lo = np.broadcast_to(np.asarray(open_lower, dtype=bool), (n,))
    hi = np.broadcast_to(np.asarray(open_upper, dtype=bool), (n,))
    loc = np.where((loc < 0) & ~lo, 0.0, np.where((loc > 1) & ~hi, 1.0, loc))  # closed: at the bound
    cell = np.clip(np.floor(np.clip(loc, 0.0, 1.0) * dist.CELLS + 1e-7).astype(np.intp) + 1, 1, dist.CELLS)
    rows = np.arange(n)
    inside = F[rows, cell] - F[rows, cell - 1]
    q = np.where(loc < 0, F[:, 0], np.where(loc > 1, 1.0 - F[:, -1], inside * dist.CELLS))
    with np.errstate(divide="ignore"):
        return -np.log(np.maximum(q, eps))


def crps(cdf: ArrayLike, t: ArrayLike) -> FloatArray:
    """∫₀¹ (F(t) - [t ≥ y])² dt per forecast, for the CDF linear in each of the 200 cells (y clipped to [0, 1])."""
    F = _cdfs(cdf, check=False)
    loc = np.clip(_locations(t, len(F)), 0.0, 1.0)
    out = np.empty(len(F))
    for s in range(0, len(F), _ROWS):
        block = F[s : s + _ROWS]
        _check_block(block, s)
        out[s : s + _ROWS] = _crps_block(block, loc[s : s + _ROWS])
    return out


def _crps_block(F: FloatArray, y: FloatArray) -> FloatArray:
    """Cell j runs from F_j = a to F_{j+1} = b over h = 1/200: ∫ F² = h (a² + ab + b²) / 3 before the outcome,
    ∫ (1 - F)² = that + h (1 - a - b) after it, and the outcome's own cell is split where it falls. The sums over
    cells come from Σ F², Σ F_j F_{j+1} and the running sum of F (three passes over the block)."""
    h = 1.0 / dist.CELLS
    n = len(F)
    sq = np.einsum("ij,ij->i", F, F)
    quad = 2.0 * sq - F[:, 0] ** 2 - F[:, -1] ** 2 + np.einsum("ij,ij->i", F[:, :-1], F[:, 1:])  # Σ a² + ab + b²
    run = np.cumsum(F, axis=1)
    J = np.minimum(np.floor(y * dist.CELLS).astype(np.intp), dist.CELLS - 1)  # the outcome's cell
    rows = np.arange(n)
    # Σ_{j > J} (a + b) over cells = Σ_{i = J+1}^{199} F_i + Σ_{i = J+2}^{200} F_i.
    later_sum = (run[:, -2] - run[rows, J]) + (run[:, -1] - run[rows, J + 1])
    total = h * quad / 3.0 + h * ((dist.CELLS - J - 1) - later_sum)
    # Cell J, counted above as "before": replace it by its split at y.
    a, b = F[rows, J], F[rows, J + 1]
    left = y - J * h
    c = a + (b - a) * left / h
    split = left * (a * a + a * c + c * c) / 3.0 + (h - left) * ((1 - c) ** 2 + (1 - c) * (1 - b) + (1 - b) ** 2) / 3.0
    return total - h * (a * a + a * b + b * b) / 3.0 + split


# ------------------------------------------------------------------------------------------ proxy scores
def pool(forecasts: ArrayLike, method: str = "mean", loo: bool = False) -> FloatArray:
    """The crowd's distribution per question from ``forecasts`` of shape (forecasters, questions, outcomes); a
    forecaster's NaN row is "did not forecast". ``mean``: the linear pool (for CDFs, the mean CDF);
    ``geometric``: the normalised geometric mean of probabilities (not for CDFs). With ``loo`` the result has the
    input's shape: forecaster i's aggregate leaves i out (NaN where nobody else forecast)."""
    X = np.asarray(forecasts, dtype=float)
    if X.ndim != 3:
        raise ScoreInputError(f"forecasts must have shape (forecasters, questions, outcomes), got {X.shape}")
    if method not in ("mean", "geometric"):
        raise ScoreInputError(f"method must be mean or geometric, got {method!r}")
    given = ~np.isnan(X).any(axis=2)  # (forecasters, questions)
    V = np.where(given[..., None], X, 0.0)
    if method == "geometric":
        with np.errstate(divide="ignore"):
            V = np.where(given[..., None], np.log(np.maximum(V, 1e-300)), 0.0)
    total, count = V.sum(axis=0), given.sum(axis=0)[..., None]
    if loo:
        total, count = total[None] - V, count[None] - given[..., None]
    with np.errstate(invalid="ignore", divide="ignore"):
        agg = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    if method == "geometric":
        agg = np.exp(agg - np.nanmax(agg, axis=-1, keepdims=True))
        agg = agg / agg.sum(axis=-1, keepdims=True)
    return agg


def proxy_multiclass_brier(probs: ArrayLike, aggregate: ArrayLike) -> FloatArray:
    """Σ_o (p_o - a_o)²: the quadratic proxy score of multiple-choice forecasts against the crowd's."""
    p, a = np.asarray(probs, dtype=float), np.asarray(aggregate, dtype=float)
    if p.shape != a.shape:
        raise ScoreInputError(f"forecasts {p.shape} and aggregates {a.shape} must have the same shape")
    return ((p - a) ** 2).sum(axis=-1)


def proxy_crps(cdf: ArrayLike, aggregate: ArrayLike) -> FloatArray:
    """∫₀¹ (F - A)² dt, exact for CDFs linear in each cell: the CRPS proxy score against the crowd's CDF."""
    D = _cdfs(cdf) - _cdfs(aggregate)
    h = 1.0 / dist.CELLS
    return h * (2.0 * (D * D).sum(axis=1) - D[:, 0] ** 2 - D[:, -1] ** 2 + (D[:, :-1] * D[:, 1:]).sum(axis=1)) / 3.0


# ------------------------------------------------------------------------------------------ one question
#: The proper scores of each non-yes/no question type, the one that ranks first (as :func:`outcome_losses` names
#: them); a results line records each under :func:`result_field`'s name.
SCORES_BY_TYPE: dict[str, tuple[str, ...]] = {
    "multiple_choice": ("brier", "log"),
    "numeric": ("crps", "log"),
    "date": ("crps", "log"),
}


def result_field(score: str) -> str:
    """Where a results line keeps ``score``: ``log_score_bits`` (logs in bits, as yes/no results), ``crps_score``."""
    return "log_score_bits" if score == "log" else f"{score}_score"


def outcome_losses(question, forecast, eps: float = DEFAULT_EPS) -> dict[str, float] | None:
    """The proper scores of one forecast of a resolved question: ``brier`` and ``log`` (yes/no, multiple choice),
    ``log`` and ``crps`` (numeric, date); None while the question is unresolved (or annulled)."""
    from ..models import ChoiceForecast, Forecast, NumericForecast
    from .proper import brier, log_loss

    if question.resolution is None:
        return None
    if isinstance(forecast, Forecast):
        y = [float(question.resolution)]
        return {"brier": float(brier([forecast.prob], y)[0]), "log": float(log_loss([forecast.prob], y, eps=eps)[0])}
    if isinstance(forecast, ChoiceForecast):
        p, y = [forecast.probs], [question.outcome_index()]
        return {"brier": float(multiclass_brier(p, y)[0]), "log": float(multiclass_log(p, y, eps=eps)[0])}
    assert isinstance(forecast, NumericForecast) and question.range is not None
    t = question.outcome_location()
    r = question.range
    return {
        "log": float(numeric_log([forecast.cdf], [t], r.open_lower, r.open_upper, eps=eps)[0]),
        "crps": float(crps([forecast.cdf], [t])[0]),
    }
