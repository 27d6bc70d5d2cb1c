"""The arbitrage metric (paper appendix D), solved exactly and vectorised over many tuples.

For forecasts F, per-field weights w and the possible worlds Ω of a check, the guaranteed
profit of an arbitrageur trading against a log-scoring market maker is

    V = max_p min_{ω∈Ω} Σ_i w_i ([ω_i=T] log(p_i/F_i) + [ω_i=F] log((1-p_i)/(1-F_i))).

By minimax duality V = min over distributions λ on Ω of D(λ) = Σ_i w_i m_i KL(q_i ‖ F_i),
where m_i is the mass of worlds in which field i resolves and q_i the share of it where
field i is true. D is convex on a simplex of at most a handful of vertices, and its gradient
∂D/∂λ_ω is exactly the profit in world ω at prices p = q(λ). So every iterate gives both an
upper bound D(λ) and a lower bound min_ω profit_ω(q(λ)); their difference (the gap) certifies
the result. We minimise D with a damped Newton method on the face of the simplex that holds
the optimum (an active-set method: worlds leave the face when the step reaches the
boundary, and come back when their profit undercuts the average), all tuples at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .faces import FacePlan, solve_spd
from .partition import partition_arbitrage
from .world_plans import plan_for

DEFAULT_EPSILON = 1e-3
MIN_PROBABILITY = 1e-12
_TOL = 1e-13
_MAX_ITER = 100
_BIG = 1e30
_TINY = 1e-300
_BLOCK = 16_384  # tuples solved together (see arbitrage)


@dataclass(frozen=True)
class ArbitrageResult:
    """Per-tuple results; arrays have one row per tuple."""

    violation: np.ndarray  # V, the guaranteed profit (>= 0)
    prices: np.ndarray  # the arbitrageur's prices p, shape (N, n_fields)
    gap: np.ndarray  # upper bound minus V: how far V could be from the true optimum
    weights: np.ndarray  # per-field weights used, shape (N, n_fields)
    epsilon: float  # forecasts of exactly 0 or 1 were moved to epsilon / 1 - epsilon
    iterations: int

    @property
    def scaled(self) -> np.ndarray:
        """The paper's ``default_scaled``: V divided by the number of fields (not of a categorical field's columns)."""
        return self.violation / self.weights.shape[1]


def clip_forecasts(probs: np.ndarray, epsilon: float = DEFAULT_EPSILON) -> np.ndarray:
    """Move forecasts of exactly 0 or 1 to epsilon or 1 - epsilon; others are used as given.

    Values within 1e-12 of 0 or 1 (twelve orders of magnitude beyond anything a forecaster
    states) count as 1e-12 or 1 - 1e-12: in that range every result is certified exact.
    """
    probs = np.asarray(probs, dtype=float)
    if not MIN_PROBABILITY <= epsilon < 0.5:
        raise ValueError(f"epsilon must lie in [{MIN_PROBABILITY}, 0.5), got {epsilon}")
    out = np.where(probs <= 0.0, epsilon, np.where(probs >= 1.0, 1.0 - epsilon, probs))
    return np.clip(out, MIN_PROBABILITY, 1.0 - MIN_PROBABILITY)


def arbitrage(
    probs: np.ndarray,
    worlds: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    epsilon: float = DEFAULT_EPSILON,
    tol: float = _TOL,
    max_iter: int = _MAX_ITER,
    faces: bool = True,
) -> ArbitrageResult:
    """Exact arbitrage for ``probs`` of shape ``(N, n)`` against ``worlds`` of shape ``(k, n)``.

    ``worlds`` encodes each field's resolution as 1 (true), 0 (false) or -1 (does not
    resolve). ``weights`` (shape ``(n,)`` or ``(N, n)``, all positive) make field i's market
    pay ``w_i`` times the log score, as the ArbitrageForecaster needs. ``faces=False`` skips the
    face-by-face fast path (:mod:`.faces`) and runs the active-set solver on every tuple.
    """
    probs = np.asarray(probs, dtype=float)
    if probs.ndim != 2 or probs.shape[1] != worlds.shape[1]:
        raise ValueError(f"probs must have shape (N, {worlds.shape[1]}), got {probs.shape}")
    if not np.all(np.isfinite(probs)) or np.any((probs < 0) | (probs > 1)):
        raise ValueError("forecasts must be finite and in [0, 1]")
    w = np.broadcast_to(np.ones(worlds.shape[1]) if weights is None else np.asarray(weights, float), probs.shape)
    if not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError("weights must be finite and positive")
    F = clip_forecasts(probs, epsilon)
    problem = _Problem.of(worlds)
    w = np.ascontiguousarray(w, dtype=float)
    if problem.partition is not None:  # one-hot worlds (PARTITION): a scalar root, see .partition
        return _partition(problem.partition, F, w, epsilon)
    # In blocks: numpy's temporaries then stay in cache and are reused instead of being mapped
    # afresh for every operation, which halves the time of 100,000 tuples.
    parts = [
        _solve(problem, F[s : s + _BLOCK], w[s : s + _BLOCK], tol, max_iter, faces)
        for s in range(0, max(len(F), 1), _BLOCK)
    ]
    if len(parts) == 1:
        violation, prices, gap, iterations = parts[0]
    else:
        violation, prices, gap = (np.concatenate([part[i] for part in parts]) for i in range(3))
        iterations = max(part[3] for part in parts)
    return ArbitrageResult(violation, prices, gap, np.array(w), epsilon, iterations)


def _partition(order: np.ndarray, F: np.ndarray, w: np.ndarray, epsilon: float) -> ArbitrageResult:
    """The closed form on one-hot worlds; ``order`` lists each world's true field."""
    unit = bool(np.all(w == 1.0))
    parts = [
        partition_arbitrage(F[s : s + _BLOCK, order], None if unit else w[s : s + _BLOCK, order])
        for s in range(0, max(len(F), 1), _BLOCK)
    ]
    violation, lam, gap = (np.concatenate([part[i] for part in parts]) for i in range(3))
    prices = np.empty_like(F)
    prices[:, order] = lam
    return ArbitrageResult(violation, prices, gap, np.array(w), epsilon, max(part[3] for part in parts))


