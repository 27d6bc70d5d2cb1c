"""The joint Brier repair's inner QP, with the conditional questions' values fixed in the worlds.

``min ½||x - p||²`` (over the question variables; weight variables, where a check needs them, are not
penalised) subject to ``A_eq x = b_eq`` and ``A_in x <= b_in``. :func:`build` writes the constraints
of a graph of tuples; :func:`solve_clarabel` solves them with Clarabel (an interior-point solver) at
gap and feasibility tolerances of 1e-12. The multipliers ``z`` follow Clarabel's convention: ``p - q =
A_eqᵀ z_eq + A_inᵀ z_in`` on the question variables, ``z_in >= 0``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ..checks.check import NONE, Check

_QDLDL_ROWS = 150_000  # constraint rows below which QDLDL is the faster factorisation


@dataclass
class Block:
    check: Check
    idx: np.ndarray  # (N_t, n) question positions
    offset: int  # first λ variable (after the M question variables)
    worlds: np.ndarray  # (k, n) int8

    @property
    def size(self) -> int:
        return self.idx.shape[0] * len(self.worlds)


@dataclass
class System:
    """The QP's constraints, and per block how to read its weights and its share of the multipliers."""

    n_vars: int
    A_eq: object  # scipy.sparse csr (n_eq, n_vars)
    b_eq: np.ndarray
    A_in: object  # scipy.sparse csr (n_in, n_vars)
    b_in: np.ndarray
    weights: list  # per block: None, (coef, const) (weights affine in q) or the λ variables' indices
    normals: list  # per block: None or (eq_start, null, ineq_start, rows)
    eq_owner: np.ndarray  # per equality row: the tuple it belongs to (numbered over the blocks in order)
    in_owner: np.ndarray  # per inequality row: the same
    n_tuples: int

    @property
    def affine(self) -> bool:
        """Every block's weights are affine in the forecasts: no variables but the questions'."""
        return self.n_vars == self.A_eq.shape[1] and all(not isinstance(w, np.ndarray) for w in self.weights)


def build(parts: list[Block], M: int, c: np.ndarray | None) -> System:
    """The constraints with the conditional questions' values ``c`` fixed in the worlds.

    A tuple whose worlds are affinely independent (every check we ship, for any conditional values)
    needs no weight variables: its weights are an affine function of its forecasts on the worlds'
    affine hull, so its constraints are that hull's equations and those weights' signs. Other
    checks keep one weight variable per world.
    """
    eq, ineq = _Rows(), _Rows()
    n_vars = M
    weights: list = []
    normals: list = []
    first = 0  # the block's first tuple number
    for part in parts:
        N, n = part.idx.shape
        owner = first + np.arange(N)
        first += N
        if N == 0:
            weights.append(None)
            normals.append(None)
            continue
        V = vertices(part, c)  # (N, k, n)
        k = V.shape[1]
        B = V[:, 1:] - V[:, :1]
        affine = np.linalg.matrix_rank(B[:1]) == k - 1 if k > 1 else True
        if affine and k > 1:
            G = np.einsum("rid,rjd->rij", B, B)
            affine = bool((np.abs(np.linalg.det(G)) > 1e-12).all())
        if affine:
            v0 = V[:, 0]
            if k > 1:
                Lmu = np.linalg.solve(G, B)  # μ = Lmu (x - v0): weights of worlds 1..k-1
                coef = np.concatenate([-Lmu.sum(axis=1, keepdims=True), Lmu], axis=1)
                const = -np.einsum("rkd,rd->rk", coef, v0)
                const[:, 0] += 1.0
            else:
                coef, const = np.zeros((N, 1, n)), np.ones((N, 1))
            ineq_start = ineq.n
            ineq.add(-coef, part.idx, const, owner)  # weights >= 0
            weights.append((coef, const))
            null = np.linalg.svd(B, full_matrices=True)[2][:, k - 1 :] if k > 1 else np.eye(n)[None].repeat(N, 0)
            eq_start = eq.n
            if null.shape[1]:
                eq.add(null, part.idx, np.einsum("red,rd->re", null, v0), owner)  # on the worlds' affine hull
            normals.append((eq_start, null, ineq_start, -coef))
        else:  # one weight variable per world: q[idx] = Vᵀ λ, Σλ = 1, λ >= 0
            lam = n_vars + np.arange(N * k).reshape(N, k)
            n_vars += N * k
            coef = np.concatenate([np.eye(n)[None].repeat(N, 0), -V.transpose(0, 2, 1)], axis=2)
            eq.add(coef, np.concatenate([part.idx, lam], axis=1), np.zeros((N, n)), owner)
            eq.add(np.ones((N, 1, k)), lam, np.ones((N, 1)), owner)
            ineq.add(-np.ones((N * k, 1, 1)), lam.reshape(-1, 1), np.zeros((N * k, 1)), np.repeat(owner, k))
            weights.append(lam)
            normals.append(None)
    A_eq, A_in = eq.matrix(n_vars), ineq.matrix(n_vars)
    return System(n_vars, A_eq, eq.rhs(), A_in, ineq.rhs(), weights, normals, eq.owners(), ineq.owners(), first)


