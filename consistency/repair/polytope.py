"""Euclidean projection onto the convex hull of a check's worlds, vectorised over tuples.

A check has a handful of worlds (at most ``n + 1`` for ``n`` fields in every check we ship), so the
projection is found exactly by enumeration: the projection of ``p`` onto a polytope lies in the
relative interior of one face, the hull of an affinely independent subset ``S`` of the vertices, and
equals the projection of ``p`` onto the affine hull of ``S``. For every non-empty subset we take that
affine projection's barycentric coordinates, clip them to a distribution (so every candidate is a
point of the hull) and keep the candidate that best satisfies the projection's optimality condition
``max_v <p - x, v - x> <= 0`` over the vertices v: the true projection is one of them. (Choosing the
nearest candidate instead would be exact in theory, but distances tie within rounding for points up
to 1e-8 apart, while the optimality condition, which is what the score guarantees rest on, is
accurate to rounding.)

Worlds may be given once for all tuples (binary checks: the maps are precomputed, one matmul per
subset) or per tuple (conditional checks, whose unresolved coordinates take the forecast's own
conditional values: see :mod:`.tuples`).
"""

from __future__ import annotations

from functools import lru_cache
from itertools import combinations

import numpy as np

_BLOCK = 16_384
FACE_TOL = 1e-14  # optimality slack at which a guessed face is accepted (relative)


def subsets(k: int) -> list[np.ndarray]:
    """Every non-empty subset of ``range(k)``, largest first."""
    return [np.array(c, dtype=np.intp) for s in range(k, 0, -1) for c in combinations(range(k), s)]


