"""The arbitrage dual solved face by face: the fast path of :func:`.arbitrage.arbitrage`.

The optimal λ of the dual lies in the relative interior of one face of the simplex (a set S of
worlds), and only *admissible* faces qualify (leaving a world off must not make the gradient
infinite). Our checks have at most four worlds and at most five admissible faces, so instead of
an active-set search we solve the dual on each admissible face as if its optimum were interior:

- a face of two worlds in closed form: with ℓ_ω the weighted log-likelihood of world ω under the
  forecasts and W the weight of the fields that tell the two worlds apart,
  λ_ω ∝ exp(ℓ_ω / W) (appendix D's closed forms are this case);
- a face where the fields take one value each (a vertex of the polytope of coherent forecasts):
  λ is the forecasts' barycentric coordinates there, D = 0 (coherent forecasts);
- any other face by pure Newton steps in the face's plane (kept strictly inside), a fixed
  handful, all tuples at once.

Every candidate λ yields the certificate of the general solver: D(λ) bounds V from above and
the worst profit at prices q(λ), over all worlds, from below. A tuple whose bounds meet within the
tolerance is done; the next face is tried only on the tuples left, and the few that no face
certifies (a face's optimum not reached in the fixed steps) go to the active-set solver.
"""

from __future__ import annotations

import numpy as np

from .face_choice import AndOrChoice

_TINY = 1e-300
CERTIFY_TOL = 1e-11
_TAU_STEPS = 8
_TAU_REACH = 4.0  # logit units a Newton step on τ may move a price


