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
forecaster's rescaled score is Σ_j w_j (b_ij − γ_j) / Σ_j w_j over its rows plus Σ_j w_j γ_j / Σ_j w_j
over all questions. Everything that involves α depends on the questions only through which
forecasters answered them (a question's *pattern*; one per round once ForecastBench's imputation has
filled the rounds), so a replicate costs one product of its weights with a few columns per question
and small per-pattern sums. With unit weights this is exactly the fit of
:func:`consistency.accuracy.difficulty.difficulty_adjusted_brier` (tested against it), which gives
the point estimates; this module exists for the thousands of weighted refits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

#: Cells of a replicates × questions block held at once (about 1.6 MB of float64): small enough that a block's
#: passes stay in the processor's cache, which measured a third faster than blocks ten times the size.
_BLOCK = 200_000


def weight_blocks(groups: np.ndarray, replicates: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Question weights (multiplicities) for ``replicates`` stratified draws, in blocks of rows.

    Each question's slot is refilled by a question drawn uniformly from its own group, so every group
    keeps its size in every replicate, as ForecastBench's per-(due date, source) resampling does.
    The draws are the same however the replicates are split into blocks (rows of one stream).
    """
    groups = np.asarray(groups)
    order = np.argsort(groups, kind="stable")
    _, start, size = np.unique(groups[order], return_index=True, return_counts=True)
    slot_group = np.repeat(np.arange(len(size)), size)  # group of each slot, in sorted order
    # 32-bit draws and indices halve the work; a block's cells stay far below 2**31.
    slot_start, slot_size = start[slot_group].astype(np.int32), size[slot_group].astype(np.float32)
    last, order = (size[slot_group] - 1).astype(np.int32), order.astype(np.int32)
    n = len(groups)
    sorted_already = bool(np.array_equal(order, np.arange(n)))  # then a slot's draw is the question itself
    per_block = max(1, min(replicates, _BLOCK // max(n, 1)))
    row_offset = np.arange(per_block, dtype=np.int32)[:, None] * np.int32(n)
    done = 0
    while done < replicates:
        r = min(per_block, replicates - done)
        pick = rng.random((r, n), dtype=np.float32)
        pick *= slot_size
        chosen = pick.astype(np.int32)
        np.minimum(chosen, last, out=chosen)  # float32 rounding up to the size itself
        chosen += slot_start
        if not sorted_already:
            chosen = order[chosen]  # the question drawn into each slot
        chosen += row_offset[:r]
        yield np.bincount(chosen.ravel(), minlength=r * n).reshape(r, n).astype(float)
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
    return scorer(brier, fitted, gamma, shift)(weights)


def scorer(
    brier: np.ndarray, fitted: np.ndarray, gamma: np.ndarray | None = None, shift: float | None = None
) -> Callable[[np.ndarray], np.ndarray]:
    """:func:`weighted_scores` for blocks of weights: what does not depend on the weights is computed once,
    and every weighted sum a block needs is one product of its weights with one matrix."""
    observed = np.isfinite(brier)
    fitted = np.asarray(fitted, dtype=bool) & observed.any(axis=0)  # a forecaster with no row here shapes nothing
    f = brier.shape[1]
    b0 = np.where(observed, brier, 0.0)
    patterns, which = _patterns(observed)
    onehot = np.zeros((len(which), len(patterns)))
    onehot[np.arange(len(which)), which.ravel()] = 1.0
    in_pattern = patterns.astype(float)
    if gamma is not None:
        g = np.asarray(gamma, dtype=float)
        design = np.column_stack([b0, g[:, None] * observed, g, onehot])

        def difficulty(sums: np.ndarray, pw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return sums[:, :f], sums[:, f]  # the columns after b0: Σ_j w_j γ_j 1_ij, then Σ_j w_j γ_j

        width = 2 * f + 1
    else:
        fit = _FittedFit(b0, observed, fitted, patterns)
        design = np.column_stack([b0, fit.columns, onehot])
        difficulty = fit.sums
        width = f + fit.columns.shape[1]

    def score(weights: np.ndarray) -> np.ndarray:
        sums = weights @ design
        pw = sums[:, width:]  # (R, P): the weight of each pattern
        total = pw.sum(axis=1)
        count = pw @ in_pattern  # (R, F): Σ_j w_j 1_ij
        with np.errstate(invalid="ignore", divide="ignore"):
            wg_obs, wg = difficulty(sums[:, f:width], pw)
            offset = wg / total if shift is None else np.full(len(weights), float(shift))
            return (sums[:, :f] - wg_obs) / count + offset[:, None]

    return score


def _patterns(observed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of a boolean matrix and each row's index among them (rows packed into integers)."""
    if observed.shape[1] > 62:
        return np.unique(observed, axis=0, return_inverse=True)
    codes = observed.astype(np.int64) @ (np.int64(1) << np.arange(observed.shape[1], dtype=np.int64))
    _, first, which = np.unique(codes, return_index=True, return_inverse=True)
    return observed[first], which


class _FittedFit:
    """The weighted fit on the fitted forecasters' rows: the columns its weighted sums need, and from those
    sums Σ_j w_j γ_j 1_ij (R, F) and Σ_j w_j γ_j (R)."""

    def __init__(self, b0: np.ndarray, observed: np.ndarray, fitted: np.ndarray, patterns: np.ndarray) -> None:
        af = observed[:, fitted]
        c = np.maximum(af.sum(axis=1), 1).astype(float)  # questions without fitted rows are refused before this
        bbar = b0[:, fitted].sum(axis=1) / c
        centred = np.where(af, b0[:, fitted] - bbar[:, None], 0.0)
        self.k = af.shape[1]
        self.columns = np.column_stack([centred, bbar[:, None] * observed, bbar])
        self.fp = patterns[:, fitted].astype(float)  # (P, Ff)
        self.cp = np.maximum(self.fp.sum(axis=1), 1.0)
        self.blocks = np.stack([np.diag(p) - np.outer(p, p) / n for p, n in zip(self.fp, self.cp, strict=True)])
        self.in_pattern = patterns.astype(float)

    def sums(self, sums: np.ndarray, pw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = self.k
        rhs, w_bbar_obs, w_bbar = sums[:, :k], sums[:, k:-1], sums[:, -1]
        m = np.einsum("rp,pab->rab", pw, self.blocks) + 1.0 / k
        alpha = np.linalg.solve(m, rhs[..., None])[..., 0]  # (R, Ff)
        mean_alpha = (alpha @ self.fp.T) / self.cp  # (R, P): mean α over each pattern's fitted forecasters
        per_pattern = pw * mean_alpha  # Σ_{j in p} w_j ᾱ_j
        return w_bbar_obs - per_pattern @ self.in_pattern, w_bbar - per_pattern.sum(axis=1)