class FixedHull:
    """Projection onto the hull of one vertex matrix ``V`` (``k x n``), with per-subset maps precomputed."""

    def __init__(self, V: np.ndarray) -> None:
        self.V = np.asarray(V, dtype=float)
        k, n = self.V.shape
        self.k, self.n = k, n
        # For subset S = (v0, v1, ...): barycentric coordinates x of the affine projection onto its hull
        # solve G x = B (p - v0), G = B Bᵀ, B = rows v_j - v0. Affinely dependent subsets are skipped
        # (a dependent subset's hull is covered by its independent subsets).
        self.plans: list[tuple[np.ndarray, np.ndarray | None, np.ndarray | None]] = []
        for S in subsets(k):
            if len(S) == 1:
                self.plans.append((S, None, None))
                continue
            B = self.V[S[1:]] - self.V[S[0]]
            if np.linalg.matrix_rank(B) < len(S) - 1:
                continue
            M = np.linalg.solve(B @ B.T, B)  # x = M (p - v0)
            self.plans.append((S, M.T.copy(), -self.V[S[0]] @ M.T))
        self.by_mask = {int((1 << S).sum()): plan for plan in self.plans for S in [plan[0]]}

    @staticmethod
    @lru_cache(maxsize=64)
    def _cached(key: bytes, shape: tuple[int, int]) -> FixedHull:
        return FixedHull(np.frombuffer(key, dtype=float).reshape(shape))

    @classmethod
    def of(cls, V: np.ndarray) -> FixedHull:
        V = np.ascontiguousarray(V, dtype=float)
        return cls._cached(V.tobytes(), V.shape)

    def project(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(q, λ): the projection of each row of ``p`` and its weights on the vertices."""
        q, lam = np.empty_like(p), np.empty((len(p), self.k))
        for s in range(0, len(p), _BLOCK):
            q[s : s + _BLOCK], lam[s : s + _BLOCK] = self._project(p[s : s + _BLOCK])
        return q, lam

    def project_near(self, p: np.ndarray, hint: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`project`, trying first for each row the face ``hint`` names (a bit mask of vertices): where
        the projection onto that face's affine hull has weights >= 0 and meets the optimality condition it
        is the projection; other rows are enumerated. Iterative solvers move points a little at a time, so
        their faces rarely change. Computed coordinate-major (rows along the last axis)."""
        q, lam = np.empty_like(p), np.zeros((len(p), self.k))
        order = np.argsort(hint, kind="stable")
        counts = np.bincount(hint, minlength=1 << self.k)
        starts = np.concatenate([[0], np.cumsum(counts)])
        rest = []
        VT = self.V.T  # (n, k)
        for key in np.flatnonzero(counts):
            rows = order[starts[key] : starts[key + 1]]
            plan = self.by_mask.get(int(key))
            if plan is None:
                rest.append(rows)
                continue
            S, M, c = plan
            pT = p[rows].T
            if M is None:
                sub = np.ones((1, len(rows)))
            else:
                x = M.T @ pT + c[:, None]
                sub = np.concatenate([1.0 - x.sum(axis=0, keepdims=True), x], axis=0)
            point = VT[:, S] @ sub  # (n, N)
            r = pT - point
            d = (self.V @ r).max(axis=0) - (r * point).sum(axis=0)
            ok = (sub.min(axis=0) >= 0) & (d <= FACE_TOL * (1.0 + (r * r).sum(axis=0)))
            good = rows[ok]
            q[good] = point[:, ok].T
            lam[np.ix_(good, S)] = sub[:, ok].T
            rest.append(rows[~ok])
        rest = np.concatenate(rest) if rest else np.zeros(0, dtype=np.intp)
        if rest.size:
            q[rest], lam[rest] = self.project(p[rest])
        return q, lam

    def _project(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        N = len(p)
        best = np.full(N, np.inf)
        lam = np.zeros((N, self.k))
        for S, M, c in self.plans:
            if M is None:
                point = np.broadcast_to(self.V[S[0]], p.shape)
                sub = np.ones((N, 1))
            else:
                x = p @ M + c
                sub = np.concatenate([1.0 - x.sum(axis=1, keepdims=True), x], axis=1)
                if (sub >= 0).all():
                    point = sub @ self.V[S]
                else:
                    sub = np.maximum(sub, 0.0)
                    sub /= sub.sum(axis=1, keepdims=True)
                    point = sub @ self.V[S]
            r = p - point
            d = (r @ self.V.T).max(axis=1) - (r * point).sum(axis=1)
            better = d < best
            if better.any():
                best = np.where(better, d, best)
                lam[better] = 0.0
                lam[np.ix_(np.flatnonzero(better), S)] = sub[better]
        return lam @ self.V, lam


def project_each(p: np.ndarray, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Projection of each row ``p[r]`` onto the hull of its own vertices ``V[r]`` (``N x k x n``).

    Everything is computed from the Gram matrix of the vertices and their products with ``p``, one
    contiguous array per entry, so each subset costs a few dozen operations on length-N vectors.
    """
    N, k, _ = V.shape
    K = np.ascontiguousarray(np.einsum("rid,rjd->ijr", V, V))  # K[i, j] = <v_i, v_j>, per row
    Vp = np.ascontiguousarray(np.einsum("rid,rd->ir", V, p))  # <v_i, p>
    best = np.full(N, np.inf)
    lam = np.zeros((k, N))
    with np.errstate(all="ignore"):
        for S in subsets(k):
            s0, rest = S[0], S[1:]
            if rest.size == 0:
                sub = [np.ones(N)]
            else:
                base = K[s0, s0]
                G = [[K[a, b] - K[a, s0] - K[s0, b] + base for b in rest] for a in rest]
                rhs = [Vp[a] - Vp[s0] - K[a, s0] + base for a in rest]
                x = _cramer(G, rhs)
                sub = [np.maximum(1.0 - sum(x), 0.0), *(np.maximum(xi, 0.0) for xi in x)]
                total = sum(sub)
                sub = [w / total for w in sub]
            # The optimality condition's violation max_j <p - x, v_j - x>, x = Σ sub_s v_s.
            Kx = [sum(w * K[s, j] for w, s in zip(sub, S, strict=True)) for j in range(k)]
            px = sum(w * Vp[s] for w, s in zip(sub, S, strict=True))
            xx = sum(w * Kx[s] for w, s in zip(sub, S, strict=True))
            d = np.max([Vp[j] - Kx[j] for j in range(k)], axis=0) - px + xx
            better = np.isfinite(d) & (d < best)
            if better.any():
                best = np.where(better, d, best)
                lam[:, better] = 0.0
                for w, s in zip(sub, S, strict=True):
                    lam[s, better] = w[better]
    weights = lam.T
    return np.einsum("rk,rkd->rd", weights, V), weights


def project_each_near(p: np.ndarray, V: np.ndarray, hint: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`project_each`, trying first for each row the face ``hint`` names (a bit mask of its vertices), as
    :meth:`FixedHull.project_near` does: the affine projection onto it, kept where it is the projection."""
    N, k, _ = V.shape
    q, lam = np.empty_like(p), np.zeros((N, k))
    rest = []
    for key in np.flatnonzero(np.bincount(hint, minlength=1 << k)):
        rows = np.flatnonzero(hint == key)
        S = np.flatnonzero((1 << np.arange(k)) & key)
        if not S.size:
            rest.append(rows)
            continue
        Vr, pr = V[rows], p[rows]
        v0 = Vr[:, S[0]]
        D = Vr[:, S[1:]] - v0[:, None]
        if len(S) > 1:
            G = np.einsum("rad,rbd->rab", D, D)
            with np.errstate(all="ignore"):
                x = _solve_small(G, np.einsum("rad,rd->ra", D, pr - v0))
            sub = np.concatenate([1.0 - x.sum(axis=1, keepdims=True), x], axis=1)
        else:
            sub = np.ones((len(rows), 1))
        point = np.einsum("rs,rsd->rd", sub, Vr[:, S])
        r = pr - point
        d = np.einsum("rkd,rd->rk", Vr, r).max(axis=1) - (r * point).sum(axis=1)
        with np.errstate(invalid="ignore"):
            ok = (sub.min(axis=1) >= 0) & (d <= FACE_TOL * (1.0 + (r * r).sum(axis=1)))
        good = rows[ok]
        q[good] = point[ok]
        lam[np.ix_(good, S)] = sub[ok]
        rest.append(rows[~ok])
    rest = np.concatenate(rest) if rest else np.zeros(0, dtype=np.intp)
    if rest.size:
        q[rest], lam[rest] = project_each(p[rest], V[rest])
    return q, lam


def _cramer(G: list[list[np.ndarray]], b: list[np.ndarray]) -> list[np.ndarray]:
    """Solve symmetric systems given entry by entry (each entry a vector over rows); singular rows give nan."""
    m = len(b)
    if m == 1:
        return [b[0] / np.where(G[0][0] > 0, G[0][0], np.nan)]
    if m == 2:
        a, c, d = G[0][0], G[0][1], G[1][1]
        det = a * d - c * c
        det = np.where(det > 0, det, np.nan)
        return [(d * b[0] - c * b[1]) / det, (a * b[1] - c * b[0]) / det]
    if m == 3:
        a, b_, c, e, f, i = G[0][0], G[0][1], G[0][2], G[1][1], G[1][2], G[2][2]
        c00, c01, c02 = e * i - f * f, c * f - b_ * i, b_ * f - c * e
        c11, c12, c22 = a * i - c * c, b_ * c - a * f, a * e - b_ * b_
        det = a * c00 + b_ * c01 + c * c02
        det = np.where(det > 0, det, np.nan)
        x, y, z = b
        return [
            (c00 * x + c01 * y + c02 * z) / det,
            (c01 * x + c11 * y + c12 * z) / det,
            (c02 * x + c12 * y + c22 * z) / det,
        ]
    Gm = np.moveaxis(np.array(G), -1, 0)
    out = _solve_small(Gm, np.stack(b, axis=1))
    return list(out.T)


def _solve_small(G: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve many small symmetric systems ``G x = b`` (Cramer's rule up to 3 x 3); singular ones give nan.

    Nearly singular systems are solved all the same: a poor solution only yields a worse candidate
    point of the hull, which the selection rule then discards.
    """
    s = b.shape[1]
    if s == 1:
        return b / np.where(G[:, 0, :] > 0, G[:, 0, :], np.nan)
    if s == 2:
        a, c, d = G[:, 0, 0], G[:, 0, 1], G[:, 1, 1]
        det = a * d - c * c
        det = np.where(det > 0, det, np.nan)
        return np.stack([(d * b[:, 0] - c * b[:, 1]) / det, (a * b[:, 1] - c * b[:, 0]) / det], axis=1)
    if s == 3:
        a, b_, c = G[:, 0, 0], G[:, 0, 1], G[:, 0, 2]
        e, f, i = G[:, 1, 1], G[:, 1, 2], G[:, 2, 2]
        c00, c01, c02 = e * i - f * f, c * f - b_ * i, b_ * f - c * e
        c11, c12, c22 = a * i - c * c, b_ * c - a * f, a * e - b_ * b_
        det = a * c00 + b_ * c01 + c * c02
        det = np.where(det > 0, det, np.nan)
        x, y, z = b[:, 0], b[:, 1], b[:, 2]
        rows = [c00 * x + c01 * y + c02 * z, c01 * x + c11 * y + c12 * z, c02 * x + c12 * y + c22 * z]
        return np.stack(rows, axis=1) / det[:, None]
    out = np.full_like(b, np.nan)
    ok = np.linalg.matrix_rank(G) == s
    if ok.any():
        out[ok] = np.linalg.solve(G[ok], b[ok][..., None])[..., 0]
    return out
