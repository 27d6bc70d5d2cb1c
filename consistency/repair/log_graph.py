"""Joint log repair of graphs with conditional fields: the arbitrage prices of the whole graph.

Why not the KL fixed point. The Brier repair of conditional checks is a fixed point ``q = Π_{H(q)}(p)``; its
log analogue, ``q`` the KL projection of ``p`` onto ``∩_t H_t(q)``, has a valid guarantee (the Bregman
three-point identity gives, in every consistent joint world ω, a log gain of at least ``Σ_{i resolves in
ω} KL(q_i ‖ p_i)``), but it is not the per-tuple log repair: a tuple's arbitrage prices equalise the gain
over the worlds the arbitrageur's adversary mixes, the fixed point equalises ``<logit q - logit p, ω̃ -
q>``, and the two differ whenever a condition resolves in some of those worlds and not in others. The
log repair of one tuple is its arbitrage (:mod:`consistency.metrics.arbitrage`):

    V = max_q min_ω gain_ω(q) = min_λ D(λ),  D(λ) = Σ_i r_i KL(a_i / r_i ‖ p_i),

λ a distribution on the tuple's worlds, ``a_i`` / ``b_i`` the mass where field i is true / false and
``r_i = a_i + b_i`` where it resolves. ``r KL(a/r ‖ p) = a log(a / (r p)) + b log(b / (r (1 - p)))`` is
the perspective of KL: jointly convex in (a, b).

The joint repair is the same game over the graph, relaxed as the Brier repair relaxes it (one tuple at
a time): a distribution λ_t on each tuple's worlds, the tuples agreeing on every shared question's three
masses (true, false, unresolved). Call that set L; a joint world consistent with every tuple gives one
point of L (each λ_t its restriction). With ``F(λ, q) = Σ_i a_i log(q_i / p_i) + b_i log((1 - q_i) / (1 -
p_i))`` (linear in λ, concave in q, and at a point of a world ω its log gain), minimax gives

    max_q min_{λ ∈ L} F(λ, q) = min_{λ ∈ L} D(λ) = V,

attained at ``q_i = a_i / r_i``: the log loss falls by at least V in every consistent joint world. On
tuples sharing no question L is a product and this is each tuple's arbitrage; on binary checks every r_i
is 1 and D is ``Σ KL(q_i ‖ p_i)`` over the intersection of hulls: the KL projection of :mod:`.graph`.
Where the optimum resolves a question with probability ~0, its price is left at the forecast, as the
per-tuple arbitrage does. ``guaranteed`` is then ``min_{λ ∈ L} F(λ, q)`` at the prices returned (a
linear program), not V, so that it holds for the prices as returned.

Solved with Clarabel's exponential cone (``t >= u log(u / v)`` exactly when ``(-t, u, v)`` is in the cone,
with ``v = p r`` linear in the variables); when the cone problem or its linear program is infeasible, L is
empty and no joint world exists.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..checks.check import FALSE, TRUE, Check

log = logging.getLogger(__name__)

TOL = 1e-10
LP_TOL = 1e-12  # the guarantee's linear program (measured: at 1e-10 it overstated the minimum by 9e-10)
NULL = 1e-9  # a question resolving with at most this mass keeps its forecast as price


@dataclass
class LocalPolytope:
    """The linear constraints of L over variables (λ of every tuple, a, b of every question)."""

    A_eq: object  # scipy.sparse csr
    b_eq: np.ndarray
    n_lam: int
    m: int
    lam: list[np.ndarray]  # per block: (N, k) variable indices
    rows: list[np.ndarray]  # per block: (2, n, N) the rows tying its fields to a (0) and b (1)

    @property
    def n(self) -> int:
        return self.n_lam + 2 * self.m

    @classmethod
    def of(cls, blocks: Sequence[tuple[Check, np.ndarray]], m: int) -> LocalPolytope:
        from scipy import sparse

        rows, cols, vals, rhs = [], [], [], []
        row = offset = 0
        lam_of, rows_of = [], []
        for check, idx in blocks:
            N, n = idx.shape
            W = np.asarray(check.worlds)
            k = len(W)
            lam = offset + np.arange(N * k).reshape(N, k)
            lam_of.append(lam)
            offset += N * k
            rows_of.append(np.zeros((2, n, N), dtype=np.int64))
            if not N:
                continue
            ids = row + np.arange(N)  # Σ_s λ_ts = 1
            rows.append(np.repeat(ids, k))
            cols.append(lam.ravel())
            vals.append(np.ones(N * k))
            rhs.append(np.ones(N))
            row += N
            for f in range(n):
                for side, (value, shift) in enumerate(((TRUE, 0), (FALSE, m))):  # Σ_{ω_sf = value} λ_ts = a_i or b_i
                    worlds = np.flatnonzero(W[:, f] == value)
                    ids = row + np.arange(N)
                    rows_of[-1][side, f] = ids
                    rows += [np.repeat(ids, len(worlds)), ids]
                    cols += [lam[:, worlds].ravel(), -1 - shift - idx[:, f]]  # placeholders, shifted below
                    vals += [np.ones(N * len(worlds)), -np.ones(N)]
                    rhs.append(np.zeros(N))
                    row += N
        r = np.concatenate(rows) if rows else np.zeros(0, int)
        c = np.concatenate(cols) if cols else np.zeros(0, int)
        c = np.where(c < 0, offset + (-1 - c), c)  # a_i at offset + i, b_i at offset + m + i
        v = np.concatenate(vals) if vals else np.zeros(0)
        A = sparse.csr_matrix((v, (r, c)), shape=(row, offset + 2 * m))
        return cls(A, np.concatenate(rhs) if rhs else np.zeros(0), offset, m, lam_of, rows_of)


@dataclass
class LogSolution:
    q: np.ndarray
    resolves: np.ndarray  # r_i: the mass of the adversary's worlds where question i resolves
    value: float  # V = D(λ), the arbitrage profit of the graph
    status: str


class Infeasible(Exception):
    """L is empty (no joint world either): Clarabel's status."""


