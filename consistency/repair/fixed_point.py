"""The Brier repair's fixed point ``q = Π_{H(q)}(p)`` for checks with conditional fields, solved face by face.

(See :mod:`.tuples` for why the repair is this fixed point.) The projection onto ``H(c)`` lies in the
relative interior of one face: the hull of a subset A of the worlds ``ω̃_s(c)``. On a fixed face it is
the projection onto the face's affine hull, a smooth (rational) function of the conditional values c,
so the fixed point on that face solves ``h_A(c) = q_J(c) - c = 0`` by Newton's method with its exact
Jacobian, from one or two unknowns. Nothing is enumerated per step: every vertex coordinate is a
constant or one of the c_j, so the Gram matrix and right-hand side of the face's least-squares problem
are quadratic polynomials in c whose coefficients are computed once per face (:class:`Face`); a step
costs a few dozen operations on contiguous arrays over the rows.

A face's solution is the fixed point when it is the projection: weights >= 0 and the optimality
condition ``<p - q, ω̃_s(q) - q> <= 0`` for every world s outside A (the KKT conditions, to 1e-12).
Rows start on the full face (where most fixed points lie); a row whose solution fails moves to the
face the exact projection at its current values lies on, for a few rounds, and the rare rest is tried
on every face.

A conditional field j is *free* on a face whose worlds all leave it unresolved: its condition has
probability 0 there, the projection does not depend on c_j, and every c_j meeting the optimality
condition (an interval, cut out by one quadratic per world outside A) is a fixed point. The repair
takes the one nearest ``start`` (the previous value in a joint repair's outer iterations, so they
settle), which makes the choice deterministic.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..checks.check import NONE
from ..metrics.world_plans import plan_for

KKT_TOL = 1e-12  # weights and optimality slack accepted (rounding)
_NEWTON = 10
_LAST_STEP = 1e-7  # residual before the last Newton step
_NULL = 1e-9  # a condition's probability this small: its conditional value is taken as free
_RESIDUAL = 1e-11  # residual accepted at the end (the guarantee's slack is of this order)
_ROUNDS = 4


class Monomials:
    """Monomials of degree <= 2 in the d conditional values: 1, c_j, c_j c_l (j <= l)."""

    def __init__(self, d: int) -> None:
        self.d = d
        self.pairs = [(j, m) for j in range(d) for m in range(j, d)]
        self.size = 1 + d + len(self.pairs)

    def of_quadratic(self, const: float, lin: np.ndarray, quad: np.ndarray) -> np.ndarray:
        """Coefficients of ``const + lin·c + cᵀ quad c``."""
        out = np.zeros(self.size)
        out[0] = const
        out[1 : 1 + self.d] = lin
        for k, (j, m) in enumerate(self.pairs):
            out[1 + self.d + k] = quad[j, m] + (quad[m, j] if m != j else 0.0)
        return out

    def derivative(self, coef: np.ndarray, j: int) -> np.ndarray:
        """Coefficients of ∂/∂c_j (an affine polynomial)."""
        out = np.zeros(self.size)
        out[0] = coef[1 + j]
        for k, (a, b) in enumerate(self.pairs):
            w = coef[1 + self.d + k]
            if a == j:
                out[1 + b] += w * (2.0 if b == j else 1.0)
            elif b == j:
                out[1 + a] += w
        return out

    def values(self, c: list[np.ndarray]) -> list:
        return [None, *c, *(c[j] * c[m] for j, m in self.pairs)]


def sparse(coef: np.ndarray) -> tuple[float, list[tuple[int, float]]]:
    """A polynomial as its constant and its non-zero terms, for :func:`evaluate`."""
    return float(coef[0]), [(int(k), float(coef[k])) for k in np.flatnonzero(coef[1:]) + 1]


def evaluate(poly: tuple[float, list[tuple[int, float]]], mono: list, n: int):
    """Σ coef_k mono_k over the non-zero terms; a constant array when there are none."""
    const, terms = poly
    if not terms:
        return np.full(n, const)
    total = None
    for k, w in terms:
        term = mono[k] if w == 1.0 else w * mono[k]
        total = term if total is None else total + term
    return total + const if const else total


@dataclass(frozen=True)
class Affine:
    """Vertex coordinates ``alpha + beta @ c``: alpha (k, n), beta (k, n, d)."""

    alpha: np.ndarray
    beta: np.ndarray


class Face:
    """The face of worlds ``members`` (first one the origin): its least-squares problem as polynomials in c."""

    def __init__(self, vertices: Affine, members: tuple[int, ...], cols: np.ndarray, mono: Monomials) -> None:
        self.members, self.cols, self.mono = members, cols, mono
        alpha, beta = vertices.alpha[list(members)], vertices.beta[list(members)]
        d = len(cols)
        self.m = len(members) - 1
        a0, b0 = alpha[0], beta[0]
        aD, bD = alpha[1:] - a0, beta[1:] - b0  # (m, n), (m, n, d)
        self.aD, self.bD = aD, bD
        # Free values: every world of the face leaves the field unresolved (its condition has probability 0).
        self.free = np.array([bool(beta[:, cols[j], j].all()) for j in range(d)])
        self.solved = np.flatnonzero(~self.free)

        def product(a1, b1, a2, b2) -> np.ndarray:
            return mono.of_quadratic(float(a1 @ a2), a1 @ b2 + a2 @ b1, b1.T @ b2)

        m = self.m
        G = {(a, b): product(aD[a], bD[a], aD[b], bD[b]) for a in range(m) for b in range(a, m)}
        H = [product(aD[a], bD[a], a0, b0) for a in range(m)]  # <D_a, v_0>
        self.G = {key: sparse(g) for key, g in G.items()}
        self.H = [sparse(h) for h in H]
        self.dG = {(a, b, j): sparse(mono.derivative(g, j)) for (a, b), g in G.items() for j in range(d)}
        self.dH = {(a, j): sparse(mono.derivative(h, j)) for a, h in enumerate(H) for j in range(d)}
        self.a0, self.b0 = a0, b0
        # Non-zero entries, looked up once: the rows' arrays are touched only where they matter.
        self.p_terms = [[(int(i), float(aD[a, i])) for i in np.flatnonzero(aD[a])] for a in range(m)]
        self.pc_terms = [[(j, float(bD[a, cols[j], j])) for j in range(d) if bD[a, cols[j], j]] for a in range(m)]
        self.D_terms = {
            (a, i): [(int(j), float(bD[a, i, j])) for j in np.flatnonzero(bD[a, i])]
            for a in range(m)
            for i in range(len(a0))
        }
        self.v0_terms = [[(int(j), float(b0[i, j])) for j in np.flatnonzero(b0[i])] for i in range(len(a0))]

    def solve(self, P: list[np.ndarray], c: list[np.ndarray], jacobian: bool):
        """Weights x on D (the face's least-squares solution), q_J, and if asked ∂q_J/∂c for the solved values."""
        N = len(P[0])
        mono = self.mono.values(c)
        m, cols = self.m, self.cols
        G = [[None] * m for _ in range(m)]
        for (a, b), coef in self.G.items():
            G[a][b] = G[b][a] = evaluate(coef, mono, N)
        rhs = []
        for a in range(m):
            r = -evaluate(self.H[a], mono, N)
            for i, w in self.p_terms[a]:
                r = r + w * P[i]
            for j, w in self.pc_terms[a]:
                r = r + w * P[cols[j]] * c[j]
            rhs.append(r)
        inverse = _inverse(G)
        x = [sum(inverse[a][b] * rhs[b] for b in range(m)) for a in range(m)] if m else []
        qJ = [self._coordinate(cols[t], c, x, N) for t in range(len(cols))]
        if not jacobian:
            return x, qJ, None
        jac = {}
        for j in self.solved:
            drhs = []
            for a in range(m):
                r = -evaluate(self.dH[(a, j)], mono, N)
                for jj, w in self.pc_terms[a]:
                    if jj == j:
                        r = r + w * P[cols[j]]
                drhs.append(r - sum(evaluate(self.dG[(min(a, b), max(a, b), j)], mono, N) * x[b] for b in range(m)))
            dx = [sum(inverse[a][b] * drhs[b] for b in range(m)) for a in range(m)]
            for t in self.solved:
                i = cols[t]
                value = self.b0[i, j] + sum(dx[a] * self._D(a, i, c) + x[a] * self.bD[a, i, j] for a in range(m))
                jac[(t, j)] = value
        return x, qJ, jac

    def _D(self, a: int, i: int, c: list[np.ndarray]):
        value = self.aD[a, i]
        for j, w in self.D_terms[(a, i)]:
            value = value + w * c[j]
        return value

    def _coordinate(self, i: int, c: list[np.ndarray], x: list[np.ndarray], N: int):
        value = self.a0[i]
        for j, w in self.v0_terms[i]:
            value = value + w * c[j]
        value = value + sum(xa * self._D(a, i, c) for a, xa in enumerate(x))
        return np.broadcast_to(value, (N,)) if np.isscalar(value) else value

    def point(self, c: list[np.ndarray], x: list[np.ndarray], n: int, N: int) -> list:
        return [self._coordinate(i, c, x, N) for i in range(n)]


class FacePlan:
    """Every face of a check's worlds, and the solver over them."""

    def __init__(self, worlds: np.ndarray) -> None:
        self.worlds = np.asarray(worlds)
        k, n = self.worlds.shape
        self.cols = np.flatnonzero((self.worlds == NONE).any(axis=0))
        d = len(self.cols)
        beta = np.zeros((k, n, d))
        for j, col in enumerate(self.cols):
            beta[self.worlds[:, col] == NONE, col, j] = 1.0
        self.vertices = Affine(np.where(self.worlds == NONE, 0.0, self.worlds).astype(float), beta)
        self.mono = Monomials(d)
        self.k, self.n, self.d = k, n, d

    @classmethod
    def of(cls, worlds: np.ndarray) -> FacePlan:
        return plan_for(cls, worlds)

    @cached_property
    def faces(self) -> dict[tuple[int, ...], Face]:
        """Faces by their worlds, largest first (the full face first)."""
        subsets = [s for size in range(self.k, 0, -1) for s in itertools.combinations(range(self.k), size)]
        return {s: Face(self.vertices, s, self.cols, self.mono) for s in subsets}

    @cached_property
    def _face_index(self) -> np.ndarray:
        """Bit mask of a face's worlds -> its position in :attr:`faces` (the empty mask: the full face)."""
        out = np.zeros(1 << self.k, dtype=np.intp)
        for f, members in enumerate(self.faces):
            out[sum(1 << s for s in members)] = f
        return out

    def solve(self, p: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """(q, c, done, iterations): rows not ``done`` found no face (the caller solves them otherwise).

        Active-set rounds: every row starts on the full face; a row whose solution fails drops the world
        of its most negative weight, or else adds the world whose optimality condition fails most. Rows
        still unsolved then try every face.
        """
        N = len(p)
        q = np.zeros_like(p)
        c = np.clip(start, 0.0, 1.0).copy()
        done = np.zeros(N, dtype=bool)
        weights = np.zeros((N, self.k))
        bits = 1 << np.arange(self.k)
        mask = np.full(N, (1 << self.k) - 1)
        tried = np.zeros((N, 1 << self.k), dtype=bool)  # the rounds try each face once per row
        iterations = 0
        for _ in range(_ROUNDS):
            todo = np.flatnonzero(~done & ~tried[np.arange(N), mask])
            if not todo.size:
                break
            for key in np.unique(mask[todo]):
                rows = todo[mask[todo] == key]
                tried[rows, key] = True
                face = self.faces[tuple(np.flatnonzero(bits & key))]
                ok, qf, cf, lam, slack, it = self._on_face(face, p[rows], c[rows], start[rows])
                iterations = max(iterations, it)
                q[rows[ok]], c[rows[ok]], done[rows[ok]], weights[rows[ok]] = qf[ok], cf[ok], True, lam[ok]
                bad = np.flatnonzero(~ok)
                if not bad.size:
                    continue
                c[rows[bad]] = cf[bad]
                lam, slack = lam[bad], slack[bad]
                drop = lam.min(axis=1) < -KKT_TOL
                new = np.where(drop, key & ~bits[lam.argmin(axis=1)], key | bits[slack.argmax(axis=1)])
                mask[rows[bad]] = np.where(new > 0, new, key)
        todo = np.flatnonzero(~done)
        for members in self.faces if todo.size else ():
            rows = todo
            if rows.size:
                face = self.faces[members]
                ok, qf, cf, lam, *_ = self._on_face(face, p[rows], start[rows], start[rows], patient=True)
                q[rows[ok]], c[rows[ok]], done[rows[ok]], weights[rows[ok]] = qf[ok], cf[ok], True, lam[ok]
                todo = np.flatnonzero(~done)
            if not todo.size:
                break
        self._settle_free(p, start, q, c, done, weights)
        return q, c, done, iterations

    def _settle_free(self, p, start, q, c, done, weights) -> None:
        """Rows solved where a condition has probability ~0 (a conditional value free over an interval): the
        same point lies on the smaller face of its positive weights, whose free values are then chosen
        nearest the start. Rows whose smaller face fails keep their solution."""
        resolves = (self.vertices.beta[:, self.cols, np.arange(self.d)] == 0).astype(float)  # (k, d)
        if not self.d:
            return
        degenerate = np.flatnonzero(done & ((weights @ resolves) <= _NULL).any(axis=1))
        if not degenerate.size:
            return
        keys = (weights[degenerate] > _NULL) @ (1 << np.arange(self.k))
        for key in np.unique(keys):
            rows = degenerate[keys == key]
            face = self.faces[tuple(np.flatnonzero((1 << np.arange(self.k)) & key))]
            if not face.free.any():
                continue
            ok, qf, cf, *_ = self._on_face(face, p[rows], c[rows], start[rows])
            q[rows[ok]], c[rows[ok]] = qf[ok], cf[ok]

    def vertices_at(self, c: np.ndarray) -> np.ndarray:
        """``ω̃_s(c)`` for every row: (N, k, n)."""
        return self.vertices.alpha[None] + np.einsum("sij,rj->rsi", self.vertices.beta, c)

    def _on_face(self, face: Face, p: np.ndarray, init: np.ndarray, start: np.ndarray, patient: bool = False):
        """Newton on ``face`` for every row from ``init`` (free values: nearest ``start``); ``patient``: no
        early exit for rows whose weights go negative on the way, and more iterations.

        Returns (valid, q, c, weights, slack, iterations): weights (N, k) on the face's worlds (0 elsewhere),
        slack (N, k) the optimality condition of the worlds outside it (-inf on the face).
        """
        N = len(p)
        P = [np.ascontiguousarray(p[:, i]) for i in range(self.n)]
        c = [np.clip((start if face.free[j] else init)[:, j], 0.0, 1.0) for j in range(self.d)]
        solved = face.solved
        iterations = 0
        todo = np.arange(N)
        converged = np.zeros(N, dtype=bool)
        while solved.size and todo.size and iterations < (3 * _NEWTON if patient else _NEWTON):
            iterations += 1
            Pt, ct = [a[todo] for a in P], [a[todo] for a in c]
            x, qJ, jac = face.solve(Pt, ct, True)
            h = [qJ[t] - ct[t] for t in solved]
            J = [[jac[(t, j)] - (1.0 if t == j else 0.0) for j in solved] for t in solved]
            with np.errstate(all="ignore"):
                step = _solve_small(J, h)
            moved = np.zeros(len(todo))
            for t, st in zip(solved, step, strict=True):
                new = np.clip(ct[t] - np.where(np.isfinite(st), st, 0.0), 0.0, 1.0)
                moved = np.maximum(moved, np.abs(new - ct[t]))
                c[t][todo] = new
            size = np.max([np.abs(v) for v in h], axis=0)
            # Newton converges quadratically: a residual of 1e-7 before the step is ~1e-14 after it (the
            # final evaluation below checks it).
            finished = size <= _LAST_STEP
            converged[todo[finished]] = True
            keep = ~finished & np.isfinite(size) & (moved > 0)  # held at the box's edge: no solution here
            if iterations >= 3 and x and not patient:  # clearly off this face: a weight well below 0
                keep &= np.minimum(1.0 - sum(x), np.min(x, axis=0)) > -1e-3
            todo = todo[keep]
        if not solved.size:
            converged[:] = True
        # The final point, the free values and the KKT conditions.
        lam = np.zeros((N, self.k))
        slack = np.full((N, self.k), -np.inf)
        with np.errstate(all="ignore"):
            x, qJ, _ = face.solve(P, c, False)
            residual = np.max([np.abs(qJ[t] - c[t]) for t in solved], axis=0) if solved.size else np.zeros(N)
            weights = [1.0 - sum(x), *x] if x else [np.ones(N)]
            for s, w in zip(face.members, weights, strict=True):
                lam[:, s] = w
            lam[~np.isfinite(lam)] = -np.inf
            valid = converged & (residual <= _RESIDUAL) & (lam.min(axis=1) >= -KKT_TOL)
            q = face.point(c, x, self.n, N)
            if face.free.any():
                self._free_values(face, P, q, c)
                q = face.point(c, x, self.n, N)
            for s in self._outside(face):
                slack[:, s] = self._slack(s, P, q, c)
            valid &= np.nan_to_num(slack, nan=np.inf).max(axis=1) <= KKT_TOL
        cs = np.stack(c, axis=1) if self.d else np.zeros((N, 0))
        return valid, np.stack(q, axis=1), cs, lam, np.nan_to_num(slack, nan=-np.inf), iterations

    def _outside(self, face: Face) -> list[int]:
        return [s for s in range(self.k) if s not in face.members]

    def _slack(self, s: int, P, q, c):
        """``<p - q, ω̃_s(c) - q>`` per row."""
        alpha, beta = self.vertices.alpha[s], self.vertices.beta[s]
        total = 0.0
        for i in range(self.n):
            v = alpha[i] + sum(beta[i, j] * c[j] for j in np.flatnonzero(beta[i]))
            total = total + (P[i] - q[i]) * (v - q[i])
        return total

    def _free_values(self, face: Face, P, q, c) -> None:
        """Each free value nearest its start within the interval the optimality condition allows.

        For a world s outside the face, the slack is ``K_s + Σ_free [s resolves j] (p_j - c_j)(ω_sj - c_j)``
        (q_j = c_j on the face): per free value a convex quadratic, so each world allows an interval. With
        two free values, they are settled one after the other, twice.
        """
        free = np.flatnonzero(face.free)
        for _ in range(2 if len(free) > 1 else 1):
            for j in free:
                col = self.cols[j]
                lo, hi = np.zeros(len(P[0])), np.ones(len(P[0]))
                for s in self._outside(face):
                    w = self.worlds[s, col]
                    if w == NONE:
                        continue  # no term in c_j; the final check judges this world
                    rest = self._slack(s, P, q, c) - (P[col] - c[j]) * (w - c[j])
                    # c² - (p + w) c + p w + rest <= 0
                    b = -(P[col] + w)
                    disc = b * b - 4.0 * (P[col] * w + rest)
                    with np.errstate(invalid="ignore"):
                        root = np.sqrt(np.maximum(disc, 0.0))
                    lo = np.maximum(lo, np.where(disc >= 0, (-b - root) / 2.0, np.inf))
                    hi = np.minimum(hi, np.where(disc >= 0, (-b + root) / 2.0, -np.inf))
                c[j] = np.where(lo <= hi, np.clip(c[j], lo, hi), c[j])
                q[col] = c[j]


def _inverse(G: list[list]) -> list[list]:
    """The inverse of small symmetric matrices given entry by entry (vectors over rows); singular: inf/nan."""
    m = len(G)
    if m == 0:
        return []
    with np.errstate(all="ignore"):
        if m == 1:
            return [[1.0 / G[0][0]]]
        if m == 2:
            a, b, d = G[0][0], G[0][1], G[1][1]
            det = a * d - b * b
            return [[d / det, -b / det], [-b / det, a / det]]
        if m == 3:
            a, b, c = G[0][0], G[0][1], G[0][2]
            e, f, i = G[1][1], G[1][2], G[2][2]
            c00, c01, c02 = e * i - f * f, c * f - b * i, b * f - c * e
            c11, c12, c22 = a * i - c * c, b * c - a * f, a * e - b * b
            det = a * c00 + b * c01 + c * c02
            return [
                [c00 / det, c01 / det, c02 / det],
                [c01 / det, c11 / det, c12 / det],
                [c02 / det, c12 / det, c22 / det],
            ]
    stack = np.moveaxis(np.array([[np.broadcast_to(g, np.shape(G[0][0])) for g in row] for row in G]), -1, 0)
    with np.errstate(all="ignore"):
        inv = np.linalg.pinv(stack)
    return [[inv[:, a, b] for b in range(m)] for a in range(m)]


def _solve_small(J: list[list], h: list) -> list:
    """Solve the 1 x 1 or 2 x 2 (or larger) systems ``J s = h`` given entry by entry."""
    if len(h) == 1:
        return [h[0] / J[0][0]]
    if len(h) == 2:
        a, b, c, d = J[0][0], J[0][1], J[1][0], J[1][1]
        det = a * d - b * c
        return [(d * h[0] - b * h[1]) / det, (a * h[1] - c * h[0]) / det]
    A = np.moveaxis(np.array(J), -1, 0)
    sol = np.linalg.solve(A, np.stack(h, axis=1)[..., None])[..., 0]
    return list(sol.T)
