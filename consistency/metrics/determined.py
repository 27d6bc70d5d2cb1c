"""The arbitrage when one categorical field X determines the world and the other fields are yes/no events about it.

MC_BINARY (X's two groups of options and P), CDF_THRESHOLDS (X's bins and the threshold questions) and PARTITION
with its multiple-choice question have this shape: world b is "X takes outcome b", and yes/no field j is true in the
worlds A_jb = 1. With p = X's forecast, f_j the yes/no forecasts and weights w_X, w_j, the dual is

    V = min_{λ ∈ Δ} w_X KL(λ ‖ p) + Σ_j w_j KL(A_j λ ‖ f_j),

and its Fenchel dual is an unconstrained concave problem in one number per yes/no field:

    V = max_μ Ψ(μ),   Ψ(μ) = -w_X log Σ_b p_b exp(-(Aᵀμ)_b / w_X) - Σ_j w_j log(1 - f_j + f_j exp(μ_j / w_j)).

Ψ(μ) is not only a bound: at the prices λ_b(μ) ∝ p_b exp(-(Aᵀμ)_b / w_X) for X and σ_j(μ) = f_j e^{μ_j/w_j} /
(1 - f_j + f_j e^{μ_j/w_j}) for field j, the arbitrageur's profit is Ψ(μ) in every world (the μ terms cancel), so
every iterate is a guaranteed profit, and D(λ(μ)) above it certifies the gap. The gradient is s_j - σ_j with
s_j = A_j λ(μ), the Hessian -(Cov_λ(A) / w_X + diag(σ_j (1 - σ_j) / w_j)): Newton's method with a backtracking line
search, from μ = 0 (Ψ = 0: no trade), converges in a handful of steps for all tuples at once.

Everything runs on (outcomes, tuples) arrays: sums over a handful of outcomes are then additions of long vectors.
"""

from __future__ import annotations

import numpy as np

_MAX_ITER = 100


