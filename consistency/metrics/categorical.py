"""The arbitrage metric for checks with categorical fields (multiple-choice options, numeric bins).

A categorical field i with outcomes o has a forecast distribution F_i and is scored by the log score log p_i(o) of
the outcome that happens. The paper's arbitrage (appendix D, in its general form over distributions) is then

    V = max_p min_{ω∈Ω} Σ_i w_i log(p_i(ω_i) / F_i(ω_i))  =  min_{λ∈Δ(Ω)} Σ_i w_i KL(q_i(λ) ‖ F_i)

with q_i(λ) the distribution of field i's outcome when the world is drawn from λ (minimax duality, as for yes/no
fields, which are the case m = 2: outcome "true" with probability F_i, "false" with 1 - F_i). As there, the
gradient of the dual in λ_ω is the arbitrageur's profit in world ω at prices q(λ), so any λ certifies V from both
sides: D(λ) above, the worst profit at q(λ) below. Only checks whose fields all resolve are supported.

Closed forms. When every field either takes a different outcome in each world or the same outcome in all of them
(NUMERIC_PARAPHRASE, MC_BINARY, and among yes/no checks PARAPHRASE and NEGATION), q_i(λ) is λ itself on the
injective fields and D(λ) = W Σ λ_ω log λ_ω - Σ λ_ω ℓ_ω with ℓ_ω = Σ_i w_i log F_i(ω_i) and W the weight of the
injective fields. So λ_ω ∝ exp(ℓ_ω / W) and

    V = -W log Σ_ω exp(ℓ_ω / W);

for two fields of unit weight, λ_ω ∝ sqrt(p_ω q_ω) and V = -2 log Σ_ω sqrt(p_ω q_ω): twice the Bhattacharyya
distance between the two distributions (NUMERIC_PARAPHRASE over the 202 bins of the grid; PARAPHRASE's closed form
is its two-outcome case). Other checks (CDF_THRESHOLDS) are solved by Newton's method on the dual, all tuples at
once, with the same certificate.

Forecasts of exactly 0 are moved as for yes/no fields: a categorical field's outcomes given exactly 0 get
ε/(m - 1) each and the others shrink in proportion (at most ε moves; for m = 2 this is the yes/no rule).
"""

from __future__ import annotations

from functools import cached_property, lru_cache

import numpy as np

from ..checks import Check
from .arbitrage import DEFAULT_EPSILON, MIN_PROBABILITY, ArbitrageResult, clip_forecasts
from .determined import determined_arbitrage
from .faces import solve_spd

#: How far a categorical field's columns may sum from 1.
SUM_TOLERANCE = 1e-6
_TOL = 1e-13
_MAX_ITER = 100
_BIG = 1e30
_BLOCK = 16_384
_CELLS = 1 << 18  # array elements per block


def validate_columns(check: Check, probs: np.ndarray) -> np.ndarray:
    """``probs`` as a float array of shape (N, n_columns), each value in [0, 1], each categorical field's columns
    summing to 1 within :data:`SUM_TOLERANCE`; otherwise a ValueError naming the first bad tuple."""
    probs = np.asarray(probs, dtype=float)
    if probs.ndim != 2 or probs.shape[1] != check.n_columns:
        raise ValueError(
            f"{check.name}: forecasts must have shape (N, {check.n_columns}) ({', '.join(check.columns[:6])}"
            f"{' …' if check.n_columns > 6 else ''}), got {probs.shape}"
        )
    if not np.all(np.isfinite(probs)) or np.any((probs < 0) | (probs > 1)):
        raise ValueError(f"{check.name}: forecasts must be finite and in [0, 1]")
    for name in check.categorical:
        total = probs[:, check.column_slices[name]].sum(axis=1)
        bad = np.flatnonzero(np.abs(total - 1.0) > SUM_TOLERANCE)
        if bad.size:
            raise ValueError(
                f"{check.name}: field {name}'s outcomes must sum to 1; tuple {bad[0]} sums to {total[bad[0]]:.6g}"
            )
    return probs


