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
``moved`` is V; ``guaranteed`` is a certified lower bound on ``min_{λ ∈ L} F(λ, q)`` at the prices as
returned, which meets V to the solver's accuracy.

Solved by the augmented Lagrangian of :mod:`.augmented` on lifted coordinates: a question some tuple asks
as a conditional field becomes two, its masses (a, b), with the objective ``r KL(a/r ‖ p)`` (its 2 x 2 Hessian
block enters the Newton systems); every other question stays one coordinate with r = 1 and KL; each tuple's
worlds become fixed 0/1 vectors, so the local step is the projection onto a fixed hull. Its multipliers split
each question's gain over its tuples, which certifies the guarantee (:func:`bound`). Clarabel's exponential
cone (``t >= u log(u / v)`` exactly when ``(-t, u, v)`` is in the cone, with ``v = p r``) is the reference
(``CC_REPAIR_SOLVER=clarabel``) and takes over when the augmented Lagrangian does not converge (tuples in
conflict, or a price forced to 0 or 1); measured, it stops with ``InsufficientProgress`` from 2,000 tuples
of the benchmark's mix on, and its prices (its dual solution) are ~3e-6 from coherent on small graphs.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..checks.check import FALSE, NONE, TRUE, Check
from ..errors import RunFailed
from .augmented import AugmentedLagrangian, LocalBlock

log = logging.getLogger(__name__)

TOL = 1e-10
LP_TOL = 1e-12  # the guarantee's linear program (measured: at 1e-10 it overstated the minimum by 9e-10)
CLARABEL_MAX = 2000  # tuples up to which Clarabel takes over (beyond, it stops with InsufficientProgress)


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
    guaranteed: float = 0.0  # a certified lower bound on the log gain at q over L


class Infeasible(RunFailed):
    """L is empty (no joint world either): Clarabel's status."""


def solve(blocks: Sequence[tuple[Check, np.ndarray]], p: np.ndarray) -> LogSolution:
    """The joint arbitrage prices of ``blocks`` over questions ``0..len(p)-1``, ``p`` strictly inside (0, 1): by the
    augmented Lagrangian on the lifted coordinates, or Clarabel's exponential cone (``CC_REPAIR_SOLVER=clarabel``).
    Raises :class:`Infeasible` (Clarabel), or RuntimeError when the solver stops without a solution."""
    if os.environ.get("CC_REPAIR_SOLVER") == "clarabel":
        return solve_clarabel(blocks, p)
    try:
        return solve_lifted(blocks, p)
    except RuntimeError:  # tuples in conflict, or an optimum on the boundary (a price forced to 0 or 1)
        if sum(len(idx) for _, idx in blocks) > CLARABEL_MAX:
            raise
        log.info("joint log repair: the augmented Lagrangian did not converge; Clarabel takes over")
        return solve_clarabel(blocks, p)


@dataclass
class Lifted:
    """The problem in the augmented Lagrangian's terms: a question that some tuple asks as a conditional field
    becomes two coordinates, its true mass a (at its own position) and its false mass b (at ``second``); every
    other question stays one coordinate (r = 1). Each block of rows with the same lifted fields is a
    :class:`LocalBlock` whose worlds are the 0/1 indicators of those coordinates."""

    local: list[LocalBlock]
    lifted: np.ndarray  # the questions with two coordinates
    second: np.ndarray  # per question, its b coordinate (-1: none)

    @classmethod
    def of(cls, blocks: Sequence[tuple[Check, np.ndarray]], m: int) -> Lifted:
        cond = np.zeros(m, dtype=bool)
        for check, idx in blocks:
            cols = np.flatnonzero((np.asarray(check.worlds) == NONE).any(axis=0))
            if cols.size and len(idx):
                cond[idx[:, cols].ravel()] = True
        lifted = np.flatnonzero(cond)
        second = np.full(m, -1, dtype=np.int64)
        second[lifted] = m + np.arange(len(lifted))
        local = []
        for check, idx in blocks:
            W = np.asarray(check.worlds)
            n = W.shape[1]
            pattern = cond[idx] @ (1 << np.arange(n)) if len(idx) else np.zeros(0, dtype=np.int64)
            for key in np.unique(pattern):
                rows = np.flatnonzero(pattern == key)
                cols, worlds, pairs = [], [], []
                for f in range(n):
                    cols.append(idx[rows, f])
                    worlds.append(W[:, f] == TRUE)
                    if key >> f & 1:
                        cols.append(second[idx[rows, f]])
                        worlds.append(W[:, f] == FALSE)
                        pairs.append((len(cols) - 2, len(cols) - 1))
                local.append(
                    LocalBlock(
                        np.stack(cols, axis=1).astype(np.int64),
                        worlds=np.stack(worlds, axis=1).astype(float),
                        pairs=np.array(pairs) if pairs else None,
                    )
                )
        return cls(local, lifted, second)


