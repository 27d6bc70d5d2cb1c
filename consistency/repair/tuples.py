"""Per-tuple repair: move each tuple's forecasts to a coherent point that scores better in every world.

Brier geometry. With every field binary the coherent forecasts are the convex hull of the check's
worlds, and the repair ``q`` is the Euclidean projection of the forecasts ``p`` onto it: for every
world ω, ``<p - q, ω - q> <= 0``, so ``Brier(p, ω) - Brier(q, ω) >= ||p - q||²`` (Pythagoras).

A conditional field (``Q given P``) does not resolve in some worlds and its coherent values are a
ratio, so the coherent set is not convex. For forecasts ``q`` let ``ω̃(q)`` be world ω with every
unresolved coordinate replaced by ``q``'s own value, and ``H(q)`` the hull of the ``ω̃(q)``. ``q`` is
coherent (``q_i = λ(i true) / λ(i resolves)`` for a distribution λ on the worlds) exactly when
``q ∈ H(q)``. The repair is a fixed point ``q = Π_{H(q)}(p)``; Pythagoras in ``H(q)`` (where ``ω̃ - q``
is 0 on the unresolved coordinates, which also score nothing) gives in every world ω

    Brier(p, ω) - Brier(q, ω) >= Σ_{i resolves in ω} (p_i - q_i)²,

so the loss never rises and falls by at least the squared distance moved on the fields that resolve.
``H(q)`` depends only on ``q``'s conditional coordinates (one or two), so the fixed point is solved per
tuple in that dimension. One: a bracketed secant (the root always exists: ``f(0) >= 0`` and
``f(1) <= 1``). Two: Newton's method with the exact Jacobian of the projection's face (each new point
projected on the previous point's face, faces enumerated only where that one no longer holds), kept in
the unit box; the few tuples whose fixed point sits on a kink, where the face changes and Newton
stalls, fall to a nested bracketed solve, vectorised over them. When a condition has probability 0
(``P(Q) = 1`` for ``P given not Q``, say) the conditional field is free and several fixed points exist,
all with the guarantee; a coherent tuple is returned as it is.

Log geometry: the repair is the arbitrage prices of :func:`consistency.metrics.arbitrage` (the
log-score market's max-min prices); the log loss improves in every world by at least the arbitrage
profit V, which is what ``moved`` reports.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np

from ..checks.check import NONE, TRUE, Check
from ..metrics.arbitrage import arbitrage, clip_forecasts
from .polytope import FixedHull, cramer, project_each

log = logging.getLogger(__name__)

Score = Literal["brier", "log"]
SCORES = ("brier", "log")
FIXED_POINT_TOL = 1e-13
_NEWTON_ITER = 40
_STALLS = 6  # plain steps (Newton and half its step failed) before a row goes to the bracketed solver
_FACE_TOL = 1e-14  # weights and optimality slack accepted as a valid face (rounding)
_BLOCK = 131_072  # conditional checks: iterations on the few slow tuples cost per call, not per tuple


@dataclass(frozen=True)
class TupleRepair:
    """Per-tuple results, one row per tuple.

    ``moved``: Brier, the sum of squared changes; log, the arbitrage profit V. ``guaranteed``: the
    smallest loss improvement over the check's worlds (on the fields resolving in each), >= 0 for a
    per-tuple repair. ``iterations``: fixed-point iterations (0 when no field is conditional).
    """

    repaired: np.ndarray
    moved: np.ndarray
    guaranteed: np.ndarray
    iterations: int


def check_probs(check: Check, probs: np.ndarray) -> np.ndarray:
    probs = np.asarray(probs, dtype=float)
    if probs.ndim != 2 or probs.shape[1] != check.n_fields:
        raise ValueError(f"{check.name}: forecasts must have shape (N, {check.n_fields}), got {probs.shape}")
    if not np.all(np.isfinite(probs)) or np.any((probs < 0) | (probs > 1)):
        raise ValueError(f"{check.name}: forecasts must be finite and in [0, 1]")
    return probs


def check_score(score: str) -> None:
    if score not in SCORES:
        raise ValueError(f"score must be one of {', '.join(SCORES)}, got {score!r}")


def repair_tuples(check: Check, probs: np.ndarray, score: Score = "brier") -> TupleRepair:
    """Repair each row of ``probs`` (shape ``(N, n_fields)``) on its own; no model calls."""
    check_score(score)
    probs = check_probs(check, probs)
    if score == "log":
        result = arbitrage(probs, check.worlds)
        repaired = result.prices
        moved = result.violation
        iterations = result.iterations
    else:
        repaired, iterations = brier_projection(check.worlds, probs)
        moved = ((probs - repaired) ** 2).sum(axis=1)
    return TupleRepair(repaired, moved, guaranteed_improvement(check, probs, repaired, score), iterations)


def guaranteed_improvement(check: Check, probs: np.ndarray, repaired: np.ndarray, score: Score) -> np.ndarray:
    """Per tuple, the smallest loss improvement from ``probs`` to ``repaired`` over the check's worlds.

    Only the fields that resolve in a world count there. Log losses use forecasts clipped as
    :func:`consistency.metrics.clip_forecasts` does (both arrays).
    """
    check_score(score)
    return world_improvements(check.worlds, check_probs(check, probs), check_probs(check, repaired), score).min(axis=1)


def world_improvements(worlds: np.ndarray, probs: np.ndarray, repaired: np.ndarray, score: Score) -> np.ndarray:
    """Loss improvement in every world: shape ``(N, k)``."""
    AT = (worlds == TRUE).astype(float)
    AR = (worlds != NONE).astype(float)
    if score == "brier":
        # (p - ω)² - (q - ω)² = p² - q² - 2 (p - q) ω on resolving fields.
        return (probs**2 - repaired**2) @ AR.T - 2.0 * (probs - repaired) @ AT.T
    AF = AR - AT
    p, q = clip_forecasts(probs), clip_forecasts(repaired)
    return (np.log(q) - np.log(p)) @ AT.T + (np.log1p(-q) - np.log1p(-p)) @ AF.T


def brier_projection(worlds: np.ndarray, probs: np.ndarray) -> tuple[np.ndarray, int]:
    """The Brier repair of every row: the projection, or the fixed point with conditional fields."""
    plan = ConditionalPlan.of(worlds)
    if plan.cols.size == 0:
        return np.clip(FixedHull.of(worlds.astype(float)).project(probs)[0], 0.0, 1.0), 0
    out = np.empty_like(probs)
    iterations = 0
    for s in range(0, len(probs), _BLOCK):
        out[s : s + _BLOCK], it = plan.fixed_point(probs[s : s + _BLOCK])
        iterations = max(iterations, it)
    return np.clip(out, 0.0, 1.0), iterations  # convex combinations of 0/1 vertices, up to rounding


class ConditionalPlan:
    """The worlds as a function of the conditional coordinates: ``ω̃(c)``."""

    def __init__(self, worlds: np.ndarray) -> None:
        self.worlds = worlds
        self.base = np.where(worlds == NONE, 0.0, worlds).astype(float)
        self.cols = np.flatnonzero((worlds == NONE).any(axis=0))
        self.unresolved = worlds[:, self.cols] == NONE  # (k, d)
        k = len(worlds)
        self._others = np.array([[a for a in range(k) if a != s] for s in range(k)], dtype=np.intp).reshape(k, k - 1)

    @staticmethod
    @lru_cache(maxsize=64)
    def _cached(key: bytes, shape: tuple[int, int]) -> ConditionalPlan:
        return ConditionalPlan(np.frombuffer(key, dtype=np.int8).reshape(shape))

    @classmethod
    def of(cls, worlds: np.ndarray) -> ConditionalPlan:
        w = np.ascontiguousarray(worlds, dtype=np.int8)
        return cls._cached(w.tobytes(), w.shape)

    def vertices(self, c: np.ndarray) -> np.ndarray:
        V = np.broadcast_to(self.base, (len(c), *self.base.shape)).copy()
        for jj, j in enumerate(self.cols):
            rows = self.unresolved[:, jj]
            V[:, rows, j] = c[:, jj : jj + 1]
        return V

    def image(self, p: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``q = Π_{H(c)}(p)`` and the residual ``q_J - c``."""
        q, h = self._evaluate(p, c)[:2]
        return q, h

    def _evaluate(self, p: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The image, its residual, the projection's weights on the vertices and the vertices ``ω̃(c)``."""
        V = self.vertices(c)
        q, lam = project_each(p, V)
        return q, q[:, self.cols] - c, lam, V

    def jacobian(self, p: np.ndarray, q: np.ndarray, lam: np.ndarray, V: np.ndarray) -> np.ndarray:
        """The residual's Jacobian ``∂(q_J - c)/∂c`` (``N x d x d``) at the projection ``q`` with weights ``lam``.

        The projection's face (the vertices with positive weight) is held fixed; see :meth:`on_face`.
        """
        return self.on_face(p, V, lam > 0)[2]

    def on_face(
        self, p: np.ndarray, V: np.ndarray, active: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Projection of ``p`` onto the affine hull of each row's ``active`` vertices, with the residual's Jacobian.

        Returns ``(q, weights, jacobian, valid)``; ``valid``: the weights are >= 0 and ``q`` meets the
        optimality condition over all the vertices, so ``q`` is the projection onto the whole hull.
        On the face A, ``q = Σ λ_s v_s`` and ``<p - q, v_a> = ν`` for a in A. Differentiating in ``c_j``,
        which moves coordinate ``J_j`` of the vertices leaving it unresolved (``∂v_s = U_sj e_{J_j}``):
        ``Σ_s K_as ∂λ_s + ∂ν = r_{J_j} U_aj - μ_j v_a[J_j]`` with ``Σ ∂λ_s = 0``, ``r = p - q``,
        ``μ_j = Σ_s λ_s U_sj``; then ``∂q = Σ_s ∂λ_s v_s + μ_j e_{J_j}``. Affinely dependent faces give nan.
        """
        N, k, _ = V.shape
        d, m, J = self.cols.size, k - 1, self.cols
        U = self.unresolved.T.astype(float)  # (d, k)
        # Coordinates x_a on D_a = v_a - v_0 (v_0: the face's first vertex; the others padded with
        # identity rows where inactive): G x = <D, p - v_0>, and the derivatives with the same G. Arrays
        # are laid out vertex, coordinate, row, so every entry is one contiguous length-N vector.
        Vt = np.ascontiguousarray(V.transpose(1, 2, 0))
        first = active.argmax(axis=1)
        others = self._others[first].T  # (m, N)
        on = np.take_along_axis(active.T, others, axis=0)
        v0 = _pick(Vt, first)
        D = [_pick(Vt, o) - v0 for o in others]  # D_a, each (n, N)
        pv = p.T - v0
        G = [[np.where(on[a] & on[b], _dot(D[a], D[b]), float(a == b)) for b in range(m)] for a in range(m)]
        x = cramer(G, [on[a] * _dot(D[a], pv) for a in range(m)])
        q = v0 + sum(xa * Da for xa, Da in zip(x, D, strict=True))
        r = p.T - q
        lam = np.zeros((k, N))
        np.put_along_axis(lam, others, np.array(x), axis=0)
        np.put_along_axis(lam, first[None, :], 1.0 - sum(x)[None, :], axis=0)
        mu = [sum(U[j, t] * lam[t] for t in range(k) if U[j, t]) for j in range(d)]
        jac = np.empty((N, d, d))
        for j in range(d):
            dU = U[j][others] - U[j][first]  # (m, N)
            dx = cramer(G, [on[a] * (r[J[j]] * dU[a] - mu[j] * D[a][J[j]]) for a in range(m)])
            for i in range(d):
                jac[:, i, j] = sum(dxa * Da[J[i]] for dxa, Da in zip(dx, D, strict=True)) + (mu[j] - 1.0) * (i == j)
        with np.errstate(invalid="ignore"):
            optimality = np.max([_dot(Vt[t], r) for t in range(k)], axis=0) - _dot(r, q)
            valid = (lam >= -_FACE_TOL).all(axis=0) & (optimality <= _FACE_TOL)
        q, lam = q.T, lam.T
        return q, lam, jac, valid

    def fixed_point(self, p: np.ndarray, start: np.ndarray | None = None) -> tuple[np.ndarray, int]:
        """``q = Π_{H(q)}(p)`` for every row, and the iterations taken; ``start``: conditional values to start from.

        ``p`` may lie outside the unit box (a joint repair's local targets do).
        """
        # By default, start from the log repair's conditional values (the arbitrage prices, about a
        # microsecond a tuple): typically four times closer to the fixed point than the forecasts.
        if start is None:
            clipped = np.clip(p, 0.0, 1.0)
            start = arbitrage(clipped, self.worlds).prices[:, self.cols]
            # A coherent tuple is its own fixed point; when a condition has probability 0 (P(Q) = 1 for
            # P given not Q, say), other values of that conditional field are fixed points too, so a
            # coherent tuple with a 0 or 1 (the only way to get there) starts from its own values.
            edge = np.flatnonzero(((clipped == 0.0) | (clipped == 1.0)).any(axis=1))
            own = clipped[edge][:, self.cols]
            fixed = np.abs(self.image(p[edge], own)[1]).max(axis=1) <= FIXED_POINT_TOL
            start[edge[fixed]] = own[fixed]
        c = np.clip(start, 0.0, 1.0)
        if self.cols.size == 1:
            x, iterations = root_1d(lambda rows, x: self.image(p[rows], x[:, None])[1][:, 0], c[:, 0])
            c = x[:, None]
            q = self.image(p, c)[0]
        else:
            # Newton's rows come with their image (on a verified face, or by enumeration); the others
            # are projected again below.
            c, q, iterations, left = self._newton(p, c)
            redo = left
            if left.size:
                # A coherent tuple is its own fixed point, which Newton can miss when its projection sits
                # on a vertex (a singular Jacobian): try the forecasts' own conditional values.
                own = np.clip(p[left][:, self.cols], 0.0, 1.0)
                done = np.abs(self.image(p[left], own)[1]).max(axis=1) <= FIXED_POINT_TOL
                c[left[done]] = own[done]
                left = left[~done]
            if left.size and self.cols.size == 2:
                c[left], more = self._nested(p[left], c[left])
                iterations += more
            q[redo] = self.image(p[redo], c[redo])[0]
        h = q[:, self.cols] - c
        residual = np.abs(h).max(axis=1)
        if (residual > 1e-10).any():
            log.warning(
                "Brier repair: %d tuple(s) stopped up to %.1e from their fixed point",
                int((residual > 1e-10).sum()),
                float(residual.max()),
            )
        return q, iterations

    def _newton(self, p: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
        """Newton's method with the exact Jacobian of the projection's face, kept in the unit box.

        Each new point is first projected on the previous point's face (one small linear solve), and
        by enumeration only where that face is no longer the projection's. Rows where Newton fails to
        reduce the residual (a kink: the projection changes face at the fixed point) take a half or a
        plain step; after six plain steps they are returned as unconverged, for the bracketed solver.
        Returns the values, their images, the iterations and the unconverged rows.
        """
        c = c.copy()
        q, lam, jac, active = self._step(p, c, None)
        h = q[:, self.cols] - c
        stalls = np.zeros(len(c), dtype=np.intp)
        todo = np.flatnonzero(np.abs(h).max(axis=1) > FIXED_POINT_TOL)
        iterations = 0
        while todo.size and iterations < _NEWTON_ITER:
            iterations += 1
            pt, ct, ht, At = p[todo], c[todo], h[todo], active[todo]
            with np.errstate(all="ignore"):
                newton = ct - _solve_general(jac[todo], ht)
            bad = ~np.isfinite(newton).all(axis=1)
            newton[bad] = ct[bad] + ht[bad]  # the plain step f(c)
            newton = np.clip(newton, 0.0, 1.0)
            found = self._step(pt, newton, At)
            hn = found[0][:, self.cols] - newton
            worse = np.flatnonzero(np.abs(hn).max(axis=1) >= np.abs(ht).max(axis=1))
            # Where Newton does not reduce the residual: half the step, else the plain step f(c) (a stall).
            for trial in ("half", "plain"):
                if not worse.size:
                    break
                if trial == "half":
                    point = 0.5 * (ct[worse] + newton[worse])
                else:
                    point = np.clip(ct[worse] + ht[worse], 0.0, 1.0)
                got = self._step(pt[worse], point, At[worse])
                hg = got[0][:, self.cols] - point
                keep = (
                    np.abs(hg).max(axis=1) < np.abs(ht[worse]).max(axis=1)
                    if trial == "half"
                    else np.ones(len(worse), bool)
                )
                if trial == "plain":
                    stalls[todo[worse]] += 1
                rows = worse[keep]
                newton[rows], hn[rows] = point[keep], hg[keep]
                for new, value in zip(found, got, strict=True):
                    new[rows] = value[keep]
                worse = worse[~keep]
            c[todo], h[todo] = newton, hn
            q[todo], lam[todo], jac[todo], active[todo] = found
            todo = todo[(np.abs(hn).max(axis=1) > FIXED_POINT_TOL) & (stalls[todo] < _STALLS)]
        return c, q, iterations, np.flatnonzero(np.abs(h).max(axis=1) > FIXED_POINT_TOL)

    def _step(
        self, p: np.ndarray, c: np.ndarray, active: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(q, weights, jacobian, face)`` at ``c``: on the face ``active`` where it holds, else by enumeration."""
        V = self.vertices(c)
        if active is None:
            redo = np.arange(len(c))
            q, lam = np.empty_like(p), np.empty(V.shape[:2])
            jac, face = np.empty((len(c), self.cols.size, self.cols.size)), np.zeros(V.shape[:2], dtype=bool)
        else:
            q, lam, jac, valid = self.on_face(p, V, active)
            face = active.copy()
            redo = np.flatnonzero(~valid)
        if redo.size:
            q[redo], lam[redo] = project_each(p[redo], V[redo])
            face[redo] = lam[redo] > 0
            jac[redo] = self.on_face(p[redo], V[redo], face[redo])[2]
        return q, lam, jac, face

    def _nested(self, p: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, int]:
        """Two conditional coordinates, robustly: the second solved for each value of the first.

        For any first coordinate the second's residual is >= 0 at 0 and <= 0 at 1 (the image lies
        in the unit box), and so is the first's once the second is solved: both are bracketed roots.
        """
        c = c.copy()
        count = [0]

        def outer(rows: np.ndarray, x1: np.ndarray) -> np.ndarray:
            pr = p[rows]

            def inner(sub: np.ndarray, x2: np.ndarray) -> np.ndarray:
                return self.image(pr[sub], np.stack([x1[sub], x2], axis=1))[1][:, 1]

            x2, it = root_1d(inner, c[rows, 1])
            count[0] = max(count[0], it)
            c[rows, 0], c[rows, 1] = x1, x2
            return self.image(pr, c[rows])[1][:, 0]

        _, iterations = root_1d(outer, c[:, 0])
        return c, iterations * max(count[0], 1)


def root_1d(fun, x: np.ndarray, tol: float = FIXED_POINT_TOL, max_iter: int = 200) -> tuple[np.ndarray, int]:
    """Roots in [0, 1] of decreasing-through-zero residuals ``fun(rows, x)`` (>= 0 at 0, <= 0 at 1).

    Secant steps (the first is the plain fixed-point step ``x + h``), replaced by bisection of the
    bracket when they leave it or fail to halve the residual.
    """
    N = len(x)
    x = x.copy()
    h = fun(np.arange(N), x)
    lo, hi = np.zeros(N), np.ones(N)
    px, ph = np.full(N, np.nan), np.full(N, np.nan)
    todo = np.flatnonzero(np.abs(h) > tol)
    iterations = 0
    while todo.size and iterations < max_iter:
        iterations += 1
        xa, ha = x[todo], h[todo]
        lo[todo] = np.where(ha > 0, xa, lo[todo])
        hi[todo] = np.where(ha < 0, xa, hi[todo])
        la, ua, pxa, pha = lo[todo], hi[todo], px[todo], ph[todo]
        with np.errstate(all="ignore"):
            secant = xa - ha * (xa - pxa) / (ha - pha)
        cand = np.where(np.isnan(pha), xa + ha, secant)
        slow = np.abs(ha) > 0.5 * np.abs(pha)  # False on the first step (nan)
        bad = ~((cand >= la) & (cand <= ua)) | slow | (cand == xa)
        cand = np.where(bad, 0.5 * (la + ua), cand)
        hn = fun(todo, cand)
        px[todo], ph[todo] = xa, ha
        x[todo], h[todo] = cand, hn
        todo = todo[(np.abs(hn) > tol) & (ua - la > tol)]
    return x, iterations


def _pick(Vt: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``Vt[index[r], :, r]`` for every row r (``Vt``: vertex, coordinate, row); a few selections beat a gather."""
    out = Vt[0].copy()
    for t in range(1, len(Vt)):
        np.copyto(out, Vt[t], where=index == t)
    return out


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise dot products of coordinate-major arrays (coordinate, row), one contiguous vector at a time."""
    return sum(a[i] * b[i] for i in range(len(a)))


def _solve_general(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve many small systems ``A x = b`` (1 x 1 or 2 x 2 by Cramer's rule); singular ones give inf or nan."""
    if b.shape[1] == 1:
        return b / A[:, 0, :]
    if b.shape[1] == 2:
        a, c, e, d = A[:, 0, 0], A[:, 0, 1], A[:, 1, 0], A[:, 1, 1]
        det = a * d - c * e
        return np.stack([(d * b[:, 0] - c * b[:, 1]) / det, (a * b[:, 1] - e * b[:, 0]) / det], axis=1)
    out = np.full_like(b, np.nan)
    ok = np.linalg.matrix_rank(A) == b.shape[1]
    out[ok] = np.linalg.solve(A[ok], b[ok][..., None])[..., 0]
    return out