def _solve(problem: _Problem, F: np.ndarray, w: np.ndarray, tol: float, max_iter: int, faces: bool):
    """Violation, prices, gap and active-set iterations for one block of clipped forecasts."""
    # Face by face first (closed forms and a few Newton steps); the active-set solver takes the rest.
    N, n = F.shape
    if faces:
        lam, done, (prices, profits, upper) = problem.faces.solve(F, problem.logs(F), w, tol)
    else:
        lam, done = np.zeros((N, problem.k)), np.zeros(N, dtype=bool)
        prices, profits, upper = np.empty((N, n)), np.empty((N, problem.k)), np.empty(N)
    iterations = 0
    if not done.all():
        rest = np.flatnonzero(~done)
        lam[rest], iterations = problem.solve(F[rest], w[rest], tol, max_iter)
        prices[rest], profits[rest], upper[rest] = problem.bounds(lam[rest], F[rest], w[rest])
    lower = profits.min(axis=1)
    # Any prices give a valid guarantee; when q(λ) guarantees less than nothing, not trading does.
    no_trade = lower <= 0
    violation = np.where(no_trade, 0.0, lower)
    prices = np.where(no_trade[:, None], F, prices)
    gap = np.maximum(upper - violation, 0.0)
    return violation, prices, gap, iterations


