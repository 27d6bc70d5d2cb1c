"""Crowd forecasts: the aggregates that proxy scores (:mod:`.proxy`) score forecasters against.

Sources: Witkowski, Atanasov, Ungar and Krause, "Proper Proxy Scoring Rules" (AAAI 2017), and
"Proxy Scoring Enables Benchmarking LLM Forecasters Without Waiting for Outcomes" (the proxy-scoring
paper below). A forecast matrix ``F`` has shape ``(n_forecasters, n_questions)``; NaN means "did not
forecast" and is ignored everywhere. In the proxy-scoring paper's notation ``x_i^(j) = F[i, j]``.

Aggregates ``ŷ^(j) = A(x_1^(j), ..., x_N^(j))`` over the forecasters who answered question j:

* ``mean``:            x̄ = (1/N_j) Σ_i x_i
* ``median``:          the usual median (mean of the two middle values when N_j is even)
* ``extremized_mean``: x̄^α / (x̄^α + (1 − x̄)^α), α = 2 (Witkowski et al., Definition 11)
* ``logit_pool``:      σ(d · (1/N_j) Σ_i log(x_i / (1 − x_i))), d = √3, σ(z) = 1 / (1 + e^−z), each x_i
  first clipped to [10⁻³, 1 − 10⁻³] (proxy-scoring paper, Section 2 and Appendix A.2)

All of them, and their leave-one-out versions, work on the whole matrix at once (no loop over
forecasters or questions).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .inputs import ScoreInputError, probabilities

FloatArray = NDArray[np.float64]

#: Forecasts are clipped to [EPS, 1 − EPS] before any log (logit pool, log loss), as in Appendix A.2.
EPS = 1e-3


# --------------------------------------------------------------------------- validation


def forecast_matrix(F: ArrayLike, name: str = "forecasts") -> FloatArray:
    """F as a float matrix, or a precise ScoreInputError; NaN (missing) is allowed, anything else must be in [0, 1]."""
    try:
        X = np.asarray(F, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ScoreInputError(f"{name} must be numeric (NaN for a missing forecast): {exc}") from None
    if X.ndim != 2:
        raise ScoreInputError(f"{name} must be a 2-D array of shape (n_forecasters, n_questions), got shape {X.shape}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ScoreInputError(f"{name} needs at least one forecaster and one question, got shape {X.shape}")
    # fmin/fmax skip NaN and need no temporary: one cheap pass each over a large matrix.
    lo, hi = np.fmin.reduce(X, axis=None), np.fmax.reduce(X, axis=None)
    if np.isnan(lo):
        raise ScoreInputError(f"{name} are all NaN: there is no forecast to aggregate or score")
    if not (lo >= 0.0 and hi <= 1.0):
        probabilities(np.where(np.isnan(X), 0.5, X), name)  # raises, naming the offending cells
    return X


def method_params(method: str, given: Mapping[str, Any]) -> dict[str, float]:
    if method not in _DEFAULTS:
        raise ScoreInputError(f"unknown aggregation method {method!r}; expected one of: {', '.join(_DEFAULTS)}")
    defaults = _DEFAULTS[method]
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        accepted = ", ".join(defaults) or "none"
        raise ScoreInputError(f"{method} got unexpected parameter(s) {', '.join(unknown)}; accepted: {accepted}")
    out = {**defaults, **given}
    for key, value in out.items():
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise ScoreInputError(f"{method}: {key} must be a number, got {value!r}") from None
        if not math.isfinite(v) or v <= 0 or (key == "eps" and v >= 0.5):
            bound = "in (0, 0.5)" if key == "eps" else "> 0"
            raise ScoreInputError(f"{method}: {key} must be a finite number {bound}, got {value!r}")
        out[key] = v
    return out


# --------------------------------------------------------------------------- numerics
# The helpers below work in place where they can: on 100 x 100,000 forecasts every avoided
# temporary saves a pass over 80 MB, and that, not arithmetic, is what the benchmark measures.


def _sigmoid_(z: FloatArray) -> FloatArray:
    """σ(z) in place, as (1 + tanh(z/2)) / 2: exact at ±inf and never overflows, unlike 1 / (1 + exp(−z))."""
    z *= 0.5
    np.tanh(z, out=z)
    z += 1.0
    z *= 0.5
    return z


def _extremize_(p: FloatArray, alpha: float) -> FloatArray:
    """p^α / (p^α + (1 − p)^α) in place, computed as σ(α · logit p): same value, but 0 ↦ 0 and 1 ↦ 1
    exactly and no 0/0 when both powers underflow."""
    with np.errstate(divide="ignore"):
        np.divide(p, 1.0 - p, out=p)
        np.log(p, out=p)
    p *= alpha
    return _sigmoid_(p)


def _logits(X: FloatArray, eps: float) -> FloatArray:
    """log(x / (1 − x)) of x clipped to [eps, 1 − eps]; NaN stays NaN."""
    C = np.clip(X, eps, 1.0 - eps)
    np.divide(C, 1.0 - C, out=C)
    return np.log(C, out=C)


def _col_mean(V: FloatArray, valid: NDArray[np.bool_]) -> tuple[FloatArray, FloatArray, NDArray[np.intp]]:
    """Per-question sum, mean (NaN where nobody answered) and count of the entries in ``valid``."""
    total = np.add.reduce(V, axis=0, where=valid)
    count = np.count_nonzero(valid, axis=0)
    mean_ = np.divide(total, count, out=np.full(total.shape, np.nan), where=count > 0)
    return total, mean_, count


def _loo_col_mean(V: FloatArray, valid: NDArray[np.bool_]) -> FloatArray:
    """(N, M) mean of column j without row i, (S_j − v_ij) / (n_j − 1); the full mean where i did not answer."""
    total, full, count = _col_mean(V, valid)
    inv = np.divide(1.0, count - 1, out=np.full(total.shape, np.nan), where=count > 1)
    out = np.subtract(total, V)  # NaN where i did not answer; fixed below
    out *= inv
    np.copyto(out, np.broadcast_to(full, out.shape), where=~valid)
    return out


def row_means(L: FloatArray) -> FloatArray:
    valid = ~np.isnan(L)
    count = np.count_nonzero(valid, axis=1)
    total = np.add.reduce(L, axis=1, where=valid)
    return np.divide(total, count, out=np.full(total.shape, np.nan), where=count > 0)


# --------------------------------------------------------------------------- aggregators


def mean(F: ArrayLike) -> FloatArray:
    """Plain mean per question: the proxy-scoring paper's baseline, which it finds too compressed towards 1/2."""
    return aggregate(F, "mean")


