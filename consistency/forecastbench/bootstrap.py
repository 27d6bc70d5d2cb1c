"""ForecastBench's question-level bootstrap, all replicates at once.

ForecastBench draws, for every replicate, the questions of each (due date, source) group with
replacement, refits the two-way fixed effects on the drawn panel and recomputes every score. A
question drawn k times is k copies of its rows, which is the same least-squares problem as its rows
weighted by k, so a replicate is a vector of question weights ``w`` and the fit is solved in closed
form per replicate. With the forecasters fitted (F of them, a handful) and

    b̄_j = mean of b_ij over j's fitted forecasters,    c_j = their number,
    M = Σ_j w_j (diag(1_j) − 1_j 1_jᵀ / c_j),            r = Σ_j w_j 1_j ∘ (b_j − b̄_j),

the forecaster effects solve M α = r (with Σα = 0: M's null space is the constant vector on a
connected panel, and r sums to 0), γ_j = b̄_j − mean of α over j's fitted forecasters, and every
forecaster's rescaled score is Σ_j w_j (b_ij − γ_j) / Σ_j w_j + Σ_j w_j γ_j / Σ_j w_j over its rows
and over all questions. M depends on the weights only through the total weight of each pattern of
fitted forecasters, so it is a sum of a few fixed matrices. With unit weights this is exactly the
fit of :func:`consistency.accuracy.difficulty.difficulty_adjusted_brier` (tested against it), which
gives the point estimates; this module exists for the thousands of weighted refits.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

#: Cells of a replicates × questions block held at once (about 16 MB of float64).
_BLOCK = 2_000_000


def weight_blocks(groups: np.ndarray, replicates: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Question weights (multiplicities) for ``replicates`` stratified draws, in blocks of rows.

    Each question's slot is refilled by a question drawn uniformly from its own group, so every group
    keeps its size in every replicate, as ForecastBench's per-(due date, source) resampling does.
    """
    groups = np.asarray(groups)
    order = np.argsort(groups, kind="stable")
    _, start, size = np.unique(groups[order], return_index=True, return_counts=True)
    slot_group = np.repeat(np.arange(len(size)), size)  # group of each slot, in sorted order
    n = len(groups)
    per_block = max(1, min(replicates, _BLOCK // max(n, 1)))
    done = 0
    while done < replicates:
        r = min(per_block, replicates - done)
        pick = start[slot_group] + (rng.random((r, n)) * size[slot_group]).astype(np.int64)
        pick = np.minimum(pick, start[slot_group] + size[slot_group] - 1)
        chosen = order[pick]  # question index drawn into each slot
        flat = chosen + (np.arange(r)[:, None] * n)
        yield np.bincount(flat.ravel(), minlength=r * n).reshape(r, n).astype(float)
        done += r


def weighted_scores(
    brier: np.ndarray,
    fitted: np.ndarray,
    weights: np.ndarray,
    gamma: np.ndarray | None = None,
    shift: float | None = None,
) -> np.ndarray:
    """Rescaled difficulty-adjusted Brier per replicate and forecaster, shape (R, F).

    ``brier`` is questions × forecasters with NaN where a forecaster has no row; ``fitted`` marks the
    forecasters whose rows estimate the difficulties; ``weights`` is replicates × questions. Given
    ``gamma`` (per question) the difficulties are taken as they are (and ``shift``, if given, replaces
    the weighted mean of γ): a published fixed-effects file.
    """
    observed = np.isfinite(brier)
    b0 = np.where(observed, brier, 0.0)
    obs = observed.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        if gamma is None:
            g = _fitted_gamma(b0, observed[:, fitted], weights, fitted)
        else:
            g = np.broadcast_to(np.asarray(gamma, dtype=float), weights.shape)
        wg = weights * g
        total = weights.sum(axis=1)
        offset = wg.sum(axis=1) / total if shift is None else np.full(len(weights), float(shift))
        return (weights @ b0 - wg @ obs) / (weights @ obs) + offset[:, None]


def _fitted_gamma(b0: np.ndarray, af: np.ndarray, weights: np.ndarray, fitted: np.ndarray) -> np.ndarray:
    """γ per replicate and question (R, Q) from the weighted fit on the fitted forecasters' rows."""
    bf = b0[:, fitted]
    count = af.sum(axis=1).astype(float)
    count[count == 0] = 1.0  # questions without fitted rows are refused before this point
    bbar = bf.sum(axis=1) / count
    centred = np.where(af, bf - bbar[:, None], 0.0)
    rhs = weights @ centred  # (R, Ff)
    patterns, which = np.unique(af, axis=0, return_inverse=True)
    which = which.ravel()
    k = len(patterns)
    pattern_weight = np.stack([weights[:, which == p].sum(axis=1) for p in range(k)], axis=1)  # (R, P)
    pf = patterns.astype(float)
    blocks = np.stack([np.diag(p) - np.outer(p, p) / max(p.sum(), 1.0) for p in pf])  # (P, Ff, Ff)
    m = np.einsum("rp,pab->rab", pattern_weight, blocks) + 1.0 / af.shape[1]
    alpha = np.linalg.solve(m, rhs[..., None])[..., 0]
    return bbar[None, :] - (alpha @ af.T.astype(float)) / count[None, :]
