"""Proper scores and calibration for binary forecasts: per-forecast losses, calibration tables, ECE, Murphy.

Every loss is per forecast and lower is better, so losses can be averaged, weighted, bootstrapped or
compared question by question by the caller. Calibration is summarised from sample-weighted bins.
Inputs go through :mod:`.inputs`, so a bad probability or resolution fails loudly with its position.

The paper's ground-truth files use Brier = (p - y)² and a base-2 log score (``log_loss(..., base=2)``);
its calibration error and Brier decomposition use other conventions, see ``tests/accuracy/test_accuracy_proper.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .inputs import ScoreInputError, outcomes, probabilities
from .inputs import weights as valid_weights

FloatArray = NDArray[np.float64]

#: Default clipping for the log loss: a forecast of exactly 0 or 1 costs at most -ln(1e-3) ≈ 6.9 nats.
DEFAULT_EPS = 1e-3


def _pair(p: ArrayLike, y: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Validated forecasts and 0/1 outcomes of the same shape; mismatches name both sizes."""
    probs = probabilities(p)
    ys = outcomes(y)
    if probs.shape != ys.shape:
        if probs.ndim == ys.ndim == 1:
            got = f"{probs.shape[0]} forecasts and {ys.shape[0]} resolutions"
        else:
            got = f"forecasts of shape {probs.shape} and resolutions of shape {ys.shape}"
        raise ScoreInputError(f"forecasts and resolutions must have the same length; got {got}")
    return probs, ys


def _sample(p: ArrayLike, y: ArrayLike, weights: ArrayLike | None) -> tuple[FloatArray, FloatArray, FloatArray]:
    """A non-empty 1-D sample with one weight per forecast: what every binned summary needs."""
    probs, ys = _pair(p, y)
    if probs.ndim != 1:
        raise ScoreInputError(f"forecasts must be one-dimensional, got shape {probs.shape}")
    if probs.size == 0:
        raise ScoreInputError("no forecasts to score")
    return probs, ys, valid_weights(weights, probs.size)


# --- per-forecast losses -------------------------------------------------------------------------


def brier(p: ArrayLike, y: ArrayLike) -> FloatArray:
    """Squared error (p - y)², in [0, 1]: the quadratic proper score, bounded so one forecast can't dominate."""
    probs, ys = _pair(p, y)
    return (probs - ys) ** 2


def log_loss(p: ArrayLike, y: ArrayLike, eps: float = DEFAULT_EPS, base: float = math.e) -> FloatArray:
    """Minus the log (natural by default) of the probability given to what happened.

    ``p`` is first clipped to [eps, 1 - eps] so a confident miss costs at most -log(eps) rather than
    infinity; ``eps=0`` gives the unclipped (possibly infinite) score. ``base=2`` gives bits, the unit
    of the paper's ``log_score``.
    """
    if not 0.0 <= eps < 0.5:
        raise ScoreInputError(f"eps must be in [0, 0.5), got {eps!r}")
    if not base > 0 or base == 1:
        raise ScoreInputError(f"base must be positive and not 1, got {base!r}")
    probs, ys = _pair(p, y)
    clipped = np.clip(probs, eps, 1.0 - eps)
    on_outcome = np.where(ys == 1.0, clipped, 1.0 - clipped)
    with np.errstate(divide="ignore"):
        return -np.log(on_outcome) / math.log(base)


def absolute_error(p: ArrayLike, y: ArrayLike) -> FloatArray:
    """|p - y|. Not proper (it rewards pushing forecasts to 0 or 1); kept as a familiar baseline."""
    probs, ys = _pair(p, y)
    return np.abs(probs - ys)


def zero_one(p: ArrayLike, y: ArrayLike) -> FloatArray:
    """1 when the forecast is on the wrong side of 0.5, else 0; exactly 0.5 is a tie and costs 0.5.

    Counting 0.5 as half wrong keeps the loss symmetric in yes/no, so relabelling outcomes can't change it.
    """
    probs, ys = _pair(p, y)
    wrong = ((probs > 0.5) != (ys == 1.0)).astype(float)
    return np.where(probs == 0.5, 0.5, wrong)


def mean_score(loss_values: ArrayLike, weights: ArrayLike | None = None) -> float:
    """The (sample-weighted) mean of per-forecast losses; NaN losses are an error rather than skipped."""
    values = np.asarray(loss_values, dtype=float)
    if values.ndim != 1:
        raise ScoreInputError(f"loss values must be one-dimensional, got shape {values.shape}")
    if values.size == 0:
        raise ScoreInputError("no loss values to average")
    if np.isnan(values).any():
        raise ScoreInputError(f"loss values contain NaN at positions {np.flatnonzero(np.isnan(values))[:3].tolist()}")
    w = valid_weights(weights, values.size)
    return float(np.sum(w * values) / np.sum(w))