def median(F: ArrayLike) -> FloatArray:
    """Median per question (mean of the two middle forecasts when their number is even)."""
    return aggregate(F, "median")


def extremized_mean(F: ArrayLike, alpha: float = 2.0) -> FloatArray:
    """Mean pushed away from 1/2: x̄^α / (x̄^α + (1 − x̄)^α), Definition 11 of "Proper Proxy Scoring Rules".

    Averaging forecasters who each hold part of the evidence gives a forecast less extreme than their
    pooled evidence warrants; α > 1 undoes that, so the proxy is closer to unbiased for the truth.
    """
    return aggregate(F, "extremized_mean", alpha=alpha)


def logit_pool(F: ArrayLike, d: float = math.sqrt(3.0), eps: float = EPS) -> FloatArray:
    """σ(d · mean log-odds), forecasts clipped to [eps, 1 − eps]: the best proxy in the proxy-scoring paper.

    Averaging in log-odds space and scaling by d > 1 extremizes the crowd; d = √3 follows the paper
    (after Neyman and Roughgarden). The clip keeps a single 0 or 1 from dominating the pool.
    """
    return aggregate(F, "logit_pool", d=d, eps=eps)


Aggregator = Callable[..., FloatArray]

#: The four aggregators of the proxy-scoring paper, by name.
AGGREGATORS: Mapping[str, Aggregator] = {
    "mean": mean,
    "median": median,
    "extremized_mean": extremized_mean,
    "logit_pool": logit_pool,
}