def solve_lifted(blocks: Sequence[tuple[Check, np.ndarray]], p: np.ndarray) -> LogSolution:
    """min D over L by the augmented Lagrangian of :mod:`.augmented` with the lifted coordinates; the prices
    ``a / r``; ``value`` D there. Its multipliers also give the certified guarantee (:func:`bound`)."""
    m = len(p)
    lifted = Lifted.of(blocks, m)
    ia, ib = lifted.lifted, lifted.second[lifted.lifted]
    start = np.concatenate([p, np.zeros(len(ia))])
    start[ia], start[ib] = 0.5 * p[ia], 0.5 * (1.0 - p[ia])  # half the mass resolving
    alm = AugmentedLagrangian(lifted.local, start, objective="log", pairs=(ia, ib, p[ia]))
    solution = alm.solve()
    log.info(
        "joint log repair with conditional fields: %d rounds, %d Newton steps, incoherence %.1e, %.1f s",
        solution.rounds,
        solution.newton,
        solution.incoherence,
        solution.seconds,
    )
    if not solution.converged:
        raise RuntimeError("the augmented Lagrangian did not converge")
    x = solution.q
    q = x[:m].copy()
    resolves = np.ones(m)
    resolves[ia] = x[ia] + x[ib]
    q[ia] = x[ia] / resolves[ia]
    q = np.clip(q, np.nextafter(0.0, 1.0), np.nextafter(1.0, 0.0))
    return LogSolution(q, resolves, alm.objective(x), "Solved", bound(lifted, p, q, [-y for y in solution.y]))


def bound(lifted: Lifted, p: np.ndarray, q: np.ndarray, shares: list[np.ndarray]) -> float:
    """A lower bound on ``min_{λ ∈ L} F(λ, q)`` whatever the solver's accuracy: each coordinate's gain
    coefficient is split over the tuples it appears in as ``shares`` (the multipliers) say, the rest put
    on its first appearance; every tuple then takes its worst world, and L's points can do no worse."""
    m = len(p)
    coef = np.concatenate([np.log(q) - np.log1p(-q) - np.log(p) + np.log1p(-p), np.zeros(len(lifted.lifted))])
    const = np.log1p(-q) - np.log1p(-p)  # a one-coordinate question's gain where it is false
    ia, ib = lifted.lifted, lifted.second[lifted.lifted]
    coef[ia], coef[ib] = np.log(q[ia]) - np.log(p[ia]), np.log1p(-q[ia]) - np.log1p(-p[ia])
    const[ia] = 0.0
    total = np.zeros(len(coef))
    for b, share in zip(lifted.local, shares, strict=True):
        np.add.at(total, b.idx.ravel(), share.ravel())
    seen = np.zeros(len(coef), dtype=bool)
    value = 0.0
    for b, share in zip(lifted.local, shares, strict=True):
        share = share.copy()
        flat = b.idx.ravel()
        first = np.flatnonzero(~seen[flat])
        _, keep = np.unique(flat[first], return_index=True)
        first = first[keep]
        share.ravel()[first] += coef[flat[first]] - total[flat[first]]
        seen[flat] = True
        value += float((share @ b.worlds.T).min(axis=1).sum())
    used = np.zeros(m, dtype=bool)
    for b in lifted.local:
        used[b.idx[b.idx < m]] = True
    return value + float(const[used].sum())


def solve_clarabel(blocks: Sequence[tuple[Check, np.ndarray]], p: np.ndarray) -> LogSolution:
    """The reference: min D over L with Clarabel's exponential cone. Measured: solved on graphs of tens of
    tuples, but ``InsufficientProgress`` from 2,000 tuples of the benchmark's mix on."""
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
    if status not in ("Solved", "AlmostSolved", "InsufficientProgress"):
        raise RuntimeError(f"the exponential-cone solver stopped: {status}")
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
    return LogSolution(q, resolves, float(cost @ x), status, guaranteed(blocks, p, q))


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