def solve_clarabel(system: System, p: np.ndarray, tol: float = 1e-12) -> tuple[np.ndarray, np.ndarray, str]:
    """(x, z, status): the solution over all variables and the multipliers (equalities first)."""
    import clarabel
    from scipy import sparse

    M = len(p)
    n_eq, n_in = system.A_eq.shape[0], system.A_in.shape[0]
    A = sparse.vstack([system.A_eq, system.A_in]).tocsc()
    b = np.concatenate([system.b_eq, system.b_in])
    P = sparse.diags(np.concatenate([np.ones(M), np.zeros(system.n_vars - M)])).tocsc()
    settings = clarabel.DefaultSettings()
    settings.verbose = bool(os.environ.get("CC_REPAIR_VERBOSE"))
    settings.tol_gap_abs = settings.tol_gap_rel = tol
    settings.tol_feas = tol
    settings.tol_ktratio = 1e-10
    settings.max_iter = 200
    # Measured on tuples sharing base questions: QDLDL factors small systems several times faster
    # than faer (20,000 tuples: 0.9 s against 4.4 s), faer large ones (100,000 tuples: 42 s against 156 s).
    if n_eq + n_in < _QDLDL_ROWS:
        settings.direct_solve_method = "qdldl"
    cones = [clarabel.ZeroConeT(n_eq), clarabel.NonnegativeConeT(n_in)]
    q = np.concatenate([-p, np.zeros(system.n_vars - M)])
    solution = clarabel.DefaultSolver(P, q, A, b, cones, settings).solve()
    return np.asarray(solution.x), np.asarray(solution.z), str(solution.status)


