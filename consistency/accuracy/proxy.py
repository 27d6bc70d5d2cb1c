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

from .aggregates import (
    AGGREGATORS,
    FloatArray,
    aggregate,
    aggregate_matrix,
    extremized_mean,
    forecast_matrix,
    logit_pool,
    loo_aggregate,
    loo_aggregate_matrix,
    mean,
    median,
    method_params,
    row_means,
)
from .inputs import ScoreInputError, outcomes
from .proper import absolute_error, brier, log_loss, zero_one
from .versus import Correlation, correlate

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


# --------------------------------------------------------------------------- proxy scores


def proxy_losses(F: ArrayLike, method: str, loo: bool = False, **params: float) -> FloatArray:
    """Per-forecast quadratic proxy loss (x_i^(j) − ŷ^(j))², shape of F; NaN where not scored."""
    p = method_params(method, params)
    X = forecast_matrix(F)
    if loo:
        D = loo_aggregate_matrix(X, method, p)
        np.subtract(X, D, out=D)
    else:
        D = X - aggregate_matrix(X, method, p)
    return np.square(D, out=D)


def proxy_scores(F: ArrayLike, method: str, loo: bool = False, **params: float) -> FloatArray:
    """S_proxy(i; A) per forecaster (lower is better), shape (n_forecasters,).

    Each forecaster is averaged over the questions it answered that have an aggregate, so a question
    nobody else forecast (LOO) or nobody at all forecast is skipped; NaN for a forecaster with none.
    """
    return row_means(proxy_losses(F, method, loo, **params))


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
        method_params(method, params.get(method, {}))  # fail before any work
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
        method_params(method, params.get(method, {}))  # fail before any work
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