# --- calibration ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CalibrationTable:
    """One row per bin, all bins kept (empty ones too) so rows line up with ``edges`` across forecasters.

    ``edges`` has one more entry than there are bins, or is None when forecasts were grouped by their
    exact values (then ``mean_forecast`` is each group's value). Means are NaN where a bin has no weight.
    """

    edges: FloatArray | None
    count: NDArray[np.int64]  # forecasts in the bin
    weight: FloatArray  # summed sample weight W_b
    mean_forecast: FloatArray  # weighted mean forecast p̄_b
    frequency: FloatArray  # weighted observed frequency ȳ_b

    @property
    def n_bins(self) -> int:
        """Number of rows, including empty bins."""
        return int(self.count.size)


def _edges(bins: int | ArrayLike) -> FloatArray:
    """Bin edges on [0, 1]: k/bins for an int (so a forecast typed as 0.3 falls in [0.3, 0.4)), or as given."""
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        if bins < 1:
            raise ScoreInputError(f"bins must be at least 1, got {bins}")
        return np.arange(int(bins) + 1) / int(bins)
    edges = np.asarray(bins, dtype=float)
    if edges.ndim != 1 or edges.size < 2:
        raise ScoreInputError(f"bins must be an int, None or at least two edges, got {bins!r}")
    if edges[0] != 0.0 or edges[-1] != 1.0 or np.any(np.diff(edges) <= 0):
        raise ScoreInputError(f"bin edges must increase strictly from 0 to 1, got {edges.tolist()}")
    return edges


def calibration_table(
    p: ArrayLike, y: ArrayLike, bins: int | ArrayLike | None = 10, weights: ArrayLike | None = None
) -> CalibrationTable:
    """Reliability-diagram data: count, weight, weighted mean forecast and outcome frequency per bin.

    ``bins`` is a number of equal-width bins [k/bins, (k+1)/bins) with the last one closed at 1, a
    sequence of edges from 0 to 1 (same half-open rule), or None for one bin per distinct forecast value.
    """
    return _table(*_sample(p, y, weights), bins)


def _table(probs: FloatArray, ys: FloatArray, w: FloatArray, bins: int | ArrayLike | None) -> CalibrationTable:
    """The table from already validated arrays, so composite scores validate their inputs once."""
    if bins is None:
        edges = None
        _, index = np.unique(probs, return_inverse=True)
        n = int(index.max()) + 1
    else:
        edges = _edges(bins)
        n = edges.size - 1
        index = np.clip(np.searchsorted(edges, probs, side="right") - 1, 0, n - 1)
    count = np.bincount(index, minlength=n).astype(np.int64)
    weight = np.bincount(index, weights=w, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_forecast = np.where(weight > 0, np.bincount(index, weights=w * probs, minlength=n) / weight, np.nan)
        frequency = np.where(weight > 0, np.bincount(index, weights=w * ys, minlength=n) / weight, np.nan)
    return CalibrationTable(edges, count, weight, mean_forecast, frequency)


def expected_calibration_error(
    p: ArrayLike, y: ArrayLike, bins: int | ArrayLike | None = 10, weights: ArrayLike | None = None
) -> float:
    """Σ_b (W_b / W) |ȳ_b - p̄_b|: the weight-averaged gap between forecast and frequency over bins.

    Bins are weighted by their share of the sample, so a sparsely used bin can't dominate (the paper's
    ``calibration_error`` instead averages the non-empty bins equally).
    """
    table = calibration_table(p, y, bins, weights)
    used = table.weight > 0
    gaps = np.abs(table.frequency[used] - table.mean_forecast[used])
    return float(np.sum(table.weight[used] * gaps) / np.sum(table.weight))


@dataclass(frozen=True)
class MurphyDecomposition:
    """Brier ≈ reliability - resolution + uncertainty (Murphy 1973), all sample-weighted means."""

    reliability: float  # Σ_b W_b (p̄_b - ȳ_b)² / W: miscalibration, lower is better
    resolution: float  # Σ_b W_b (ȳ_b - ȳ)² / W: how far bins' frequencies move from the base rate
    uncertainty: float  # ȳ (1 - ȳ): the Brier score of always forecasting the base rate

    @property
    def brier(self) -> float:
        """reliability - resolution + uncertainty: the mean Brier score when binned exactly."""
        return self.reliability - self.resolution + self.uncertainty


def murphy_decomposition(
    p: ArrayLike, y: ArrayLike, bins: int | ArrayLike | None = None, weights: ArrayLike | None = None
) -> MurphyDecomposition:
    """Split the (weighted) mean Brier score into miscalibration, resolution and base-rate uncertainty.

    With ``bins=None`` forecasts are grouped by their exact values and the three terms add up to the mean
    Brier score exactly (up to rounding). With coarser bins the within-bin terms, Σ w (p - p̄_b)² / W
    minus twice the within-bin covariance of p and y, are ignored, so the sum is only approximate.
    """
    probs, ys, w = _sample(p, y, weights)
    table = _table(probs, ys, w, bins)
    used = table.weight > 0
    total = float(np.sum(w))
    base_rate = float(np.sum(w * ys) / total)
    wb, pb, yb = table.weight[used], table.mean_forecast[used], table.frequency[used]
    return MurphyDecomposition(
        reliability=float(np.sum(wb * (pb - yb) ** 2) / total),
        resolution=float(np.sum(wb * (yb - base_rate) ** 2) / total),
        uncertainty=base_rate * (1.0 - base_rate),
    )