def clip_distribution(G: np.ndarray, epsilon: float = DEFAULT_EPSILON) -> np.ndarray:
    """Rows of a categorical forecast renormalised, outcomes of exactly 0 moved to ε/(m - 1) (and values within
    1e-12 of 0 to 1e-12) with the others shrunk in proportion, so each row still sums to 1."""
    G = np.asarray(G, dtype=float)
    m = G.shape[1]
    G = G / G.sum(axis=1, keepdims=True)
    floor = np.where(G <= 0.0, epsilon / (m - 1), np.maximum(G, MIN_PROBABILITY))
    raised = floor != G
    fixed = np.where(raised, floor, 0.0).sum(axis=1, keepdims=True)
    rest = np.where(raised, 0.0, G).sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(rest > 0, (1.0 - fixed) / rest, 1.0)
    return np.where(raised, floor, G * scale)


class CategoricalPlan:
    """A check's worlds as one-hot outcome columns: a yes/no field has two (true, false), a categorical one m."""

    def __init__(self, check: Check) -> None:
        if (check.worlds < 0).any():
            raise ValueError(f"{check.name}: categorical arbitrage needs fields that resolve in every world")
        self.check = check
        K = len(check.worlds)
        blocks, field_of = [], []
        for i, name in enumerate(check.fields):
            m = check.categorical.get(name)
            col = check.worlds[:, i].astype(np.int64)
            if m is None:  # true, false
                blocks.append(np.stack([col == 1, col == 0], axis=1))
                field_of += [i, i]
            else:
                blocks.append(col[:, None] == np.arange(m))
                field_of += [i] * m
        self.B = np.concatenate(blocks, axis=1).astype(float)  # (K, C): world ω has outcome c
        self.field_of = np.array(field_of, dtype=np.intp)
        self.K, self.C = K, self.B.shape[1]
        # Each field's outcome column in each world (B is one-hot per field: sums over worlds become gathers).
        self.cols = [np.flatnonzero(self.field_of == i)[0] + np.argmax(blk, axis=1) for i, blk in enumerate(blocks)]
        self.blocks = [blk.astype(float) for blk in blocks]
        # Fields constant over the worlds, or taking a different outcome in each: the closed form applies.
        injective, constant = [], []
        for i in range(check.n_fields):
            values = check.worlds[:, i]
            injective.append(len(set(values.tolist())) == K)
            constant.append(len(set(values.tolist())) == 1)
        self.injective = np.array(injective)
        self.closed = all(a or b for a, b in zip(injective, constant, strict=True))
        self.determined = None if self.closed else self._determined(injective)

    def _determined(self, injective: list[bool]):
        """(X's field, A, X's outcome columns in world order, yes/no fields' "true" columns, their fields) when one
        categorical field takes a different outcome in every world and every other field is yes/no."""
        check = self.check
        xs = [i for i, name in enumerate(check.fields) if name in check.categorical and injective[i]]
        others = [i for i in range(check.n_fields) if not xs or i != xs[0]]
        if not xs or any(check.field_names[i] in check.categorical for i in others):
            return None
        x = xs[0]
        start = int(np.flatnonzero(self.field_of == x)[0])
        x_cols = start + check.worlds[:, x].astype(np.intp)  # world b's outcome column of X
        f_cols = np.array([int(np.flatnonzero(self.field_of == i)[0]) for i in others], dtype=np.intp)
        A = (check.worlds[:, others] == 1).T.astype(float)  # (k, K)
        return x, A, x_cols, f_cols, np.array(others, dtype=np.intp)

    @staticmethod
    @lru_cache(maxsize=64)
    def of(check: Check) -> CategoricalPlan:
        return CategoricalPlan(check)

    def internal(self, probs: np.ndarray, epsilon: float) -> np.ndarray:
        """Clipped forecasts as outcome columns (N, C): [p, 1 - p] for a yes/no field, the distribution otherwise."""
        parts = []
        for name in self.check.fields:
            sl = self.check.column_slices[name]
            if name in self.check.categorical:
                parts.append(clip_distribution(probs[:, sl], epsilon))
            else:
                p = clip_forecasts(probs[:, sl], epsilon)
                parts += [p, 1.0 - p]
        return np.concatenate(parts, axis=1)

    def external(self, q: np.ndarray) -> np.ndarray:
        """Internal outcome columns back to the check's columns (a yes/no field keeps its "true" column)."""
        keep = []
        c = 0
        for name in self.check.fields:
            m = self.check.categorical.get(name)
            keep += [c] if m is None else list(range(c, c + m))
            c += 2 if m is None else m
        return q[:, keep]

    @cached_property
    def outer(self) -> np.ndarray:
        """Rows c of B_c B_cᵀ (flattened): the dual's Hessian is Σ_c (w_c / t_c) B_c B_cᵀ on the simplex."""
        return np.einsum("kc,jc->ckj", self.B, self.B).reshape(self.C, -1)

    def per_world(self, X: np.ndarray) -> np.ndarray:
        """Σ_c B_ωc X_c for each world: (N, C) → (N, K), one gather per field."""
        out = X[:, self.cols[0]].copy()
        for cols in self.cols[1:]:
            out += X[:, cols]
        return out

    def masses(self, lam: np.ndarray) -> np.ndarray:
        """t = λ B: each outcome column's mass (a field taking a different outcome in each world just reorders λ)."""
        t = np.zeros((len(lam), self.C))
        start = 0
        for i, blk in enumerate(self.blocks):
            if self.injective[i]:
                t[:, self.cols[i]] = lam
            else:
                t[:, start : start + blk.shape[1]] = lam @ blk
            start += blk.shape[1]
        return t

    def profits(self, t: np.ndarray, L: np.ndarray, wc: np.ndarray) -> np.ndarray:
        """Profit in each world at prices q = t (every field resolves, so Σ λ = 1 is each field's mass)."""
        with np.errstate(divide="ignore"):
            lt = np.maximum(np.log(t), -_BIG)
        return self.per_world(wc * (lt - L))

    def dual(self, t: np.ndarray, L: np.ndarray, wc: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return (wc * np.where(t > 0, t * (np.log(t) - L), 0.0)).sum(axis=1)


def categorical_arbitrage(
    check: Check,
    probs: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    epsilon: float = DEFAULT_EPSILON,
    tol: float = _TOL,
    max_iter: int = _MAX_ITER,
) -> ArbitrageResult:
    """Exact arbitrage of forecasts ``probs`` (N, ``check.n_columns``) for a check with categorical fields.

    ``weights`` (per field: shape (n_fields,) or (N, n_fields)) scale each field's market as in
    :func:`consistency.metrics.arbitrage`. Prices come back in the check's columns.
    """
    probs = validate_columns(check, probs)
    N = len(probs)
    w = np.broadcast_to(np.ones(check.n_fields) if weights is None else np.asarray(weights, float), (N, check.n_fields))
    if not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError("weights must be finite and positive")
    plan = CategoricalPlan.of(check)
    w = np.ascontiguousarray(w, dtype=float)
    block = max(64, min(_BLOCK, _CELLS // plan.C))  # wide checks (202 bins a field) in smaller blocks: in cache
    parts = [
        _solve(plan, probs[s : s + block], w[s : s + block], epsilon, tol, max_iter) for s in range(0, max(N, 1), block)
    ]
    violation, prices, gap = (np.concatenate([p[i] for p in parts]) for i in range(3))
    return ArbitrageResult(violation, prices, gap, np.array(w), epsilon, max(p[3] for p in parts))


def _solve(plan: CategoricalPlan, probs: np.ndarray, w: np.ndarray, epsilon: float, tol: float, max_iter: int):
    F = plan.internal(probs, epsilon)
    L = np.log(F)
    wc = w[:, plan.field_of]
    if plan.closed:
        lam, iterations = _closed(plan, L, w), 0
    elif plan.determined is not None:
        return _determined(plan, F, w, tol)
    else:
        lam, iterations = _newton(plan, L, wc, w.sum(axis=1, keepdims=True), tol, max_iter)
    t = plan.masses(lam)
    g = plan.profits(t, L, wc)
    upper = plan.dual(t, L, wc)
    lower = g.min(axis=1)
    no_trade = lower <= 0
    violation = np.where(no_trade, 0.0, lower)
    prices = plan.external(np.where(no_trade[:, None], F, t))
    return violation, prices, np.maximum(upper - violation, 0.0), iterations


def _determined(plan: CategoricalPlan, F: np.ndarray, w: np.ndarray, tol: float):
    """One categorical field determines the world, the others are yes/no (:mod:`.determined`)."""
    x, A, x_cols, f_cols, binary = plan.determined
    psi, lam, s, gap, iterations = determined_arbitrage(
        A, np.ascontiguousarray(F[:, x_cols].T), np.ascontiguousarray(F[:, f_cols].T), w[:, x],
        np.ascontiguousarray(w[:, binary].T), tol,
    )  # fmt: skip
    q = np.empty_like(F)
    q[:, x_cols] = lam.T
    q[:, f_cols] = s.T
    q[:, f_cols + 1] = 1.0 - s.T
    return np.maximum(psi, 0.0), plan.external(q), gap, iterations


def _closed(plan: CategoricalPlan, L: np.ndarray, w: np.ndarray) -> np.ndarray:
    """λ_ω ∝ exp(ℓ_ω / W): the optimum when every field is injective or constant over the worlds."""
    ell = plan.per_world(w[:, plan.field_of] * L)
    W = (w * plan.injective).sum(axis=1, keepdims=True)
    z = ell / W
    lam = np.exp(z - z.max(axis=1, keepdims=True))
    return lam / lam.sum(axis=1, keepdims=True)


def _newton(
    plan: CategoricalPlan, L: np.ndarray, wc: np.ndarray, W: np.ndarray, tol: float, max_iter: int
) -> tuple[np.ndarray, int]:
    """Newton's method on the dual over the simplex, all tuples at once.

    Worlds that alone hold some outcome column are kept strictly inside (leaving would send that outcome's price,
    and the dual's gradient, to -inf); the others may leave the face when a step reaches them, and come back when
    their profit undercuts the average (a step toward them then descends). The start λ ∝ exp(ℓ / W) is the
    closed form's, often close.
    """
    N, K = L.shape[0], plan.K
    z = plan.per_world(wc * L) / W
    lam = np.exp(z - z.max(axis=1, keepdims=True))
    lam /= lam.sum(axis=1, keepdims=True)
    result = lam.copy()
    idx = np.arange(N)
    active = np.ones((N, K), dtype=bool)
    iterations = 0
    for iterations in range(1, max_iter + 1):  # noqa: B007
        t = plan.masses(lam)
        g = plan.profits(t, L, wc)
        D = np.einsum("ij,ij->i", lam, g)
        slack = tol * (1.0 + np.einsum("ij,ij->i", lam, np.abs(np.maximum(g, -_BIG))))
        done = D - g.min(axis=1) <= slack
        if done.any():
            result[idx[done]] = lam[done]
            keep = ~done
            idx, lam, active, L, wc, t, g, D, slack = (a[keep] for a in (idx, lam, active, L, wc, t, g, D, slack))
            if idx.size == 0:
                break
        d = _direction(plan, lam, t, g, active, wc)
        # A solved face lets in the world whose profit undercuts the average most.
        face_done = D - np.where(active, g, np.inf).min(axis=1) <= slack
        entering = np.where(active, np.inf, g).argmin(axis=1)
        rows = np.arange(len(idx))
        enter = face_done & (g[rows, entering] < D - slack)
        if enter.any():
            d[enter] = -lam[enter]
            d[enter, entering[enter]] += 1.0
            active[enter, entering[enter]] = True
        lam, active = _step(plan, lam, active, d, g, D, L, wc)
    else:
        result[idx] = lam
    return result, iterations


def _essential(plan: CategoricalPlan, active: np.ndarray) -> np.ndarray:
    """Active worlds that are the only active holder of some outcome column."""
    holders = active.astype(float) @ plan.B  # (N, C): active worlds holding each column
    return active & (((holders == 1) @ plan.B.T) > 0)


def _direction(plan: CategoricalPlan, lam, t, g, active, wc) -> np.ndarray:
    """Newton's step on the active face: d = Z u with Σ d = 0, pivoting on the active world of largest weight."""
    N, K = lam.shape
    with np.errstate(divide="ignore"):
        v = np.where(t > 0, wc / np.maximum(t, 1e-300), 0.0)
    H = (v @ plan.outer).reshape(N, K, K)
    pivot = np.where(active, lam, -np.inf).argmax(axis=1)
    rows = np.arange(N)
    # Reduced system in the coordinates u_j (j != pivot): H_red = Zᵀ H Z with Z_j = e_j - e_pivot.
    Hp = H[rows, pivot]  # (N, K): row of the pivot
    hpp = Hp[rows, pivot]
    Hr = H - Hp[:, :, None] - Hp[:, None, :] + hpp[:, None, None]
    rhs = -(g - g[rows, pivot][:, None])
    free = active.copy()
    free[rows, pivot] = False
    Hr = np.where(free[:, :, None] & free[:, None, :], Hr, 0.0)
    diag = np.arange(K)
    Hr[:, diag, diag] = np.where(free, Hr[:, diag, diag] * (1 + 1e-13) + 1e-300, 1.0)
    rhs = np.where(free, rhs, 0.0)
    with np.errstate(all="ignore"):
        u = solve_spd(Hr, rhs)
    u = np.where(np.isfinite(u).all(axis=1, keepdims=True), u, 0.0)
    d = u.copy()
    d[rows, pivot] = -u.sum(axis=1)
    return d


def _step(plan: CategoricalPlan, lam, active, d, g, D, L, wc):
    """Armijo line search along d; removable worlds may leave the face, essential ones stay inside."""
    N = len(lam)
    rows = np.arange(N)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where((d < 0) & active, -lam / d, np.inf)
    blocking = ratio.argmin(axis=1)
    alpha_max = ratio[rows, blocking]
    can_leave = ~_essential(plan, active)[rows, blocking] & (alpha_max < 1.0)
    alpha = np.where(alpha_max >= 1.0, 1.0, np.where(can_leave, alpha_max, 0.99 * alpha_max))
    slope = np.einsum("ij,ij->i", g, d)
    gap = D - g.min(axis=1)
    noise = 1e-14 * (1.0 + np.einsum("ij,ij->i", lam, np.abs(np.maximum(g, -_BIG))))
    new_lam, new_active = lam.copy(), active.copy()
    pending = rows
    first = True
    for _ in range(40):
        trial = np.maximum(lam[pending] + alpha[pending, None] * d[pending], 0.0)
        leave = can_leave[pending] if first else np.zeros(len(pending), dtype=bool)
        trial[leave, blocking[pending][leave]] = 0.0
        trial /= trial.sum(axis=1, keepdims=True)
        t = plan.masses(trial)
        gt = plan.profits(t, L[pending], wc[pending])
        Dt = np.einsum("ij,ij->i", trial, gt)
        ok = Dt <= D[pending] + 1e-4 * alpha[pending] * slope[pending] + noise[pending]
        if first:
            ok |= Dt - gt.min(axis=1) < 0.5 * gap[pending]
        acc = pending[ok]
        new_lam[acc] = trial[ok]
        gone = acc[leave[ok]]
        new_active[gone, blocking[gone]] = False
        pending = pending[~ok]
        if pending.size == 0:
            break
        alpha[pending] *= 0.5
        first = False
    return new_lam, new_active
