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
``H(q)`` depends only on ``q``'s conditional coordinates (one or two). The fixed point is found face by
face (:mod:`.fixed_point`: Newton's method with the exact Jacobian on the projection's face, active-set
moves between faces); a row no face takes falls back to bracketed root finding (one coordinate) or
quasi-Newton with a nested bracketed solve (two). Where a condition has probability 0 its conditional
value is free over an interval of fixed points, and the one nearest the start is taken (the forecasts'
own value, or in a joint repair the previous one).

Log geometry: the repair is the arbitrage prices of :func:`consistency.metrics.arbitrage` (the
log-score market's max-min prices, the KL projection onto the coherent set); the log loss improves in
every world by at least the arbitrage profit V, which is what ``moved`` reports. The prices are returned
moved a few units in the last place toward 1/2 (:func:`toward_half`), so that they keep V as returned,
up to the log score's clipping at 1e-12 per field.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..checks.check import NONE, TRUE, Check
from ..metrics.arbitrage import arbitrage, clip_forecasts
from ..metrics.world_plans import plan_for
from .fixed_point import FacePlan
from .polytope import FixedHull, project_each

log = logging.getLogger(__name__)

Score = Literal["brier", "log"]
SCORES = ("brier", "log")
FIXED_POINT_TOL = 1e-13
PRICE_ULPS = 4  # units in the last place the log repair's prices move toward 1/2 (see toward_half)
_NEWTON_ITER = 40
_FD_STEP = 1e-7
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
        repaired = toward_half(result.prices)
        moved = result.violation
        iterations = result.iterations
    else:
        repaired, iterations = brier_projection(check.worlds, probs)
        moved = ((probs - repaired) ** 2).sum(axis=1)
    return TupleRepair(repaired, moved, guaranteed_improvement(check, probs, repaired, score), iterations)


def toward_half(prices: np.ndarray, ulps: int = PRICE_ULPS) -> np.ndarray:
    """Prices moved a few units in the last place toward 1/2, so that the guarantee holds as returned.

    An optimal price 1e-13 from 1 is held in float64 with a relative error of ~1e-3 in its distance to 1,
    and the log score of the world where that field is false (log(1 - q)) inherits it: rounded the wrong
    way, the returned prices guaranteed up to 2e-3 nats less than the arbitrage profit V (and a price
    rounded to exactly 1 would be scored as the clipped 1 - 1e-3). Moved toward 1/2 instead, each price
    lies between the exact one and 1/2, where every world's log gain is at least the exact prices' less
    ~1e-15 (the worlds on the other side lose a few units in the last place of log q). The solver's
    prices are within one or two units of the exact ones; the margin is twice that.
    """
    q = np.asarray(prices, dtype=float)
    move = ulps * np.spacing(q)
    return np.where(q > 0.5, q - move, np.where(q < 0.5, q + move, q))


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

    @classmethod
    def of(cls, worlds: np.ndarray) -> ConditionalPlan:
        return plan_for(cls, worlds)

    def vertices(self, c: np.ndarray) -> np.ndarray:
        V = np.broadcast_to(self.base, (len(c), *self.base.shape)).copy()
        for jj, j in enumerate(self.cols):
            rows = self.unresolved[:, jj]
            V[:, rows, j] = c[:, jj : jj + 1]
        return V

    def image(self, p: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``q = Π_{H(c)}(p)`` and the residual ``q_J - c``."""
        q = project_each(p, self.vertices(c))[0]
        return q, q[:, self.cols] - c

    def fixed_point(self, p: np.ndarray, start: np.ndarray | None = None) -> tuple[np.ndarray, int]:
        """``q = Π_{H(q)}(p)`` for every row, and the iterations taken.

        ``start``: the conditional values to start from (default: the forecasts' own); where several
        values are fixed points (a condition of probability 0), the one nearest ``start`` is returned.
        ``p`` may lie outside the unit box (a joint repair's local targets do). Solved face by face
        (:mod:`.fixed_point`); the rare rows no face takes go to :meth:`_robust`.
        """
        if start is None:
            start = np.clip(p[:, self.cols], 0.0, 1.0)
        q, _, done, iterations = FacePlan.of(self.worlds).solve(p, start)
        rest = np.flatnonzero(~done)
        if rest.size:
            q[rest], more = self._robust(p[rest])
            iterations += more
        return q, iterations

    def _robust(self, p: np.ndarray) -> tuple[np.ndarray, int]:
        """The fixed point by bracketed root finding (one value) or quasi-Newton with a nested bracketed
        fallback (two): slower than the face solver, for the rows it leaves."""
        # Start from the log repair's conditional values (the arbitrage prices): typically four times
        # closer to the fixed point than the forecasts.
        start = arbitrage(np.clip(p, 0.0, 1.0), self.worlds).prices[:, self.cols]
        c = np.clip(start, 0.0, 1.0)
        if self.cols.size == 1:
            x, iterations = root_1d(lambda rows, x: self.image(p[rows], x[:, None])[1][:, 0], c[:, 0])
            c = x[:, None]
        else:
            c, iterations, left = self._newton(p, c)
            if left.size and self.cols.size == 2:
                c[left], more = self._nested(p[left], c[left])
                iterations += more
        q, h = self.image(p, c)
        residual = np.abs(h).max(axis=1)
        if (residual > 1e-10).any():
            log.warning(
                "Brier repair: %d tuple(s) stopped up to %.1e from their fixed point",
                int((residual > 1e-10).sum()),
                float(residual.max()),
            )
        return q, iterations

    def _newton(self, p: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, int, np.ndarray]:
        """Quasi-Newton steps (a finite-difference Jacobian, then Broyden's updates; kept in the unit box).

        Returns the rows left unconverged: Newton stalls at kinks, where the projection changes face.
        """
        d = self.cols.size
        c = c.copy()
        h = self.image(p, c)[1]
        N = len(c)
        jac = np.zeros((N, d, d))
        fresh = np.ones(N, dtype=bool)  # rows whose Jacobian is measured anew (else: Broyden's update)
        todo = np.flatnonzero(np.abs(h).max(axis=1) > FIXED_POINT_TOL)
        iterations = 0
        while todo.size and iterations < _NEWTON_ITER:
            iterations += 1
            pt, ct, ht = p[todo], c[todo], h[todo]
            measure = np.flatnonzero(fresh[todo])
            if measure.size:
                pm, cm, hm = pt[measure], ct[measure], ht[measure]
                step = np.where(cm + _FD_STEP <= 1.0, _FD_STEP, -_FD_STEP)
                for a in range(d):
                    shifted = cm.copy()
                    shifted[:, a] += step[:, a]
                    jac[todo[measure], :, a] = (self.image(pm, shifted)[1] - hm) / step[:, a : a + 1]
            J = jac[todo]
            with np.errstate(all="ignore"):
                newton = ct - _solve_general(J, ht)
            bad = ~np.isfinite(newton).all(axis=1)
            newton[bad] = ct[bad] + ht[bad]  # the plain step f(c)
            newton = np.clip(newton, 0.0, 1.0)
            hn = self.image(pt, newton)[1]
            # Where Newton does not reduce the residual (a stale Jacobian, or a kink where the projection
            # changes face): half the step, else the plain step f(c); the Jacobian is then measured anew.
            worse = np.flatnonzero(np.abs(hn).max(axis=1) >= np.abs(ht).max(axis=1))
            fresh[todo] = False
            fresh[todo[worse]] = True
            if worse.size:
                half = 0.5 * (ct[worse] + newton[worse])
                hh = self.image(pt[worse], half)[1]
                ok = np.abs(hh).max(axis=1) < np.abs(ht[worse]).max(axis=1)
                newton[worse[ok]], hn[worse[ok]] = half[ok], hh[ok]
                worse = worse[~ok]
            if worse.size:
                newton[worse] = np.clip(ct[worse] + ht[worse], 0.0, 1.0)
                hn[worse] = self.image(pt[worse], newton[worse])[1]
            # Broyden's update of the Jacobian along the step taken.
            dc, dh = newton - ct, hn - ht
            norm = (dc**2).sum(axis=1)
            upd = norm > 0
            with np.errstate(all="ignore"):
                corr = (dh - np.einsum("rij,rj->ri", J, dc)) / np.where(upd, norm, 1.0)[:, None]
            jac[todo[upd]] = J[upd] + corr[upd][:, :, None] * dc[upd][:, None, :]
            c[todo], h[todo] = newton, hn
            todo = todo[np.abs(hn).max(axis=1) > FIXED_POINT_TOL]
        return c, iterations, np.flatnonzero(np.abs(h).max(axis=1) > FIXED_POINT_TOL)

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