def determined_arbitrage(
    A: np.ndarray, pX: np.ndarray, f: np.ndarray, wX: np.ndarray, wj: np.ndarray, tol: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """(Ψ at the optimum, λ (K, N), s = A λ (k, N), D(λ) - Ψ, iterations).

    ``A``: (k, K) 0/1, which worlds make each yes/no field true; ``pX``: (K, N) clipped distribution of X;
    ``f``: (k, N) clipped yes/no forecasts; ``wX``: (N,) and ``wj``: (k, N) positive weights.
    """
    k = A.shape[0]
    N = pX.shape[1]
    if np.all(wX == 1.0) and np.all(wj == 1.0):  # unweighted: no divisions in the hot loop
        wX, wj = None, None  # type: ignore[assignment]
    logp = np.log(pX)
    lognot = np.log1p(-f)
    logitf = np.log(f) - lognot
    pairs = [(j, m) for j in range(k) for m in range(j, k)]
    both = np.array([A[j] * A[m] for j, m in pairs], dtype=float)  # worlds where fields j and m are both true
    mu_out, psi_out = np.zeros((k, N)), np.zeros(N)
    idx = np.arange(N)
    data = (logp, lognot, logitf, wX, wj)  # of the tuples still moving
    mu = np.zeros((k, N))
    state = _evaluate(A, *data, mu)
    iterations = 0
    for iterations in range(1, _MAX_ITER + 1):  # noqa: B007
        psi, lam, s, sigma = state
        grad = s - sigma
        step = _solve(_hessian(both, pairs, k, lam, s, sigma, data[3], data[4]), grad)
        decrement = _sum(grad * step)  # Newton decrement²: about twice the distance to the optimum
        # Done when the coherent prices s = A λ meet the yes/no prices σ to 1e-13 (then every world's profit at
        # the reported coherent prices is Ψ within rounding), or when no ascent is left at rounding level.
        done = (np.abs(grad).max(axis=0) <= 1e-13) | ~(decrement > 1e-30 * (1.0 + np.abs(psi)))
        if done.all():
            mu_out[:, idx], psi_out[idx] = mu, psi
            break
        if 4 * done.sum() >= len(idx):  # a quarter done: drop them (gathering the rest costs a step's work)
            mu_out[:, idx[done]], psi_out[idx[done]] = mu[:, done], psi[done]
            keep = ~done
            idx, mu, step, decrement = idx[keep], mu[:, keep], step[:, keep], decrement[keep]
            data = tuple(None if a is None else a[..., keep] for a in data)
            psi, lam, s, sigma = (a[..., keep] for a in state)
        elif done.any():  # the few done ones stay where they are
            step[:, done] = 0.0
            decrement[done] = 0.0
        # Backtracking: full Newton steps almost always; halve where Ψ would not rise enough.
        alpha = np.ones(len(idx))
        new = list(_evaluate(A, *data, mu + step))
        for _ in range(50):
            bad = ~(new[0] >= psi + 1e-4 * alpha * decrement - 1e-15 * (1.0 + np.abs(psi)))
            if not bad.any():
                break
            alpha[bad] *= 0.5
            rows = np.flatnonzero(bad)
            part = (None if a is None else a[..., rows] for a in data)
            trial = _evaluate(A, *part, mu[:, rows] + alpha[rows] * step[:, rows])
            for full, part in zip(new, trial, strict=True):
                full[..., rows] = part
        else:  # no ascent left above rounding: these tuples stay where they are
            alpha[bad] = 0.0
            new = [np.where(bad, old, nw) for old, nw in zip((psi, lam, s, sigma), new, strict=True)]
        mu = mu + alpha * step
        state = tuple(new)
    else:
        mu_out[:, idx], psi_out[idx] = mu, state[0]
    _, lam, s, _ = _evaluate(A, logp, lognot, logitf, wX, wj, mu_out)
    with np.errstate(divide="ignore", invalid="ignore"):
        kl_x = _sum(np.where(lam > 0, lam * (np.log(lam) - logp), 0.0))
        kl_j = s * (np.log(s) - np.log(f)) + (1.0 - s) * (np.log1p(-s) - lognot)
    upper = kl_x + _sum(kl_j) if wX is None else wX * kl_x + _sum(wj * kl_j)
    return psi_out, lam, s, np.maximum(upper - psi_out, 0.0), iterations


def _sum(a: np.ndarray) -> np.ndarray:
    out = a[0].copy()
    for row in a[1:]:
        out += row
    return out


def _evaluate(A, logp, lognot, logitf, wX, wj, mu):
    """Ψ(μ), λ(μ), s = A λ and the yes/no prices σ(μ) (weights None: all 1)."""
    e = A.T @ mu
    if wX is not None:
        e /= wX
    np.subtract(logp, e, out=e)
    top = e.max(axis=0)
    e -= top
    lam = np.exp(e, out=e)
    total = _sum(lam)
    lam /= total
    x = logitf + (mu if wj is None else mu / wj)
    ex = np.exp(np.minimum(x, 40.0))
    softplus = np.where(x > 40.0, x, np.log1p(ex))  # log(1 + e^x)
    sigma = ex / (1.0 + ex)
    terms = lognot + softplus
    lse = top + np.log(total)
    psi = -(lse if wX is None else wX * lse) - _sum(terms if wj is None else wj * terms)
    return psi, lam, A @ lam, sigma


def _hessian(both, pairs, k, lam, s, sigma, wX, wj):
    """-∇²Ψ entry by entry (lists of N-vectors): Cov_λ(A_j, A_m) / w_X + [j = m] σ_j (1 - σ_j) / w_j."""
    joint = both @ lam
    H = [[None] * k for _ in range(k)]
    for row, (j, m) in enumerate(pairs):
        value = joint[row] - s[j] * s[m]
        if wX is not None:
            value = value / wX
        if j == m:
            spread = sigma[j] * (1.0 - sigma[j])
            value = value + (spread if wj is None else spread / wj[j])
        H[j][m] = H[m][j] = value
    return H


def _solve(H, b: np.ndarray) -> np.ndarray:
    """Solve the symmetric positive definite systems H x = b (H as k x k lists of N-vectors) by elimination."""
    k = len(H)
    if k == 1:
        return b / H[0][0]
    a = [[H[i][j].copy() for j in range(k)] for i in range(k)]
    r = [b[i].copy() for i in range(k)]
    for p in range(k):
        for i in range(p + 1, k):
            factor = a[i][p] / a[p][p]
            for j in range(p + 1, k):
                a[i][j] -= factor * a[p][j]
            r[i] -= factor * r[p]
    x = [np.empty(0)] * k
    for i in reversed(range(k)):
        acc = r[i]
        for j in range(i + 1, k):
            acc = acc - a[i][j] * x[j]
        x[i] = acc / a[i][i]
    return np.array(x)