class _Problem:
    """Everything about a world matrix that does not depend on the forecasts."""

    def __init__(self, worlds: np.ndarray) -> None:
        self.worlds = worlds
        self.k, self.n = worlds.shape
        self.AT = (worlds == 1).astype(float)
        self.AF = (worlds == 0).astype(float)
        self.AR = self.AT + self.AF
        self.unconditional = bool((worlds >= 0).all())
        # One-hot worlds, one per field (PARTITION): each world's true field, in world order.
        one_hot = self.k == self.n >= 2 and (self.AT.sum(axis=1) == 1).all() and (self.AT.sum(axis=0) == 1).all()
        self.partition = np.argmax(self.AT, axis=1) if one_hot and (self.AF + self.AT == 1).all() else None
        # removable[mask, j]: world j may leave the face `mask` without making the dual's
        # gradient infinite at the boundary (every value it gives a field is still given
        # by a world on the face). Other worlds are kept strictly inside by damping.
        admissible = np.array([self._admissible(mask) for mask in range(1 << self.k)])
        self.removable = np.zeros((1 << self.k, self.k), dtype=bool)
        for mask in range(1 << self.k):
            for j in range(self.k):
                if mask >> j & 1:
                    self.removable[mask, j] = admissible[mask & ~(1 << j)]
        self.bits = 1 << np.arange(self.k)
        # The Hessian is Σ_i (w_i/t_i) AT_i AT_iᵀ + (w_i/f_i) AF_i AF_iᵀ - (w_i/m_i) AR_i AR_iᵀ:
        # one matmul of per-field coefficients with these constant outer products.
        outer = lambda A: np.einsum("ai,bi->iab", A, A).reshape(self.n, -1)  # noqa: E731
        self.outer = np.concatenate([outer(self.AT), outer(self.AF), -outer(self.AR)])
        self.others = np.array([[j for j in range(self.k) if j != r] for r in range(self.k)], dtype=np.intp)
        self.Z = np.zeros((self.k, self.k, self.k - 1))
        for r in range(self.k):
            for c, j in enumerate(self.others[r]):
                self.Z[r, j, c], self.Z[r, r, c] = 1.0, -1.0
        outer3 = self.outer.reshape(-1, self.k, self.k)
        self.reduced_outer = [
            np.einsum("cab,ai,bj->cij", outer3, self.Z[r], self.Z[r]).reshape(len(outer3), -1) for r in range(self.k)
        ]

    @cached_property
    def faces(self) -> FacePlan:
        return FacePlan(self)

    @classmethod
    def of(cls, worlds: np.ndarray) -> _Problem:
        return plan_for(cls, worlds)

    def _admissible(self, mask: int) -> bool:
        face = [j for j in range(self.k) if mask >> j & 1]
        if not face:
            return False
        for j in range(self.k):
            if j in face:
                continue
            for i in range(self.n):
                v = self.worlds[j, i]
                if v >= 0 and not any(self.worlds[f, i] == v for f in face):
                    return False
        return True

    # ------------------------------------------------------------------ evaluation
    # Forecasts enter only through L = (log F, log(1-F)). Shares q = t/m and 1-q = f/m are
    # computed separately from the dual masses, never as 1 - q, so that forecasts within
    # 1e-300 of 0 or 1 keep full precision.
    @staticmethod
    def logs(F: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.log(F), np.log1p(-F)

    def _masses(self, lam: np.ndarray):
        t = lam @ self.AT
        f = lam @ self.AF
        return t, f, t + f

    def _profits(self, t, f, m, L, w) -> np.ndarray:
        """Profit in each world at prices q = t/m: shape (N, k)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.unconditional:  # every field resolves in every world: m_i = Σλ for all i, never 0
                logm = np.log(m[:, :1])
                lt = np.maximum(np.log(t) - logm - L[0], -_BIG)
                lf = np.maximum(np.log(f) - logm - L[1], -_BIG)
            else:
                logm = np.log(m)
                lt = np.where(m > 0, np.maximum(np.log(t) - logm - L[0], -_BIG), 0.0)
                lf = np.where(m > 0, np.maximum(np.log(f) - logm - L[1], -_BIG), 0.0)
        return (w * lt) @ self.AT.T + (w * lf) @ self.AF.T

    def _dual(self, lam: np.ndarray, L, w: np.ndarray) -> np.ndarray:
        t, f, m = self._masses(lam)
        val = _xlogx(t) + _xlogx(f) - _xlogx(m) - t * L[0] - f * L[1]
        return (w * val).sum(axis=1)

    def bounds(self, lam: np.ndarray, F: np.ndarray, w: np.ndarray):
        """Prices q(λ), profits at those prices (lower bound: their min) and D(λ) (upper bound)."""
        L = self.logs(F)
        t, f, m = self._masses(lam)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(m > 0, t / m, F)
        return q, self._profits(t, f, m, L, w), self._dual(lam, L, w)

    # ---------------------------------------------------------------------- solver
    def _state(self, lam: np.ndarray, L, w: np.ndarray):
        """Masses, profits g (the dual's gradient) and D = λ·g (D is 1-homogeneous)."""
        t, f, m = self._masses(lam)
        g = self._profits(t, f, m, L, w)
        return t, f, m, g, np.einsum("ij,ij->i", lam, g)

    def solve(self, F: np.ndarray, w: np.ndarray, tol: float, max_iter: int) -> tuple[np.ndarray, int]:
        N, k = F.shape[0], self.k
        # Start from λ_ω ∝ sqrt(likelihood of ω under F): the exact optimum for NEGATION and
        # PARAPHRASE, and close to it elsewhere, which saves most Newton iterations.
        L = self.logs(F)
        loglik = 0.5 * (L[0] @ self.AT.T + L[1] @ self.AF.T)
        result = np.exp(loglik - loglik.max(axis=1, keepdims=True))
        result = np.maximum(result / result.sum(axis=1, keepdims=True), 1e-300)
        result /= result.sum(axis=1, keepdims=True)
        idx = np.arange(N)
        lam, active = result.copy(), np.ones((N, k), dtype=bool)
        t, f, m, g, D = self._state(lam, L, w)
        iterations = 0
        for iterations in range(1, max_iter + 1):  # noqa: B007
            # D = λ·g sums terms much larger than D itself; tolerances follow their size.
            slack = tol * (1.0 + np.einsum("ij,ij->i", lam, np.abs(np.maximum(g, -_BIG))))
            done = D - g.min(axis=1) <= slack
            if done.any():
                result[idx[done]] = lam[done]
                keep = ~done
                idx, lam, active, w = idx[keep], lam[keep], active[keep], w[keep]
                L = (L[0][keep], L[1][keep])
                t, f, m, g, D, slack = t[keep], f[keep], m[keep], g[keep], D[keep], slack[keep]
                if idx.size == 0:
                    break
            # Newton on the current face; once the face is solved, a world off it whose profit
            # undercuts the average rejoins through a step toward it (a guaranteed descent).
            face_done = D - np.where(active, g, np.inf).min(axis=1) <= slack
            entering = np.where(active, np.inf, g).argmin(axis=1)
            rows = np.arange(len(idx))
            enter = face_done & (g[rows, entering] < D - slack)
            direction = self._newton_direction(lam, t, f, m, g, active, w)
            # A world that must stay on the face (leaving would make the gradient infinite) but
            # that Newton pushes below zero moves to λ²/(λ - d) instead: positive, and exact
            # where D behaves like -log λ plus a linear term; the others are re-solved given it.
            stay = active & (lam + direction <= 0) & ~self.removable[active @ self.bits]
            if stay.any():
                rows = np.flatnonzero(stay.any(axis=1))
                s_lam, s_d = lam[rows], direction[rows]
                with np.errstate(divide="ignore", invalid="ignore"):
                    target = np.maximum(s_lam * (s_lam / (s_lam - s_d)), _TINY)
                fixed = np.where(stay[rows], target - s_lam, np.nan)
                direction[rows] = self._newton_direction(
                    s_lam, t[rows], f[rows], m[rows], g[rows], active[rows], w[rows], fixed
                )
            if enter.any():
                direction[enter] = -lam[enter]
                direction[enter, entering[enter]] += 1.0
                active[enter, entering[enter]] = True
            lam, active, (t, f, m, g, D) = self._step(lam, active, direction, g, D, L, w)
        else:
            result[idx] = lam
        return result, iterations

    def _newton_direction(self, lam, t, f, m, g, active, w, fixed=None) -> np.ndarray:
        """Newton step on the active face (Σ d = 0, d = 0 off the face).

        The simplex constraint is eliminated by pivoting on the active world r with the most
        weight: d = Z_r u, where column j of Z_r moves weight from r to world j. Since the
        Hessian is a fixed combination of outer products, so is Z_rᵀ H Z_r: one matmul.
        """
        N, k = g.shape
        with np.errstate(divide="ignore"):
            inv = [np.where(x > 0, w / np.maximum(x, _TINY), 0.0) for x in (t, f, m)]
            coef = np.concatenate(inv, axis=1)
        pivot = np.where(active, lam, -np.inf).argmax(axis=1)
        d = np.empty((N, k))
        diag = np.arange(k - 1)
        for r in range(k):
            sel = np.flatnonzero(pivot == r)
            if sel.size == 0:
                continue
            Z = self.Z[r]
            H = (coef[sel] @ self.reduced_outer[r]).reshape(sel.size, k - 1, k - 1)
            act = active[sel][:, self.others[r]]
            H = np.where(act[:, :, None] & act[:, None, :], H, 0.0)
            H[:, diag, diag] = np.where(act, H[:, diag, diag] * (1.0 + 1e-13) + 1e-300, 1.0)
            rhs = np.where(act, -(g[sel] @ Z), 0.0)
            if fixed is not None:
                # u_c = δ for fixed worlds: move their columns to the right-hand side.
                delta = fixed[sel][:, self.others[r]]
                pinned = ~np.isnan(delta)
                delta = np.where(pinned, delta, 0.0)
                rhs = np.where(pinned, delta, rhs - np.einsum("nij,nj->ni", H, delta))
                keep = ~pinned
                H = np.where(keep[:, :, None] & keep[:, None, :], H, 0.0)
                H[:, diag, diag] = np.where(keep, H[:, diag, diag], 1.0)
            with np.errstate(over="ignore", invalid="ignore"):
                u = solve_spd(H, rhs)
            d[sel] = np.where(np.isfinite(u).all(axis=1, keepdims=True), u, 0.0) @ Z.T
        return d

    def _step(self, lam, active, d, g, D, L, w):
        """Armijo line search along d, never past the face's boundary.

        A step that reaches the boundary at a world that may leave drops it from the face;
        other worlds are kept strictly inside (fraction to the boundary 0.99).
        """
        N = len(lam)
        rows = np.arange(N)
        codes = active @ self.bits
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            ratio = np.where((d < 0) & active, -lam / d, np.inf)
        blocking = ratio.argmin(axis=1)
        alpha_max = ratio[rows, blocking]
        can_leave = self.removable[codes, blocking] & (alpha_max < 1.0)
        alpha = np.where(alpha_max >= 1.0, 1.0, np.where(can_leave, alpha_max, 0.99 * alpha_max))
        slope = np.einsum("ij,ij->i", g, d)
        gap = D - g.min(axis=1)
        noise = 1e-14 * (1.0 + np.einsum("ij,ij->i", lam, np.abs(g)))
        # Removing a world whose weight is only rounding residue changes nothing: always allowed.
        residue = can_leave & (alpha_max < 1e-12)
        new_lam, new_active = lam.copy(), active.copy()
        state = [np.empty_like(a) for a in (lam @ self.AT, lam @ self.AF, lam @ self.AF, g, D)]
        pending = np.arange(N)
        first = True
        for _ in range(40):
            trial = np.maximum(lam[pending] + alpha[pending, None] * d[pending], 0.0)
            leave = can_leave[pending] if first else np.zeros(len(pending), dtype=bool)
            trial[leave, blocking[pending][leave]] = 0.0
            trial /= trial.sum(axis=1, keepdims=True)
            st = self._state(trial, (L[0][pending], L[1][pending]), w[pending])
            ok = st[4] <= D[pending] + 1e-4 * alpha[pending] * slope[pending] + noise[pending]
            if first:
                # Near the optimum D's decrease drowns in rounding; a full step that halves the
                # gap (the certificate) is progress all the same.
                ok |= (st[4] - st[3].min(axis=1) < 0.5 * gap[pending]) | residue[pending]
            rows = pending[ok]
            new_lam[rows] = trial[ok]
            gone = rows[leave[ok]]
            new_active[gone, blocking[gone]] = False
            for dst, src in zip(state, st, strict=True):
                dst[rows] = src[ok]
            pending = pending[~ok]
            if pending.size == 0:
                break
            alpha[pending] *= 0.5
            first = False
        else:  # no acceptable step: keep the current point for these tuples
            t, f, m, g0, D0 = self._state(lam[pending], (L[0][pending], L[1][pending]), w[pending])
            for dst, src in zip(state, (t, f, m, g0, D0), strict=True):
                dst[pending] = src
        return new_lam, new_active, tuple(state)


def _xlogx(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x > 0, x * np.log(x), 0.0)