_DEFAULTS: dict[str, dict[str, float]] = {
    "mean": {},
    "median": {},
    "extremized_mean": {"alpha": 2.0},
    "logit_pool": {"d": math.sqrt(3.0), "eps": EPS},
}


def _sorted_stats(X: FloatArray, valid: NDArray[np.bool_]) -> tuple[FloatArray, NDArray[np.intp]]:
    return np.sort(X, axis=0), np.count_nonzero(valid, axis=0)  # NaN sorts last


def _gather(S: FloatArray, k: NDArray[np.intp], ok: NDArray[np.bool_]) -> FloatArray:
    """S[k_j, j] per column; NaN where not ``ok`` (k may be out of range there)."""
    got = np.take_along_axis(S, np.clip(k, 0, S.shape[0] - 1)[None, :], axis=0)[0]
    return np.where(ok, got, np.nan)


def _median_of_sorted(S: FloatArray, n: NDArray[np.intp]) -> FloatArray:
    ok = n > 0
    return 0.5 * (_gather(S, (n - 1) // 2, ok) + _gather(S, n // 2, ok))


def aggregate_matrix(X: FloatArray, method: str, p: Mapping[str, float]) -> FloatArray:
    valid = ~np.isnan(X)
    if method == "median":
        return _median_of_sorted(*_sorted_stats(X, valid))
    if method == "logit_pool":
        agg = _col_mean(_logits(X, p["eps"]), valid)[1]
        agg *= p["d"]
        return _sigmoid_(agg)
    agg = _col_mean(X, valid)[1]
    return _extremize_(agg, p["alpha"]) if method == "extremized_mean" else agg


def loo_aggregate_matrix(X: FloatArray, method: str, p: Mapping[str, float]) -> FloatArray:
    valid = ~np.isnan(X)
    if method == "median":
        return _loo_median(X, valid)
    if method == "logit_pool":
        agg = _loo_col_mean(_logits(X, p["eps"]), valid)
        agg *= p["d"]
        return _sigmoid_(agg)
    agg = _loo_col_mean(X, valid)
    return _extremize_(agg, p["alpha"]) if method == "extremized_mean" else agg


def _loo_median(X: FloatArray, valid: NDArray[np.bool_]) -> FloatArray:
    """Median of each column without row i, from one sort: no loop over forecasters.

    Take i's rank r as the number of values strictly below x_i (any tied position removes the same
    value). Dropping position r shifts sorted position k to k + 1 when r ≤ k, i.e. when s_k ≥ x_i, so
    the reduced list's k-th value is ``s_k if s_k < x_i else s_(k+1)``. With m = n − 1 values left the
    median is the mean of reduced positions (m − 1) // 2 and m // 2, which depend on the column only.
    """
    S, n = _sorted_stats(X, valid)
    m, ok = n - 1, n > 1  # NaN wherever no one else answered

    def reduced(k: NDArray[np.intp]) -> FloatArray:
        here, after = _gather(S, k, ok), _gather(S, k + 1, ok)
        return np.where(here < X, here, after)

    out = reduced((m - 1) // 2)
    out += reduced(m // 2)
    out *= 0.5
    np.copyto(out, np.broadcast_to(_median_of_sorted(S, n), out.shape), where=~valid)
    return out


def aggregate(F: ArrayLike, method: str, **params: float) -> FloatArray:
    """The crowd forecast per question, shape (n_questions,); NaN where nobody forecast."""
    p = method_params(method, params)
    return aggregate_matrix(forecast_matrix(F), method, p)


def loo_aggregate(F: ArrayLike, method: str, **params: float) -> FloatArray:
    """Leave-one-out crowd forecasts, shape of F: entry (i, j) aggregates question j without forecaster i.

    NaN where no one else forecast j. Computed from per-question sums and counts (mean, logit pool,
    extremized mean) or a single sort (median), never by re-aggregating once per forecaster.
    """
    p = method_params(method, params)
    return loo_aggregate_matrix(forecast_matrix(F), method, p)