class FacePlan:
    """The admissible faces of a world matrix and what each needs, built once per check."""

    def __init__(self, problem) -> None:  # problem: arbitrage._Problem (imported there, not here)
        self.problem = problem
        k = problem.k
        masks = [m for m in range(1, 1 << k) if problem._admissible(m)]
        self.faces = [Face(problem, [j for j in range(k) if m >> j & 1]) for m in masks]
        # Closed forms first, larger faces first (they hold more of the tuples), iterative ones last:
        # each later face only sees the tuples the earlier ones left.
        self.faces.sort(key=lambda f: (f.newton, f.iterative, -len(f.worlds)))
        # Where the optimal face follows from cheap tests (ANDOR), each tuple starts on its own face.
        choice = AndOrChoice.of(problem.worlds)
        by_worlds = {frozenset(f.worlds.tolist()): f for f in self.faces}
        self.choice = None if choice is None else (choice, [by_worlds[s] for s in choice.faces])

    def solve(self, F: np.ndarray, L, w: np.ndarray, tol: float):
        """λ for every tuple (shape (N, k)), which tuples it certifies, and for those the bounds.

        The bounds are those of :meth:`.arbitrage._Problem.bounds`: prices q(λ), the profits at
        them in every world (their minimum is the lower bound) and D(λ) (the upper bound).
        The certificate's relative tolerance is ``tol`` or :data:`CERTIFY_TOL`, whichever is larger:
        closed forms of near-degenerate tuples (forecasts within 1e-3 of 0 or 1) lose a few digits
        to rounding, which costs nothing against the 1e-9 the results promise but would send them
        to the slower active-set solver.
        """
        tol = max(tol, CERTIFY_TOL)
        N, k = F.shape[0], self.problem.k
        lam = np.zeros((N, k))
        prices, profits, upper = np.empty_like(F), np.empty((N, k)), np.empty(N)
        done = np.zeros(N, dtype=bool)
        wL = (w * L[0], w * L[1])
        unit = bool(np.all(w == 1.0))  # unweighted: certificates need not gather the weights

        def accept(rows: np.ndarray, sub: np.ndarray, face: Face) -> np.ndarray:
            """Certify ``sub`` (λ on ``face``) for ``rows``; record and return which passed."""
            full = np.zeros((rows.size, k))
            full[:, face.worlds] = sub
            ok, t, m, g, D = self.certified(full, (L[0][rows], L[1][rows]), 1.0 if unit else w[rows], tol)
            hit = rows[ok]
            lam[hit] = full[ok]
            if self.problem.unconditional:  # every field resolves: m > 0
                prices[hit] = t[ok] / m[ok]
            else:
                with np.errstate(divide="ignore", invalid="ignore"):
                    prices[hit] = np.where(m[ok] > 0, t[ok] / m[ok], F[hit])
            profits[hit], upper[hit] = g[ok], D[ok]
            done[hit] = True
            return ok

        def attempt(face: Face, rows: np.ndarray) -> None:
            """Solve ``face`` for ``rows`` (its closed form, or Newton's stages) and certify."""
            if rows.size == N:  # nothing to gather
                Lr, wr, wLr = L, w, wL
            else:
                Lr, wr, wLr = (L[0][rows], L[1][rows]), w[rows], (wL[0][rows], wL[1][rows])
            sub = face.start(Lr, wr, wLr)
            left = np.ones(rows.size, dtype=bool)
            for steps in face.stages:
                if steps:
                    sub[left] = _newton(face, sub[left], (Lr[0][left], Lr[1][left]), wr[left], steps)
                cand = np.flatnonzero(left & (sub >= 0).all(axis=1))  # λ < 0: not this face
                left[cand[accept(rows[cand], sub[cand], face)]] = False
                if not left.any():
                    break

        if self.choice is not None:
            choice, chosen = self.choice
            label = choice.pick(L, w, unit)
            for j, face in enumerate(chosen):
                rows = np.flatnonzero(label == j)
                if rows.size:
                    attempt(face, rows)
        for face in self.faces:
            rows = np.flatnonzero(~done)
            if rows.size == 0:
                break
            if not face.iterative and 2 * rows.size > N:
                # A closed form costs less than gathering most rows: computed for all, certified
                # only where λ is a distribution (elsewhere the optimum is on another face).
                sub = face.start(L, w, wL)
                rows = rows[(sub[rows] >= 0).all(axis=1)]
                accept(rows, sub[rows], face)
            else:
                attempt(face, rows)
        return lam, done, (prices, profits, upper)

    def certified(self, lam: np.ndarray, L, w: np.ndarray, tol: float):
        """Whether D(λ) and the worst profit at q(λ) meet within the tolerance; and t, m, g, D."""
        with np.errstate(all="ignore"):
            t, _, m, g, D = self.problem._state(lam, L, w)
            slack = tol * (1.0 + np.einsum("ij,ij->i", lam, np.abs(np.maximum(g, -1e30))))
            gap = D - g.min(axis=1)
        return np.isfinite(gap) & (gap <= slack), t, m, g, D


