"""PARTITION's arbitrage in closed form: k yes/no questions of which exactly one comes true.

The worlds are the k one-hot rows, so a distribution λ on them gives each field its own price and the dual is

    V = min_{λ ∈ Δ_k} Σ_i w_i KL(λ_i ‖ F_i)         (binary KL: field i is true with probability λ_i).

Its Lagrange condition is w_i (logit λ_i - logit F_i) = y (one multiplier y for Σ λ_i = 1), so

    logit λ_i = logit F_i + y / w_i,      with y the root of  h(y) = Σ_i σ(logit F_i + y / w_i) - 1.

h rises strictly from -1 to k - 1, so the root is unique. More is true: for ANY y the prices λ_i(y) (which need
not sum to 1) give the arbitrageur the same profit in every world,

    V(y) = y + Σ_i w_i log((1 - λ_i(y)) / (1 - F_i)) = y - Σ_i w_i [log(1 - F_i) + softplus(logit F_i + y / w_i)],

because w_j log(λ_j / F_j) = y + w_j log((1 - λ_j) / (1 - F_j)). So V(y) is a guaranteed profit for every y, its
maximum (dV/dy = -h(y)) is the root, and V = V(y*) ≥ V(0) = 0. With unit weights and x = e^y, V = max over x > 0 of
log x - Σ_i log(1 - F_i + F_i x).

"Closed form" for k > 2 means exactly this: the k-dimensional problem is one scalar equation, monotone, whose
root is found to machine precision by a few safeguarded Newton steps (and V is stationary at the root, so an error
δ in y costs only O(δ²) in V). For k = 2 the root is explicit, y = -(logit F_1 + logit F_2) / 2 with unit weights,
and V = -2 log(sqrt(F_1 (1 - F_2)) + sqrt((1 - F_1) F_2)), NEGATION's closed form (PARTITION2 *is* NEGATION); for
k = 3 and 4 it solves a cubic and a quartic in x, which have formulas in radicals that are slower and less
accurate than the iteration; for k ≥ 5 there is no such formula in general.
"""

from __future__ import annotations

import numpy as np

_MAX_ITER = 60
_TOL = 1e-14