def solve(blocks: Sequence[tuple[Check, np.ndarray]], p: np.ndarray) -> LogSolution:
    """The joint arbitrage prices of ``blocks`` over questions ``0..len(p)-1``, ``p`` strictly inside (0, 1)."""
    import clarabel
    from scipy import sparse

    m = len(p)
    L = LocalPolytope.of(blocks, m)
    n = L.n + 2 * m  # then t1, t2: epigraphs of a log(a / (p r)) and b log(b / ((1 - p) r))
    a, b = L.n_lam + np.arange(m), L.n_lam + m + np.arange(m)
    t1, t2 = L.n + np.arange(m), L.n + m + np.arange(m)
    cone = np.arange(6 * m).reshape(m, 6)
    r = np.concatenate([cone[:, 0], cone[:, 1], cone[:, 2], cone[:, 2], cone[:, 3], cone[:, 4], cone[:, 5], cone[:, 5]])
    c = np.concatenate([t1, a, a, b, t2, b, a, b])
    v = np.concatenate([np.ones(m), -np.ones(m), -p, -p, np.ones(m), -np.ones(m), p - 1, p - 1])
    cones_A = sparse.csr_matrix((v, (r, c)), shape=(6 * m, n))
    A = sparse.vstack(
        [
            sparse.hstack([L.A_eq, sparse.csr_matrix((L.A_eq.shape[0], 2 * m))]),
            -sparse.eye(L.n_lam, n),  # λ >= 0
            cones_A,
        ]
    ).tocsc()
    rhs = np.concatenate([L.b_eq, np.zeros(L.n_lam), np.zeros(6 * m)])
    cost = np.concatenate([np.zeros(L.n), np.ones(2 * m)])
    settings = _settings(clarabel)
    kinds = [clarabel.ZeroConeT(L.A_eq.shape[0]), clarabel.NonnegativeConeT(L.n_lam)]
    kinds += [clarabel.ExponentialConeT()] * (2 * m)
    solution = clarabel.DefaultSolver(sparse.csc_matrix((n, n)), cost, A, rhs, kinds, settings).solve()
    status = str(solution.status)
    x = np.asarray(solution.x)
    if status in ("PrimalInfeasible", "AlmostPrimalInfeasible"):
        raise Infeasible(status)
    if status not in ("Solved", "AlmostSolved"):
        raise RuntimeError(f"the exponential-cone solver stopped with status {status}")
    resolves = x[a].clip(0.0) + x[b].clip(0.0)
    # The prices are the dual solution (the max-min's q): log(q_i / p_i) and log((1 - q_i) / (1 - p_i)) are the
    # sums of the multipliers of question i's "true" and "false" rows. Measured on the test graphs, they give a
    # guarantee within 1e-9 of V where a_i / r_i from the primal (flat along each (a, b) ray) loses 5e-5.
    z = np.asarray(solution.z)[: L.A_eq.shape[0]]
    rows = L.A_eq.T.tocsr()
    log_true, log_false = -(rows[a] @ z), -(rows[b] @ z)
    with np.errstate(over="ignore"):
        low = p * np.exp(log_true)  # the more precise of the two below 1/2, 1 - q above
        q = np.where(low < 0.5, low, 1.0 - (1.0 - p) * np.exp(log_false))
    q = np.clip(q, np.nextafter(0.0, 1.0), np.nextafter(1.0, 0.0))
    return LogSolution(q, resolves, float(cost @ x), status)