class Groups:
    """A face's fields as groups that share a price, when that makes the dual (nearly) separable.

    With all fields resolved on the face, fields with the same column there, or complementary ones,
    must share a price (or its complement), and D is a sum over groups of W_g KL(p_g ‖ F̃_g), where
    W_g is the group's weight and F̃_g its weighted logit-average forecast. When the group columns
    and the constant 1 are linearly independent, every p_g is free: p_g = F̃_g (coherent forecasts
    on the full face of AND or OR, two worlds, AND's facets where P∧Q is P or Q). When one group
    more ties them by one linear relation Σ c_g p_g = c₀ (AND's facet P∧Q = P + Q - 1, BUT,
    ANDOR's full face), the Lagrange condition gives logit p_g = logit F̃_g - τ c_g / W_g with one
    unknown τ, found by a safeguarded Newton iteration on a monotone function.
    """

    def __init__(self, same, flip, inv, pick, relation) -> None:
        self.same, self.flip, self.inv, self.pick, self.relation = same, flip, inv, pick, relation

    @classmethod
    def of(cls, W: np.ndarray) -> Groups | None:
        s, n = W.shape
        reps: list[np.ndarray] = []
        members: list[tuple[int, int, bool]] = []
        for i in range(n):
            col = W[:, i]
            if (col == col[0]).all():
                continue  # constant on the face: a fixed term of D
            for g, rep in enumerate(reps):
                if (col == rep).all() or (col == 1 - rep).all():
                    members.append((i, g, bool((col == rep).all())))
                    break
            else:
                members.append((i, len(reps), True))
                reps.append(col)
        n_groups = len(reps)
        if n_groups not in (s - 1, s):
            return None
        same, flip = np.zeros((n, n_groups)), np.zeros((n, n_groups))
        for i, g, is_same in members:
            (same if is_same else flip)[i, g] = 1.0
        C = np.column_stack(reps).astype(float)
        # Any s - 1 groups whose columns with 1 are independent give λ from their prices.
        for drop in [None] if n_groups == s - 1 else range(n_groups):
            pick = [g for g in range(n_groups) if g != drop]
            A = np.column_stack([C[:, pick], np.ones(s)])
            if np.linalg.matrix_rank(A) == s:
                break
        else:
            return None
        relation = None
        if n_groups == s:
            null = np.linalg.svd(np.column_stack([C, -np.ones(s)]))[2][-1]  # rank s: one relation
            relation = (null[:n_groups], null[n_groups])  # Σ c_g p_g = c₀ on the face
        return cls(same, flip, np.linalg.inv(A), np.array(pick), relation)

    def solve(self, w: np.ndarray, wL) -> np.ndarray:
        wt, wf = wL
        total = np.maximum(w @ (self.same + self.flip), _TINY)
        logit = (wt @ self.same + wf @ self.flip - wf @ self.same - wt @ self.flip) / total  # logit F̃_g
        with np.errstate(over="ignore"):
            price = 1.0 / (1.0 + np.exp(-logit)) if self.relation is None else self._constrained(logit, total)
        return price[:, self.pick] @ self.inv[:-1] + self.inv[-1]  # negative somewhere: not this face

    def _constrained(self, logit: np.ndarray, total: np.ndarray) -> np.ndarray:
        c, c0 = self.relation
        slope = c / total  # how τ moves each group's logit
        tau = _solve_tau(logit, slope, c, c0, _TAU_STEPS)
        # The few tuples still moving (extreme forecasts start far from τ) get more steps.
        moving = np.flatnonzero(np.abs(tau - _solve_tau(logit, slope, c, c0, 1, tau)) > 1e-12 * (1 + np.abs(tau)))
        if moving.size:
            tau[moving] = _solve_tau(logit[moving], slope[moving], c, c0, 4 * _TAU_STEPS, tau[moving])
        x = logit - tau * slope
        return 0.5 * (1.0 + np.tanh(0.5 * x))