def partition_arbitrage(F: np.ndarray, w: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(V, prices λ, gap, iterations) for clipped forecasts ``F`` of shape (N, k) (one column per option), weights
    ``w`` of shape (N, k) or None for unit weights. λ is the coherent distribution; the gap is D(λ) - V."""
    # Rows of k options are short: everything runs on (k, N) arrays, where sums over options are k - 1 additions
    # of long vectors (numpy's reductions along a short last axis cost ten times more).
    Ft = np.ascontiguousarray(F.T)
    log_not = np.log1p(-Ft)
    logit = np.log(Ft) - log_not
    if w is None:
        y, iterations = _root_unit(np.exp(logit), logit)
        lp = np.log1p(np.exp(logit + y))  # softplus(logit + y) = -log(1 - λ_i(y))
        wt = None
    else:
        wt = np.ascontiguousarray(w.T)
        y, iterations = _root_weighted(logit, 1.0 / wt)
        lp = _softplus(logit + y / wt)
    terms = log_not + lp
    violation = np.maximum(y - _sum(terms if wt is None else wt * terms), 0.0)
    # The coherent prices: λ_i(y) normalised (they sum to 1 up to the root's last bit).
    lam = np.exp(-lp)
    np.subtract(1.0, lam, out=lam)
    total = _sum(lam)
    lam /= total
    # D(λ) exactly: log λ_i - log F_i = y / w_i - log(1 - F_i) - softplus(...) - log Σ λ(y).
    gain = (y if wt is None else y / wt) - terms - np.log(total)
    kl = lam * gain + (1.0 - lam) * (np.log1p(-lam) - log_not)
    gap = np.maximum(_sum(kl if wt is None else wt * kl) - violation, 0.0)
    return violation, lam.T, gap, iterations


def _sum(a: np.ndarray) -> np.ndarray:
    out = a[0].copy()
    for row in a[1:]:
        out += row
    return out


def _softplus(x: np.ndarray) -> np.ndarray:
    """log(1 + e^x), without overflow or loss of precision."""
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))


def _bracket(logit: np.ndarray, inv) -> tuple[np.ndarray, np.ndarray]:
    """y below which h < 0 and above which h > 0: σ(z) < e^z gives h < 0 below -log Σ e^logit (unit weights),
    and Σ σ ≥ k σ(min logit + y) gives h ≥ 0 above -min logit - log(k - 1); weights scale both by their extremes."""
    k = logit.shape[0]
    top = logit.max(axis=0)
    lse = top + np.log(_sum(np.exp(logit - top)))
    if isinstance(inv, float):
        return -lse, -logit.min(axis=0) - np.log(k - 1)
    lo = np.minimum(-lse / inv.min(axis=0), -lse / inv.max(axis=0))
    return lo, ((-logit - np.log(k - 1)) * (1.0 / inv)).max(axis=0)


def _root_unit(odds: np.ndarray, logit: np.ndarray) -> tuple[np.ndarray, int]:
    """The root y of Σ_i σ(logit_i + y) = 1 for each column (shape (k, N)), in x = e^y: with a_i the odds,
    σ = a_i x / (1 + a_i x) and dσ/dy = σ / (1 + a_i x), four operations per option and step."""
    lo, hi = _bracket(logit, 1.0)

    def evaluate(a: np.ndarray, y: np.ndarray):
        ax = a * np.exp(y)
        den = ax + 1.0
        s = np.divide(ax, den, out=ax)
        return _sum(s) - 1.0, _sum(np.divide(s, den, out=den))

    return _newton(odds, evaluate, lo, hi)


def _root_weighted(logit: np.ndarray, inv: np.ndarray) -> tuple[np.ndarray, int]:
    """The root y of Σ_i σ(logit_i + y inv_i) = 1 for each column (shape (k, N))."""
    lo, hi = _bracket(logit, inv)
    both = np.stack([logit, inv])

    def evaluate(data: np.ndarray, y: np.ndarray):
        lg, iv = data
        s = 0.5 * (1.0 + np.tanh(0.5 * (lg + y * iv)))
        return _sum(s) - 1.0, _sum(s * (1.0 - s) * iv)

    return _newton(both, evaluate, lo, hi)


def _newton(data: np.ndarray, evaluate, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, int]:
    """Safeguarded Newton on an increasing h(y) = evaluate(data, y)[0] per tuple (the last axis of ``data``).

    Starts from one Newton step at y = 0 (exact to first order for nearly coherent forecasts), keeps every step
    inside the shrinking bracket (its midpoint otherwise) and stops a tuple when the step or h reach rounding.
    All tuples step together until nine in ten have converged; then only the rest (saturated sigmoids).
    """
    N = lo.shape[0]
    k = data.shape[-2]
    h, dh = evaluate(data, np.zeros(N))
    y = np.clip(-h / np.maximum(dh, 1e-300), lo, hi)
    idx = None
    out = np.empty(N)
    finished = np.zeros(N, dtype=bool)
    iterations = 0
    for iterations in range(1, _MAX_ITER + 1):  # noqa: B007
        h, dh = evaluate(data if idx is None else data[..., idx], y)
        lo = np.where(h < 0, y, lo)
        hi = np.where(h > 0, y, hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = y - h / dh
        new = np.where((step >= lo) & (step <= hi), step, 0.5 * (lo + hi))
        scale = _TOL * (1.0 + np.abs(y))
        done = (np.abs(new - y) <= scale) | (np.abs(h) <= 4 * k * 1.2e-16) | (hi - lo <= scale)
        if idx is None:  # tuples that converged earlier stay where they are
            new = np.where(finished, y, new)
            done |= finished
        y = new
        if done.all():
            break
        if idx is None and done.mean() < 0.9:
            finished = done
            continue
        cols = np.arange(N) if idx is None else idx
        out[cols[done]] = y[done]
        keep = ~done
        idx, y, lo, hi = cols[keep], y[keep], lo[keep], hi[keep]
    if idx is None:
        return y, iterations
    out[idx] = y
    return out, iterations