def guaranteed(blocks: Sequence[tuple[Check, np.ndarray]], p: np.ndarray, q: np.ndarray) -> float:
    """``min_{λ ∈ L} F(λ, q)``: the smallest log gain from ``p`` to ``q`` over L, a lower bound over every
    consistent joint world (a linear program)."""
    import clarabel
    from scipy import sparse

    m = len(p)
    L = LocalPolytope.of(blocks, m)
    cost = np.concatenate([np.zeros(L.n_lam), np.log(q) - np.log(p), np.log1p(-q) - np.log1p(-p)])
    A = sparse.vstack([L.A_eq, -sparse.eye(L.n_lam, L.n)]).tocsc()
    rhs = np.concatenate([L.b_eq, np.zeros(L.n_lam)])
    kinds = [clarabel.ZeroConeT(L.A_eq.shape[0]), clarabel.NonnegativeConeT(L.n_lam)]
    settings = _settings(clarabel, LP_TOL)
    solution = clarabel.DefaultSolver(sparse.csc_matrix((L.n, L.n)), cost, A, rhs, kinds, settings).solve()
    status = str(solution.status)
    if status not in ("Solved", "AlmostSolved"):
        raise RuntimeError(f"the guarantee's linear program stopped with status {status}")
    return _certified(blocks, L, np.asarray(solution.z), cost[L.n_lam :].reshape(2, m))


def _certified(blocks, L: LocalPolytope, z: np.ndarray, gains: np.ndarray) -> float:
    """A lower bound on ``min_{λ ∈ L} F(λ, q)`` that holds whatever the solver's accuracy: question i's gains
    (``gains[0, i]`` where true, ``gains[1, i]`` where false) are split over its appearances as the linear
    program's multipliers say, the rounding left over put on its first one; then every tuple on its own takes
    its worst world, and L's points can do no worse than the sum."""
    m = L.m
    shares = [z[rows] for rows in L.rows]  # (2, n, N) per block
    total = np.zeros((2, m))
    first = np.full(m, -1)
    for (_, idx), share in zip(blocks, shares, strict=True):
        for side in range(2):
            np.add.at(total[side], idx.T.ravel(), share[side].ravel())
    for b, (_, idx) in enumerate(blocks):  # the rounding left over goes to each question's first appearance
        flat = idx.T.ravel()
        new = first[flat] < 0
        for side in range(2):
            share = shares[b][side].reshape(-1)
            where = np.flatnonzero(new)
            _, keep = np.unique(flat[where], return_index=True)
            where = where[keep]
            share[where] += gains[side, flat[where]] - total[side, flat[where]]
        first[flat] = 0
    bound = 0.0
    for (check, idx), share in zip(blocks, shares, strict=True):
        if not len(idx):
            continue
        W = np.asarray(check.worlds)
        worth = share[0].T @ (W == TRUE).T.astype(float) + share[1].T @ (W == FALSE).T.astype(float)  # (N, k)
        bound += float(worth.min(axis=1).sum())
    return bound


def feasible(blocks: Sequence[tuple[Check, np.ndarray]], m: int) -> bool:
    """Whether L is non-empty: the test of conflicts for the joint log repair with conditional fields."""
    try:
        guaranteed(blocks, np.full(m, 0.5), np.full(m, 0.5))
    except RuntimeError:
        return False
    return True


def _settings(clarabel, tol: float = TOL):
    settings = clarabel.DefaultSettings()
    settings.verbose = bool(os.environ.get("CC_REPAIR_VERBOSE"))
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = tol
    settings.max_iter = 300
    return settings