def _solve_tau(logit, slope, c, c0, steps: int, tau: np.ndarray | None = None) -> np.ndarray:
    """The root of Σ c_g σ(logit_g - τ slope_g) = c₀ (decreasing in τ): bracketed, damped Newton."""
    tau = np.zeros((len(logit), 1)) if tau is None else tau.copy()
    lo, hi = np.full_like(tau, -np.inf), np.full_like(tau, np.inf)
    limit = _TAU_REACH / np.abs(slope).max(axis=1, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(steps):
            p = 0.5 * (1.0 + np.tanh(0.5 * (logit - tau * slope)))
            h = p @ c[:, None] - c0
            lo = np.where(h > 0, tau, lo)
            hi = np.where(h > 0, hi, tau)
            dh = -(p * (1.0 - p) * slope) @ c[:, None]
            # Newton, at most a few logit units at a time, and inside the bracket (else its middle).
            step = tau + np.clip(-h / np.minimum(dh, -_TINY), -limit, limit)
            mid = 0.5 * (lo + hi)
            tau = np.where((step >= lo) & (step <= hi) | ~np.isfinite(mid), step, mid)
    return tau


class Face:
    """One admissible face: its worlds and its own (smaller) problem."""

    def __init__(self, problem, worlds: list[int]) -> None:
        self.parent = problem
        self.worlds = np.array(worlds, dtype=np.intp)
        self.sub = type(problem).of(problem.worlds[self.worlds])
        self.chain = self._chain() if len(worlds) == problem.k else None
        self.separable = self._separable()
        closed = len(worlds) == 2 or self.separable is not None
        self.newton = not (closed or self.chain is not None)
        # Iterative: Newton steps, τ's root, or a chain form that weighted tuples refine by Newton steps.
        self.iterative = (
            self.newton
            or self.chain is not None
            or (self.separable is not None and self.separable.relation is not None)
        )
        # Newton steps before each certification: closed forms are certified as they are; a closed
        # form that needs equal weights gets Newton steps for the weighted tuples.
        self.stages = (0,) if closed else (0, 5, 2, 2) if self.chain else (5, 2, 2)
        sub = self.sub
        # Newton's constant parts: the pivot basis Z (moves weight from the last world to world j),
        # the reduced Hessian as a linear map of the per-field coefficients, and masses of 1 where a
        # field cannot be true / false / resolved on the face (see _newton).
        r = sub.k - 1
        self.Z = sub.Z[r]
        self.hessian = sub.reduced_outer[r]
        self.gradient = -self.Z  # rhs = -(g @ Z)
        self.pad = tuple((A.sum(axis=0) == 0).astype(float) for A in (sub.AT, sub.AF, sub.AR))

    def _separable(self) -> Groups | None:
        W = self.parent.worlds[self.worlds]
        return Groups.of(W) if (W >= 0).all() else None

    def _chain(self) -> tuple[np.ndarray, int] | None:
        """(base fields, event field) when all fields but one form a complete market of the worlds.

        That is when the worlds' likelihoods under the base fields alone, π_ω, sum to one for any
        forecasts and there are as many base fields as the worlds have degrees of freedom (P and
        Q|P for COND, plus R|P∧Q for CONDCOND, Q, P|Q and P|¬Q for EXPEVIDENCE), and the event field
        always resolves. Then the dual's optimum keeps π's shape inside the event and outside it, and
        only the event's total mass x is solved for: logit x = α logit π(E) + (1-α) logit F_E, with
        α the base fields' (common) weight share. Appendix D's NEGATION and COND forms are instances.
        """
        W = self.parent.worlds
        k, n = W.shape
        rng = np.random.default_rng(0)
        for e in range(n):
            base = np.array([i for i in range(n) if i != e])
            if len(base) != k - 1 or not (W[:, e] >= 0).all():
                continue
            F = rng.uniform(0.05, 0.95, size=(3, n))
            ll = np.log(F[:, base]) @ (W[:, base] == 1).T + np.log1p(-F[:, base]) @ (W[:, base] == 0).T
            if np.allclose(np.exp(ll).sum(axis=1), 1.0, rtol=0, atol=1e-12):
                return base, e
        return None

    def start(self, L, w: np.ndarray, wL) -> np.ndarray:
        """The face's closed form where it has one, else Newton's starting point (shape (N, face size)).

        ``wL`` is ``(w * log F, w * log(1 - F))``, shared by all faces.
        """
        sub = self.sub
        if self.chain is not None:
            return self._chain_solution(L, w)
        if self.separable is not None:
            return self.separable.solve(w, wL)
        # ℓ_ω: the weighted log-likelihood of each world of the face.
        loglik = wL[0] @ sub.AT.T + wL[1] @ sub.AF.T
        split = (sub.AT.sum(axis=0) > 0) & (sub.AF.sum(axis=0) > 0)  # fields that tell worlds apart
        W = np.maximum((w * split).sum(axis=1, keepdims=True), _TINY)
        # Two worlds: the exact optimum; otherwise a start most tuples converge from in six or seven steps.
        scaled = loglik / W if len(self.worlds) == 2 else 0.7 * loglik
        lam = np.exp(scaled - scaled.max(axis=1, keepdims=True))
        lam /= lam.sum(axis=1, keepdims=True)
        return lam

    def _chain_solution(self, L, w: np.ndarray) -> np.ndarray:
        base, e = self.chain
        sub = self.sub
        wb = w[:, base].mean(axis=1, keepdims=True)  # exact when the base weights are equal
        ll = L[0][:, base] @ sub.AT[:, base].T + L[1][:, base] @ sub.AF[:, base].T  # log π_ω
        event = sub.AT[:, e] > 0
        log_in = np.logaddexp.reduce(np.where(event, ll, -np.inf), axis=1, keepdims=True)  # log π(E)
        log_out = np.logaddexp.reduce(np.where(event, -np.inf, ll), axis=1, keepdims=True)
        alpha = wb / (wb + w[:, e : e + 1])
        u = alpha * log_in + (1 - alpha) * L[0][:, e : e + 1]
        v = alpha * log_out + (1 - alpha) * L[1][:, e : e + 1]
        norm = np.logaddexp(u, v)
        return np.exp(ll + np.where(event, u - norm - log_in, v - norm - log_out))


def _newton(face: Face, lam: np.ndarray, L, w: np.ndarray, steps: int) -> np.ndarray:
    """Pure Newton on the face's plane (Σλ = 1), each step cut to stay strictly inside.

    Fields that cannot be true (false, resolved) anywhere on the face get a mass of 1 in place of
    0 there: their outer products vanish on the face, so nothing else changes, and no log is -inf.
    """
    sub = face.sub
    AT, AF = sub.AT, sub.AF
    wL0, wL1 = w * L[0], w * L[1]
    w3 = np.concatenate([w, w, w], axis=1)
    with np.errstate(all="ignore"):
        for _ in range(steps):
            tr, fr = lam @ AT, lam @ AF
            t, f, m = tr + face.pad[0], fr + face.pad[1], tr + fr + face.pad[2]
            lm = np.log(m)
            g = (w * (np.log(t) - lm) - wL0) @ AT.T + (w * (np.log(f) - lm) - wL1) @ AF.T
            H = w3 / np.concatenate([t, f, m], axis=1) @ face.hessian
            d = _solve_small(H, g @ face.gradient) @ face.Z.T
            ratio = np.where(d < 0, lam / -d, np.inf).min(axis=1)
            alpha = np.minimum(1.0, 0.95 * ratio)
            lam = lam + np.where(np.isfinite(alpha), alpha, 0.0)[:, None] * d
    return np.maximum(lam, 0.0) / np.maximum(lam, 0.0).sum(axis=1, keepdims=True)


def _solve_small(H: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve H x = b for many symmetric systems of size 1-3 given as flat rows (Cramer's rule)."""
    s = b.shape[1]
    if s == 1:
        return b / H
    if s == 2:
        a, c, d = H[:, 0], H[:, 1], H[:, 3]
        det = a * d - c * c
        return np.stack([(d * b[:, 0] - c * b[:, 1]) / det, (a * b[:, 1] - c * b[:, 0]) / det], axis=1)
    if s == 3:
        a, b_, c, e, f, i = H[:, 0], H[:, 1], H[:, 2], H[:, 4], H[:, 5], H[:, 8]
        c00, c01, c02 = e * i - f * f, c * f - b_ * i, b_ * f - c * e  # cofactors (symmetric)
        c11, c12, c22 = a * i - c * c, b_ * c - a * f, a * e - b_ * b_
        det = a * c00 + b_ * c01 + c * c02
        x, y, z = b[:, 0], b[:, 1], b[:, 2]
        rows = [c00 * x + c01 * y + c02 * z, c01 * x + c11 * y + c12 * z, c02 * x + c12 * y + c22 * z]
        return np.stack(rows, axis=1) / det[:, None]
    return solve_spd(H.reshape(len(H), s, s), b)


def solve_spd(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve many small symmetric positive definite systems by Gaussian elimination."""
    A, b = A.copy(), b.copy()
    s = A.shape[1]
    for p in range(s):
        for i in range(p + 1, s):
            factor = A[:, i, p] / A[:, p, p]
            A[:, i, p:] -= factor[:, None] * A[:, p, p:]
            b[:, i] -= factor * b[:, p]
    x = np.empty_like(b)
    for i in reversed(range(s)):
        x[:, i] = (b[:, i] - (A[:, i, i + 1 :] * x[:, i + 1 :]).sum(axis=1)) / A[:, i, i]
    return x