def solve_kl_clarabel(system: System, p: np.ndarray, tol: float = 1e-12) -> tuple[np.ndarray, str]:
    """(x, status): the KL projection ``min Σ_i KL(x_i ‖ p_i)`` under the same constraints, with Clarabel's
    exponential cone (``u log(u/v) <= t`` exactly when ``(-t, u, v)`` is in the cone): the reference for the
    joint log repair. ``p`` strictly inside (0, 1)."""
    import clarabel
    from scipy import sparse

    M, n = len(p), system.n_vars
    t1, t2 = n + np.arange(M), n + M + np.arange(M)  # epigraph variables of q log(q/p) and (1-q) log((1-q)/(1-p))
    rows = np.arange(6 * M).reshape(M, 6)
    questions = np.arange(M)
    coo_r = np.concatenate([rows[:, 0], rows[:, 1], rows[:, 3], rows[:, 4]])
    coo_c = np.concatenate([t1, questions, t2, questions])
    coo_v = np.concatenate([np.ones(M), -np.ones(M), np.ones(M), np.ones(M)])
    cone_rows = sparse.csr_matrix((coo_v, (coo_r, coo_c)), shape=(6 * M, n + 2 * M))
    cone_b = np.zeros((M, 6))
    cone_b[:, 2], cone_b[:, 4], cone_b[:, 5] = p, 1.0, 1.0 - p
    A = sparse.vstack(
        [
            sparse.hstack([system.A_eq, sparse.csr_matrix((system.A_eq.shape[0], 2 * M))]),
            sparse.hstack([system.A_in, sparse.csr_matrix((system.A_in.shape[0], 2 * M))]),
            cone_rows,
        ]
    ).tocsc()
    b = np.concatenate([system.b_eq, system.b_in, cone_b.ravel()])
    c = np.concatenate([np.zeros(n), np.ones(2 * M)])
    settings = clarabel.DefaultSettings()
    settings.verbose = bool(os.environ.get("CC_REPAIR_VERBOSE"))
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = tol
    settings.max_iter = 300
    cones = [clarabel.ZeroConeT(system.A_eq.shape[0]), clarabel.NonnegativeConeT(system.A_in.shape[0])]
    cones += [clarabel.ExponentialConeT()] * (2 * M)
    P = sparse.csc_matrix((n + 2 * M, n + 2 * M))
    solution = clarabel.DefaultSolver(P, c, A, b, cones, settings).solve()
    return np.asarray(solution.x)[:n], str(solution.status)


def involved_tuples(system: System, z: np.ndarray, n_tuples: int) -> np.ndarray | None:
    """Per tuple, whether an infeasibility certificate ``z`` (a Farkas vector over the rows) involves it."""
    if not np.all(np.isfinite(z)) or not len(z):
        return None
    owners = np.concatenate([system.eq_owner, system.in_owner])
    weight = np.abs(z)
    involved = np.zeros(n_tuples, dtype=bool)
    involved[np.unique(owners[weight > 1e-7 * weight.max()])] = True
    return involved


def read_solution(system: System, parts: list[Block], x: np.ndarray, z: np.ndarray) -> tuple[list, list]:
    """Each block's world weights λ and local projection target (None where not available).

    Stationarity: p - q = Aᵀz, a sum of one normal vector per tuple; tuple t's projection target with
    the others' held fixed is q[idx_t] + its own normal y_t.
    """
    n_eq = system.A_eq.shape[0]
    targets: list[np.ndarray | None] = []
    for part, how in zip(parts, system.normals, strict=True):
        if how is None:
            targets.append(None)
            continue
        eq_start, null, ineq_start, rows = how
        N = len(part.idx)
        start = n_eq + ineq_start
        y = np.einsum("rkd,rk->rd", rows, z[start : start + rows.shape[0] * rows.shape[1]].reshape(N, -1))
        if null.shape[1]:
            y += np.einsum("red,re->rd", null, z[eq_start : eq_start + N * null.shape[1]].reshape(N, -1))
        targets.append(np.clip(x[part.idx], 0.0, 1.0) + y)
    lams = []
    for part, how in zip(parts, system.weights, strict=True):
        if how is None:
            lams.append(np.zeros((0, len(part.worlds))))
        elif isinstance(how, tuple):
            lams.append(np.einsum("rkd,rd->rk", how[0], x[part.idx]) + how[1])
        else:
            lams.append(x[how])
    return lams, targets


def vertices(part: Block, c: np.ndarray | None) -> np.ndarray:
    """Each tuple's worlds, unresolved coordinates set to the conditional questions' values: (N, k, n)."""
    N = len(part.idx)
    W = part.worlds
    V = np.broadcast_to(np.where(W == NONE, 0.0, W).astype(float), (N, *W.shape)).copy()
    for f in np.flatnonzero((W == NONE).any(axis=0)):
        if c is None:
            raise AssertionError("a conditional field needs its values")
        rows = W[:, f] == NONE
        V[:, rows, f] = c[part.idx[:, f]][:, None]
    return V


