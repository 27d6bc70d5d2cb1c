"""Proxy scores: rank forecasters before questions resolve, by scoring them against the crowd.

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

Quadratic proxy score (lower is better): S_proxy(i; A) = (1/M_i) Σ_j (x_i^(j) − ŷ^(j))², the mean over
the M_i questions forecaster i answered and that have an aggregate. Witkowski et al. state the rule as
a reward, R_q(y, θ̂) = 1 − (y − θ̂)²; we use the loss form of the proxy-scoring paper, which drops the
constant 1 and flips the sign. Rankings and z-scores are the same either way (up to sign). With
``loo=True`` forecaster i is scored against ŷ_−i^(j), the aggregate without i (the paper's Appendix C),
which is what keeps the rule proper: forecaster i cannot move its own target.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .inputs import ScoreInputError, outcomes, probabilities
from .proper import absolute_error, brier, log_loss, zero_one
from .versus import Correlation, correlate

FloatArray = NDArray[np.float64]

__all__ = [
    "AGGREGATORS",
    "LOSSES",
    "BatchScores",
    "CorrelationTable",
    "aggregate",
    "batch_means",
    "batch_scores",
    "extremized_mean",
    "forecast_matrix",
    "logit_pool",
    "loo_aggregate",
    "mean",
    "median",
    "per_forecast_losses",
    "proxy_correlation_table",
    "proxy_losses",
    "proxy_scores",
    "zscore_within_batches",
]

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


def _params(method: str, given: Mapping[str, Any]) -> dict[str, float]:
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


def _row_means(L: FloatArray) -> FloatArray:
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


def _full(X: FloatArray, method: str, p: Mapping[str, float]) -> FloatArray:
    valid = ~np.isnan(X)
    if method == "median":
        return _median_of_sorted(*_sorted_stats(X, valid))
    if method == "logit_pool":
        agg = _col_mean(_logits(X, p["eps"]), valid)[1]
        agg *= p["d"]
        return _sigmoid_(agg)
    agg = _col_mean(X, valid)[1]
    return _extremize_(agg, p["alpha"]) if method == "extremized_mean" else agg


def _loo(X: FloatArray, method: str, p: Mapping[str, float]) -> FloatArray:
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
    p = _params(method, params)
    return _full(forecast_matrix(F), method, p)


def loo_aggregate(F: ArrayLike, method: str, **params: float) -> FloatArray:
    """Leave-one-out crowd forecasts, shape of F: entry (i, j) aggregates question j without forecaster i.

    NaN where no one else forecast j. Computed from per-question sums and counts (mean, logit pool,
    extremized mean) or a single sort (median), never by re-aggregating once per forecaster.
    """
    p = _params(method, params)
    return _loo(forecast_matrix(F), method, p)


# --------------------------------------------------------------------------- proxy scores


def proxy_losses(F: ArrayLike, method: str, loo: bool = False, **params: float) -> FloatArray:
    """Per-forecast quadratic proxy loss (x_i^(j) − ŷ^(j))², shape of F; NaN where not scored."""
    p = _params(method, params)
    X = forecast_matrix(F)
    if loo:
        D = _loo(X, method, p)
        np.subtract(X, D, out=D)
    else:
        D = X - _full(X, method, p)
    return np.square(D, out=D)


def proxy_scores(F: ArrayLike, method: str, loo: bool = False, **params: float) -> FloatArray:
    """S_proxy(i; A) per forecaster (lower is better), shape (n_forecasters,).

    Each forecaster is averaged over the questions it answered that have an aggregate, so a question
    nobody else forecast (LOO) or nobody at all forecast is skipped; NaN for a forecaster with none.
    """
    return _row_means(proxy_losses(F, method, loo, **params))


# --------------------------------------------------------------------------- batches and z-scores


def _batch_codes(batches: ArrayLike, shape: tuple[int, int]) -> tuple[NDArray[np.intp], list[Any]]:
    labels = np.asarray(batches)
    if labels.shape not in ((shape[1],), shape):
        raise ScoreInputError(
            f"batches must have shape ({shape[1]},) (one label per question) or {shape} (one per forecast), "
            f"got {labels.shape}"
        )
    names, codes = np.unique(labels, return_inverse=True)
    return np.broadcast_to(codes.reshape(labels.shape), shape), names.tolist()


def batch_means(L: ArrayLike, batches: ArrayLike) -> tuple[FloatArray, list[Any]]:
    """Mean of each forecaster's per-forecast values within each batch: (n_forecasters, n_batches), labels.

    NaN entries of ``L`` are skipped; NaN where a forecaster has nothing scored in a batch.
    """
    V = np.asarray(L, dtype=float)
    if V.ndim != 2:
        raise ScoreInputError(f"per-forecast values must be a 2-D array, got shape {V.shape}")
    codes, names = _batch_codes(batches, V.shape)
    B = len(names)
    flat = (np.arange(V.shape[0])[:, None] * B + codes).ravel()
    valid = ~np.isnan(V)
    total = np.bincount(flat, weights=np.where(valid, V, 0.0).ravel(), minlength=V.shape[0] * B)
    count = np.bincount(flat, weights=valid.ravel(), minlength=V.shape[0] * B)
    out = np.divide(total, count, out=np.full(total.shape, np.nan), where=count > 0)
    return out.reshape(V.shape[0], B), names


def zscore_within_batches(scores: ArrayLike, ddof: int = 0) -> FloatArray:
    """Standardise each batch (column) across the forecasters scored in it: z = (s − mean) / std.

    Scores on different question sets are not comparable (some batches are easier), so the
    proxy-scoring paper compares each model only with the others on the same batch, then pools the
    z-scores over batches. NaN entries are left out; a batch with fewer than ``ddof + 2`` scored
    forecasters or zero spread has no z-scores (NaN). ``ddof=0`` divides by n (population std).
    """
    S = np.asarray(scores, dtype=float)
    if S.ndim != 2:
        raise ScoreInputError(f"scores must be a 2-D array (n_forecasters, n_batches), got shape {S.shape}")
    valid = ~np.isnan(S)
    n = valid.sum(axis=0)
    mu = np.divide(np.where(valid, S, 0.0).sum(axis=0), n, out=np.zeros(S.shape[1]), where=n > 0)
    dev = np.where(valid, S - mu, 0.0)
    dof = n - ddof
    var = np.divide((dev * dev).sum(axis=0), dof, out=np.zeros(S.shape[1]), where=dof > 0)
    sd = np.sqrt(var)
    scale = np.max(np.abs(np.where(valid, S, 0.0)), axis=0, initial=0.0)
    ok = (n >= ddof + 2) & (sd > 1e-12 * np.maximum(scale, 1e-300))
    return np.where(valid & ok[None, :], dev / np.where(ok, sd, 1.0), np.nan)


# --------------------------------------------------------------------------- ground truth and correlation


#: Ground-truth losses of the proxy-scoring paper's Table 2 (lower is better), from :mod:`.proper`:
#: (x − y)², −y ln x − (1 − y) ln(1 − x) with x clipped to [1e-3, 1 − 1e-3], |x − y|, and the 0-1 loss.
#: Note :func:`.proper.zero_one` charges 0.5 for a forecast of exactly 0.5; the paper's 1{1{x ≥ 1/2} ≠ y}
#: counts it as a "yes".
LOSSES: Mapping[str, Callable[[ArrayLike, ArrayLike], FloatArray]] = {
    "brier": brier,
    "log": log_loss,
    "absolute": absolute_error,
    "zero_one": zero_one,
}


def _loss_matrix(X: FloatArray, res: FloatArray, loss: str) -> FloatArray:
    """``LOSSES[loss]`` of every forecast on a resolved question, shape of X; NaN elsewhere."""
    if loss not in LOSSES:
        raise ScoreInputError(f"unknown loss {loss!r}; expected one of: {', '.join(LOSSES)}")
    keep = ~np.isnan(X) & ~np.isnan(res)[None, :]
    out = np.full(X.shape, np.nan)
    if keep.any():
        out[keep] = LOSSES[loss](X[keep], np.broadcast_to(res, X.shape)[keep])
    return out


def _resolutions(y: ArrayLike, n_questions: int) -> FloatArray:
    raw = np.asarray(y, dtype=object)
    if raw.shape != (n_questions,):
        raise ScoreInputError(f"resolutions must have shape ({n_questions},) (one per question), got {raw.shape}")
    unresolved = np.array([v is None or (isinstance(v, float) and math.isnan(v)) for v in raw], dtype=bool)
    out = np.full(n_questions, np.nan)
    out[~unresolved] = outcomes(raw[~unresolved])
    return out


def per_forecast_losses(F: ArrayLike, y: ArrayLike, loss: str = "brier") -> FloatArray:
    """Ground-truth loss of every forecast, shape of F; NaN where missing or the question is unresolved (NaN/None)."""
    X = forecast_matrix(F)
    return _loss_matrix(X, _resolutions(y, X.shape[1]), loss)


@dataclass(frozen=True)
class CorrelationTable:
    """Pearson r per (proxy variant, ground-truth loss): the proxy-scoring paper's Table 2, one dataset.

    Rows are proxy variants (``"logit_pool"``, ``"logit_pool (LOO)"``, ...), columns are losses; ``n`` is
    the number of pooled (forecaster, batch) pairs behind each r. The paper's Table 1 is the brier column.
    """

    rows: tuple[str, ...]
    columns: tuple[str, ...]
    r: FloatArray
    n: NDArray[np.intp]

    def get(self, row: str, column: str) -> float:
        return float(self.r[self.rows.index(row), self.columns.index(column)])

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {row: dict(zip(self.columns, map(float, self.r[i]), strict=True)) for i, row in enumerate(self.rows)}

    def format(self) -> str:
        width = max(len(r) for r in self.rows)
        lines = [" " * width + "".join(f"{c:>10}" for c in self.columns)]
        lines += [row.ljust(width) + "".join(f"{v:>+10.3f}" for v in self.r[i]) for i, row in enumerate(self.rows)]
        return "\n".join(lines)


def _pearson(a: FloatArray, b: FloatArray) -> tuple[float, int]:
    keep = ~(np.isnan(a) | np.isnan(b))
    n = int(keep.sum())
    if n < 3:
        return math.nan, n
    u, v = a[keep] - a[keep].mean(), b[keep] - b[keep].mean()
    denom = math.sqrt(float(u @ u) * float(v @ v))
    return (float(u @ v) / denom if denom > 0 else math.nan), n


def proxy_correlation_table(
    F: ArrayLike,
    y: ArrayLike,
    batches: ArrayLike,
    methods: Sequence[str] = tuple(AGGREGATORS),
    loo: Sequence[bool] = (False, True),
    losses: Sequence[str] = tuple(LOSSES),
    params: Mapping[str, Mapping[str, float]] | None = None,
    ddof: int = 0,
) -> CorrelationTable:
    """How well each proxy ranks forecasters like a resolved-outcome loss would, as in the proxy-scoring paper.

    Procedure (its Sections 3-4.2): keep resolved questions only; per (forecaster, batch) average the
    per-forecast proxy loss and, separately, the per-forecast true loss; z-score each within its batch
    across forecasters; pool all (forecaster, batch) pairs and take Pearson's r between the two z-scores.
    Positive r means the proxy agrees with the ground truth (both are "lower is better").
    """
    params = params or {}
    for method in methods:
        _params(method, params.get(method, {}))  # fail before any work
    for loss in losses:
        if loss not in LOSSES:
            raise ScoreInputError(f"unknown loss {loss!r}; expected one of: {', '.join(LOSSES)}")
    if ddof not in (0, 1):
        raise ScoreInputError(f"ddof must be 0 or 1, got {ddof!r}")
    X = forecast_matrix(F)
    res = _resolutions(y, X.shape[1])
    keep = ~np.isnan(res)
    if not keep.any():
        raise ScoreInputError("no question is resolved: the correlation needs resolutions")
    codes, _ = _batch_codes(batches, X.shape)
    Xr, res, codes = X[:, keep], res[keep], codes[:, keep]
    if np.isnan(Xr).all():
        raise ScoreInputError("forecasts on the resolved questions are all NaN")
    truth = [zscore_within_batches(batch_means(_loss_matrix(Xr, res, loss), codes)[0], ddof) for loss in losses]
    rows: list[str] = []
    r = np.full((len(methods) * len(loo), len(losses)), np.nan)
    n = np.zeros(r.shape, dtype=np.intp)
    for method in methods:
        for flag in loo:
            z = zscore_within_batches(
                batch_means(proxy_losses(Xr, method, flag, **params.get(method, {})), codes)[0], ddof
            )
            i = len(rows)
            rows.append(f"{method} (LOO)" if flag else method)
            for k, t in enumerate(truth):
                r[i, k], n[i, k] = _pearson(z.ravel(), t.ravel())
    return CorrelationTable(tuple(rows), tuple(losses), r, n)


# --------------------------------------------------------------------------- per-batch scores for reports


@dataclass(frozen=True)
class BatchScores:
    """Each forecaster's mean ground-truth loss and mean proxy loss per batch, on resolved questions only.

    ``truth`` and every ``proxy[method]`` have shape (n_forecasters, n_batches), NaN where a forecaster
    answered nothing resolved in a batch; ``n`` counts the questions behind each entry. These are the
    (model, batch) observations that the proxy-scoring paper z-scores within batches and correlates.
    """

    batches: tuple[Any, ...]
    truth: FloatArray
    proxy: Mapping[str, FloatArray]
    n: NDArray[np.intp]

    def zscored(self) -> BatchScores:
        """The same observations standardised within each batch across forecasters (population std)."""
        return BatchScores(
            self.batches,
            zscore_within_batches(self.truth),
            {m: zscore_within_batches(v) for m, v in self.proxy.items()},
            self.n,
        )

    def correlations(self, bootstrap: int = 1000, seed: int = 0) -> dict[str, tuple[Correlation, Correlation]]:
        """Per method, (Pearson, Spearman) between proxy and truth over all pooled (forecaster, batch) entries."""
        t = self.truth.ravel()
        return {
            m: (
                correlate(v.ravel(), t, bootstrap=bootstrap, seed=seed),
                correlate(v.ravel(), t, bootstrap=bootstrap, seed=seed, spearman=True),
            )
            for m, v in self.proxy.items()
        }

    def future(
        self, order: Sequence[Any] | None = None, bootstrap: int = 1000, seed: int = 0
    ) -> dict[str, Correlation]:
        """Predicting the next batch: Pearson r of each score on batch T with the truth on batch T + 1.

        Pooled over consecutive pairs of ``order`` (default: the batches sorted) and the forecasters
        present in both; key ``"truth"`` is the truth on T itself, the baseline a proxy is measured against.
        """
        order = list(self.batches if order is None else order)
        unknown = [b for b in order if b not in self.batches]
        if unknown or len(order) < 2:
            raise ScoreInputError(
                f"predicting the next batch needs two or more of the batches {list(self.batches)}; got {order}"
            )
        cols = [self.batches.index(b) for b in order]
        later = np.concatenate([self.truth[:, b] for b in cols[1:]])
        sources = {"truth": self.truth, **self.proxy}
        return {
            name: correlate(np.concatenate([v[:, a] for a in cols[:-1]]), later, bootstrap=bootstrap, seed=seed)
            for name, v in sources.items()
        }


def batch_scores(
    F: ArrayLike,
    y: ArrayLike,
    batches: ArrayLike,
    methods: Sequence[str] = tuple(AGGREGATORS),
    loo: bool = True,
    loss: str = "brier",
    params: Mapping[str, Mapping[str, float]] | None = None,
) -> BatchScores:
    """Mean ``loss`` against outcomes and mean quadratic proxy loss per (forecaster, batch).

    As in the proxy-scoring paper, only resolved questions enter, and the aggregate of a question is
    taken over every forecaster who answered it (without forecaster i itself when ``loo``).
    """
    params = params or {}
    for method in methods:
        _params(method, params.get(method, {}))  # fail before any work
    X = forecast_matrix(F)
    res = _resolutions(y, X.shape[1])
    keep = ~np.isnan(res)
    if not keep.any():
        raise ScoreInputError("no question is resolved: scoring against outcomes needs resolutions")
    labels = np.asarray(batches)
    _batch_codes(labels, X.shape)  # shape check before filtering
    Xr, res = X[:, keep], res[keep]
    codes, names = _batch_codes(labels[..., keep], Xr.shape)
    truth, _ = batch_means(_loss_matrix(Xr, res, loss), codes)
    proxy = {m: batch_means(proxy_losses(Xr, m, loo, **params.get(m, {})), codes)[0] for m in methods}
    answered = ~np.isnan(Xr)
    counts = np.stack([np.count_nonzero(answered & (codes == b), axis=1) for b in range(len(names))], axis=1)
    return BatchScores(tuple(names), truth, proxy, counts)