class _Rows:
    """Sparse constraint rows, added a block of tuples at a time."""

    def __init__(self) -> None:
        self.rows: list[np.ndarray] = []
        self.cols: list[np.ndarray] = []
        self.vals: list[np.ndarray] = []
        self.b: list[np.ndarray] = []
        self.owner: list[np.ndarray] = []
        self.n = 0

    def add(self, coef: np.ndarray, cols: np.ndarray, rhs: np.ndarray, owner: np.ndarray) -> None:
        """``coef`` (N, r, m) over columns ``cols`` (N, m): r rows per tuple, right-hand sides ``rhs`` (N, r);
        ``owner`` (N,): each tuple's number."""
        N, r, _m = coef.shape
        self.owner.append(np.repeat(owner, r))
        ids = self.n + np.arange(N * r).reshape(N, r)
        keep = np.abs(coef) > 1e-15
        self.rows.append(np.broadcast_to(ids[:, :, None], coef.shape)[keep])
        self.cols.append(np.broadcast_to(cols[:, None, :], coef.shape)[keep])
        self.vals.append(coef[keep])
        self.b.append(rhs.ravel())
        self.n += N * r

    def matrix(self, n_cols: int):
        from scipy import sparse

        if not self.rows:
            return sparse.csr_matrix((0, n_cols))
        data = (np.concatenate(self.vals), (np.concatenate(self.rows), np.concatenate(self.cols)))
        return sparse.csr_matrix(data, shape=(self.n, n_cols))

    def rhs(self) -> np.ndarray:
        return np.concatenate(self.b) if self.b else np.zeros(0)

    def owners(self) -> np.ndarray:
        return np.concatenate(self.owner) if self.owner else np.zeros(0, dtype=np.intp)


@dataclass(frozen=True)
class Residuals:
    """How far ``(x, z)`` is from satisfying the QP's KKT conditions (sup norms): the constraints (``primal``),
    stationarity ``x - p + Aᵀz = 0`` (``dual``), the signs of the inequality multipliers (``sign``) and
    complementary slackness ``z_in (b_in - A_in x) = 0`` (``gap``)."""

    primal: float
    dual: float
    sign: float
    gap: float
    total_gap: float = 0.0  # Σ |z_in (b_in - A_in x)|: with the rest ~0, ½||x - x*||² is at most about this

    @property
    def worst(self) -> float:
        return max(self.primal, self.dual, self.sign, self.gap)

    @property
    def distance_bound(self) -> float:
        """How far the solution can be from the exact one: ½||x - x*||² is at most the duality gap (the objective
        is 1-strongly convex in the questions), here the total complementarity, the other residuals being ~0."""
        return float(np.sqrt(2.0 * self.total_gap))

    def __str__(self) -> str:
        return (
            f"kkt={self.worst:.1e} (primal {self.primal:.1e} dual {self.dual:.1e} sign {self.sign:.1e} "
            f"gap {self.gap:.1e} total_gap {self.total_gap:.1e}) within={self.distance_bound:.1e}"
        )


def kkt_residuals(system: System, p: np.ndarray, x: np.ndarray, z: np.ndarray) -> Residuals:
    """The KKT residuals of a solution of :func:`build`'s QP with multipliers ``z`` (equalities first, Clarabel's
    convention): what makes a solver's answer a reference, whatever its status says."""
    n_eq = system.A_eq.shape[0]
    z_eq, z_in = z[:n_eq], z[n_eq:]
    slack = system.b_in - system.A_in @ x
    primal = max(float(np.abs(system.A_eq @ x - system.b_eq).max(initial=0.0)), float((-slack).max(initial=0.0)))
    stationarity = system.A_eq.T @ z_eq + system.A_in.T @ z_in
    stationarity[: len(p)] += x[: len(p)] - p
    sign = float((-z_in).max(initial=0.0))
    products = np.abs(z_in * slack)
    dual = float(np.abs(stationarity).max(initial=0.0))
    return Residuals(primal, dual, sign, float(products.max(initial=0.0)), float(products.sum()))
