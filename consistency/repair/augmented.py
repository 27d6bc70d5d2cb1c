"""The joint Brier repair's inner problem by an augmented Lagrangian whose local step is the per-tuple projection.

``min ½||q - p||²`` subject to ``q[idx_t] ∈ H_t`` for every tuple t (H_t the hull of its worlds, with the
conditional values fixed). With a multiplier ``y_t`` per tuple and a penalty ρ, each round minimises

    L(q) = ½||q - p||² + (ρ/2) Σ_t dist²(q[idx_t] + y_t/ρ, H_t)

(convex, once differentiable, piecewise quadratic) by semismooth Newton steps, then sets ``y_t = ρ (w_t -
Π_t(w_t))``, ``w_t = q[idx_t] + y_t/ρ``. The gradient needs only the per-tuple projections Π_t, which run at
hundreds of thousands to millions of tuples a second (:mod:`.polytope`); the Newton matrix is ``I + ρ Σ_t
E_tᵀ N_t E_t`` with ``N_t`` the projector onto the normal space of the face Π_t lands on.

Most questions belong to one tuple only (private): the Newton system is reduced to the questions tuples
share by eliminating each tuple's private questions through its own small block (a Schur complement per
tuple), then solved by conjugate gradients preconditioned with a Cholesky factorisation of the reduced
matrix (single precision, dense up to :data:`DENSE_MAX` shared questions, else sparse LU). The
factorisation is kept while it works (a few CG iterations) and renewed when the faces have changed
enough to slow CG down: warm-started from an earlier solution (the joint repair's outer iterations), the
faces barely change and a round costs a few projections and triangular solves.

At convergence ``p - q = Σ_t E_tᵀ y_t`` with ``y_t`` in the normal cone of ``H_t`` at ``q[idx_t]``: the KKT
conditions of the projection onto the intersection, which is what the guarantee needs. The tuples'
incoherence is ``max_t ||q[idx_t] - Π_t(w_t)|| = max_t ||Δy_t|| / ρ`` at the last round.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np

from .polytope import FixedHull, project_each, project_each_near

log = logging.getLogger(__name__)

RHO = 1e4
DENSE_MAX = 9000  # shared questions up to which the reduced matrix is factorised densely
FEAS_TOL = 1e-11  # the tuples' incoherence at which the rounds stop
_ROUNDS = 200
_NEWTON = 50
# A cold start's first penalty, relative to the last, growing tenfold a round. Brier: measured fastest at
# once (1.0; continuation from 1e-4 took half again as many Newton steps). The KL objective cannot leave
# (0, 1): at the full penalty the first Newton steps want to cross the boundary and crawl along it, so it
# starts small, where the KL term dominates.
_COLD = {"brier": 1.0, "log": 1e-4}
_LOOSE = 1e-6  # the gradient at which rounds with a smaller penalty stop
_CURVATURE = 100.0  # KL curvature up to which a tuple's penalty is ρ (beyond: ρ times curvature / this)
_SCALE_MAX = 1e4
_STALL = 4  # rounds at the final penalty without halving the incoherence: no solution
_CG_MAX = 500  # CG iterations after which a factorisation is used
_PAIR_STEP = 1e-7  # the log objective with pairs: Newton steps accepted as converged (see solve)
_PAIR_CURVATURE = 1e12  # the pairs' Hessian entries are capped here (a mass near 0 overflows it)
_PAIR_ROUNDS = 60  # and its rounds (converged runs took 14-25; a price driven to 0 or 1 crawls on)


@dataclass
class LocalBlock:
    """Tuples of one check: question positions (N, n) and either fixed worlds (k, n) or per-tuple vertices."""

    idx: np.ndarray
    worlds: np.ndarray | None = None  # (k, n) float, the same for every tuple
    vertices: np.ndarray | None = None  # (N, k, n) float, per tuple (conditional values filled in)
    pairs: np.ndarray | None = None  # (P, 2) columns holding one question's (a, b) (log objective's pairs)

    def project(self, w: np.ndarray, hint: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        if self.worlds is not None:
            hull = FixedHull.of(self.worlds)
            return hull.project(w) if hint is None else hull.project_near(w, hint)
        return project_each(w, self.vertices) if hint is None else project_each_near(w, self.vertices, hint)


@dataclass
class Solution:
    q: np.ndarray
    y: list[np.ndarray]  # per block (N, n): each tuple's normal vector; p - q = Σ_t E_tᵀ y_t
    incoherence: float  # max over tuples of the distance from q[idx_t] to H_t (bounded by the last Δy / ρ)
    stationarity: float
    rounds: int
    newton: int
    factorisations: int
    seconds: float
    converged: bool


@dataclass
class _Normals:
    """Normal-space projectors of the faces of fixed worlds, by face mask."""

    worlds: np.ndarray
    table: dict[int, np.ndarray] = field(default_factory=dict)

    def of(self, masks: np.ndarray) -> np.ndarray:
        k, n = self.worlds.shape
        out = np.empty((len(masks), n, n))
        for key in np.unique(masks):
            if key not in self.table:
                members = np.flatnonzero((1 << np.arange(k)) & key)
                self.table[key] = normal_projector(self.worlds[members][None])[0]
            out[masks == key] = self.table[key]
        return out


def normal_projector(V: np.ndarray) -> np.ndarray:
    """``I - P`` with P the orthogonal projector onto the directions of the affine hull of each row's vertices."""
    N, m, n = V.shape
    eye = np.broadcast_to(np.eye(n), (N, n, n))
    if m == 1:
        return eye.copy()
    D = V[:, 1:] - V[:, :1]
    G = D @ D.transpose(0, 2, 1)
    X = np.empty_like(D)
    regular = np.abs(np.linalg.det(G)) > 1e-10
    if regular.any():
        X[regular] = np.linalg.solve(G[regular], D[regular])
    if not regular.all():  # coinciding vertices (a conditional value at 0 or 1): the pseudo-inverse
        X[~regular] = np.linalg.pinv(G[~regular], hermitian=True) @ D[~regular]
    return eye - D.transpose(0, 2, 1) @ X


class Layout:
    """Which questions tuples share, and where each tuple's fields sit in the reduced (shared) system."""

    def __init__(self, blocks: list[LocalBlock], M: int) -> None:
        counts = np.zeros(M, dtype=np.int64)
        for b in blocks:
            np.add.at(counts, b.idx.ravel(), 1)
        self.shared = np.flatnonzero(counts >= 2)
        sid = np.full(M, -1, dtype=np.int64)
        sid[self.shared] = np.arange(len(self.shared))
        self.sid_of = sid
        self.sid = [sid[b.idx] for b in blocks]  # (N, n): shared position or -1
        self.n_shared = len(self.shared)
        # Per block: groups of tuples with the same shared/private pattern of fields.
        self.touched = counts > 0
        self.groups = []
        for b, s in zip(blocks, self.sid, strict=True):
            bits = 1 << np.arange(b.idx.shape[1])
            code = (s >= 0) @ bits if len(s) else np.zeros(0, dtype=np.int64)
            groups = []
            for key in np.unique(code):
                on = (bits & key).astype(bool)
                groups.append((np.flatnonzero(code == key), np.flatnonzero(on), np.flatnonzero(~on)))
            self.groups.append(groups)
        # The reduced matrix's pattern (pairs of shared fields of a tuple) is fixed: its CSR structure is built
        # once, and each Newton step only sums the values into place.
        keys = []
        for sid_b, groups in zip(self.sid, self.groups, strict=True):
            for members, sh, _ in groups:
                if len(sh):
                    sg = sid_b[members][:, sh]
                    keys.append((np.repeat(sg, len(sh), axis=1) * self.n_shared + np.tile(sg, (1, len(sh)))).ravel())
        diagonal = np.arange(self.n_shared) * (self.n_shared + 1)
        keys.append(diagonal)
        every = np.concatenate(keys)
        unique = np.unique(every)
        self.slots = np.searchsorted(unique, every)  # entry -> position in the CSR data
        self.diagonal_slots = self.slots[-self.n_shared :] if self.n_shared else np.zeros(0, dtype=np.intp)
        self.indices = (unique % max(self.n_shared, 1)).astype(np.int32)
        self.indptr = np.searchsorted(unique // max(self.n_shared, 1), np.arange(self.n_shared + 1)).astype(np.int32)

    def matrix(self, values: list[np.ndarray], diagonal: np.ndarray | None = None):
        """The reduced matrix D + Σ C from the groups' values, in the order :meth:`__init__` laid them out
        (D: ``diagonal``, or the identity)."""
        from scipy import sparse

        diagonal = np.ones(self.n_shared) if diagonal is None else diagonal
        data = np.bincount(self.slots, np.concatenate([*values, diagonal]), minlength=len(self.indices))
        return sparse.csr_matrix((data, self.indices, self.indptr), shape=(self.n_shared, self.n_shared))


class AugmentedLagrangian:
    """Solve, warm-started from an earlier :class:`Solution` of the same tuples when given."""

    def __init__(
        self,
        blocks: list[LocalBlock],
        p: np.ndarray,
        rho: float = RHO,
        objective: str = "brier",
        pairs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    ) -> None:
        if objective not in ("brier", "log"):
            raise ValueError(f"objective must be brier or log, not {objective!r}")
        self.log = objective == "log"
        if self.log and np.any((p <= 0) | (p >= 1)):
            raise ValueError("the log objective needs forecasts strictly between 0 and 1 (clip them first)")
        self.blocks, self.p, self.rho_max = blocks, p, rho
        self.logit_p = np.log(p) - np.log1p(-p) if self.log else None
        # Log objective, questions that may go unresolved: coordinates (a, b) of their true and false masses and
        # their forecasts, with r KL(a/r ‖ p) (r = a + b) in place of KL (:mod:`.log_graph`); ``p`` is their start.
        self.pairs = pairs
        self.single = np.ones(len(p), dtype=bool)
        if pairs is not None:
            self.single[pairs[0]] = self.single[pairs[1]] = False
        self.rho = rho
        # Per tuple, a factor on the penalty (the KL objective: its curvature, see solve()); 1 for Brier.
        self.scale = [np.ones((len(b.idx), 1)) for b in blocks]
        self.layout = Layout(blocks, len(p))
        self.normals = [_Normals(b.worlds) if b.worlds is not None else None for b in blocks]
        self.factor = None
        self.factorisations = 0
        self.factor_seconds = self.cg_seconds = 0.0
        self.hints: list | None = None
        self.per_tuple: dict[int, tuple] = {}  # per block with per-tuple vertices: the vertices, faces, normals

    # ------------------------------------------------------------------ pieces
    def _local(self, q: np.ndarray, y: list[np.ndarray]):
        """Per block: w, its projection z, the residual r = w - z, the face masks (the last ones: hints)."""
        out = []
        hints = self.hints or [None] * len(self.blocks)
        for b, yb, hint, scale in zip(self.blocks, y, hints, self.scale, strict=True):
            w = q[b.idx] + yb / (self.rho * scale)
            z, lam = b.project(w, hint)
            out.append((w, z, w - z, (lam > 0) @ (1 << np.arange(lam.shape[1]))))
        self.hints = [masks for *_, masks in out]
        return out

    def objective(self, q: np.ndarray) -> float:
        """½||q - p||² (Brier), or Σ KL(q_i ‖ p_i) over the questions (log; +inf outside (0, 1))."""
        if not self.log:
            return 0.5 * float(((q - self.p) ** 2).sum())
        if np.any(q <= 0) or np.any(q[self.single] >= 1):
            return np.inf
        x, p = q[self.single], self.p[self.single]
        value = float((x * np.log(x / p) + (1 - x) * np.log((1 - x) / (1 - p))).sum())
        if self.pairs is not None:
            ia, ib, pp = self.pairs
            a, b = q[ia], q[ib]
            r = a + b
            value += float((a * np.log(a / (r * pp)) + b * np.log(b / (r * (1 - pp)))).sum())
        return value

    def _curvature(self, q: np.ndarray) -> np.ndarray | None:
        """The objective's Hessian's diagonal; None for Brier's identity. (Pairs: also :meth:`_coupling`.)"""
        if not self.log:
            return None
        h = 1.0 / (q * (1.0 - q))
        if self.pairs is not None:
            ia, ib, _ = self.pairs
            a, b = q[ia], q[ib]
            with np.errstate(over="ignore", divide="ignore"):  # a mass near 0: its curvature is capped
                h[ia], h[ib] = (
                    np.minimum(b / (a * (a + b)), _PAIR_CURVATURE),
                    np.minimum(a / (b * (a + b)), _PAIR_CURVATURE),
                )
        return h

    def _coupling(self, q: np.ndarray) -> np.ndarray:
        """Per coordinate of a pair, the Hessian's entry with its partner (-1 / r; 0 elsewhere)."""
        off = np.zeros(len(q))
        if self.pairs is not None:  # -1/r, written so that the block stays semidefinite where a curvature is capped
            ia, ib, _ = self.pairs
            h = self._curvature(q)
            off[ia] = off[ib] = -np.sqrt(h[ia] * h[ib])
        return off

    def _value(self, q: np.ndarray, local) -> float:
        penalty = sum(float((scale * r**2).sum()) for (_, _, r, _), scale in zip(local, self.scale, strict=True))
        return self.objective(q) + 0.5 * self.rho * penalty

    def _gradient(self, q: np.ndarray, local) -> np.ndarray:
        if not self.log:
            g = q - self.p
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                g = np.log(q) - np.log1p(-q) - self.logit_p
            if self.pairs is not None:
                ia, ib, pp = self.pairs
                r = q[ia] + q[ib]
                g[ia], g[ib] = np.log(q[ia] / (r * pp)), np.log(q[ib] / (r * (1 - pp)))
        for b, (_, _, r, _), scale in zip(self.blocks, local, self.scale, strict=True):
            np.add.at(g, b.idx.ravel(), (self.rho * scale * r).ravel())
        return g

    def _newton_step(self, g: np.ndarray, local, q: np.ndarray) -> tuple[np.ndarray, int]:
        """Δ with (D + ρ Σ E_tᵀ N_t E_t) Δ = -g (D the objective's diagonal Hessian: I for Brier), private
        questions eliminated tuple by tuple.

        Per tuple, with its private fields u and shared fields s and K = ρ N_t: ``A = (D_u + K_uu)⁻¹`` and the
        reduced block ``C = K_ss - K_su A K_us``. With the Brier objective, tuples of a check with fixed worlds
        share K and A per face, so these are computed once per (face, pattern) and gathered.
        """
        L = self.layout
        h = self._curvature(q)
        off = self._coupling(q) if h is not None else None
        ns = L.n_shared
        rhs = -g[L.shared] if ns else np.zeros(0)
        vals = []
        backsub = []
        faces = [masks for *_, masks in local]
        for b, masks, sid, groups, normals, scale in zip(
            self.blocks, faces, L.sid, L.groups, self.normals, self.scale, strict=True
        ):
            for members, s, u in groups:
                rho = self.rho * scale[members][:, :, None]
                hu = None if h is None else self._private_hessian(b, members, u, h, off)
                if normals is not None and h is None:  # one K and A per face
                    face = masks[members]
                    keys = np.flatnonzero(np.bincount(face))
                    which = np.zeros(keys[-1] + 1, dtype=np.intp)
                    which[keys] = np.arange(len(keys))
                    which = which[face]
                    A, AKus, C = _schur(self.rho * normals.of(keys), s, u)
                    A, AKus, C = A[which], AKus[which], C[which]
                elif normals is not None:
                    A, AKus, C = _schur(rho * normals.of(masks[members]), s, u, hu)
                else:
                    A, AKus, C = _schur(rho * self._per_tuple_normals(b, masks[members], members), s, u, hu)
                gu = g[b.idx[members][:, u]]  # (Ng, nu)
                sg = sid[members][:, s]  # (Ng, ns_)
                if len(s):
                    vals.append(C.reshape(len(members), -1).ravel())
                    contribution = np.einsum("rua,ru->ra", AKus, gu)  # K_su A g_u (A symmetric)
                    rhs = rhs + np.bincount(sg.ravel(), contribution.ravel(), minlength=ns)
                backsub.append((b.idx[members][:, u], A, AKus, sg, gu))
        cg_iterations = 0
        if ns:
            S = L.matrix(vals, None if h is None else h[L.shared])
            if self.pairs is not None:  # the pairs' coupling among the shared questions, once per question
                from scipy import sparse

                ia, ib, _ = self.pairs
                sa, sb = L.sid_of[ia], L.sid_of[ib]
                both = (sa >= 0) & (sb >= 0)
                rows, cols = np.concatenate([sa[both], sb[both]]), np.concatenate([sb[both], sa[both]])
                S = S + sparse.csr_matrix((np.tile(off[ia][both], 2), (rows, cols)), shape=S.shape)
            ds, cg_iterations = self._solve_shared(S, rhs)
        else:
            ds = np.zeros(0)
        delta = np.where(L.touched, 0.0, -g if h is None else -g / h)  # questions in no tuple: their forecasts
        if ns:
            delta[L.shared] = ds
        for pos, A, AKus, sg, gu in backsub:
            if pos.shape[1] == 0:
                continue
            du = -np.einsum("rab,rb->ra", A, gu)
            if sg.shape[1]:
                du -= np.einsum("rua,ra->ru", AKus, ds[sg])
            delta[pos.ravel()] = du.ravel()
        return delta, cg_iterations

    def _private_hessian(self, b: LocalBlock, members: np.ndarray, u: np.ndarray, h: np.ndarray, off: np.ndarray):
        """The objective's Hessian on a group's private fields: its diagonal, or the full block where a pair's two
        coordinates are among them."""
        hu = h[b.idx[members][:, u]]
        if b.pairs is None or not len(u):
            return hu
        where = {int(col): i for i, col in enumerate(u)}
        inside = [(where[ca], where[cb]) for ca, cb in b.pairs if ca in where and cb in where]
        if not inside:
            return hu
        full = hu[:, :, None] * np.eye(len(u))[None]
        for i, j in inside:
            full[:, i, j] = full[:, j, i] = off[b.idx[members][:, u[i]]]
        return full

    def _per_tuple_normals(self, b: LocalBlock, masks: np.ndarray, tuples: np.ndarray) -> np.ndarray:
        """Each tuple's normal projector, recomputed only where its face (or its vertices) changed."""
        _, k, n = b.vertices.shape
        cached = self.per_tuple.get(id(b))
        if cached is None or cached[0] is not b.vertices:
            cached = (b.vertices, np.full(len(b.idx), -1), np.zeros((len(b.idx), n, n)))
            self.per_tuple[id(b)] = cached
        _, known, normals = cached
        stale = tuples[known[tuples] != masks]
        fresh = masks[known[tuples] != masks]
        for key in np.unique(fresh):
            rows = stale[fresh == key]
            members = np.flatnonzero((1 << np.arange(k)) & key)
            normals[rows] = normal_projector(b.vertices[rows][:, members])
            known[rows] = key
        return normals[tuples]

    def _solve_shared(self, S, rhs: np.ndarray) -> tuple[np.ndarray, int]:
        """Conjugate gradients on the reduced system, preconditioned by its diagonal; a factorisation takes over
        where that is slow (measured on the benchmark graphs: 30-90 iterations of a sparse product)."""
        if self.factor is None:
            diagonal = S.diagonal()
            x, iterations, ok = _pcg(S, rhs, lambda r: r / diagonal, _CG_MAX)
            if ok:
                return x, iterations
            log.info("joint repair: CG did not converge in %d iterations; factorising", _CG_MAX)
            self._factorise(S)
        else:
            x, iterations = None, 0
        x, more, ok = _pcg(S, rhs, self.factor, _CG_MAX, x)
        if not ok:
            self._factorise(S)
            x, extra, ok = _pcg(S, rhs, self.factor, _CG_MAX, x)
            more += extra
        return x, iterations + more

    def _factorise(self, S) -> None:
        import scipy.linalg
        from scipy.sparse import linalg as splinalg

        self.factorisations += 1
        begun = time.perf_counter()
        self.cg_seconds = 0.0
        n = S.shape[0]
        if n <= DENSE_MAX:
            dense = S.toarray()
            c, info = scipy.linalg.lapack.dpotrf(dense, lower=1, clean=1, overwrite_a=1)
            if info == 0:
                self.factor = lambda r: scipy.linalg.lapack.dpotrs(c, r, lower=1)[0]
                self.factor_seconds = time.perf_counter() - begun
                return
            log.info("joint repair: Cholesky failed (%d); sparse LU instead", info)
        lu = splinalg.splu(S.tocsc())
        self.factor = lu.solve
        self.factor_seconds = time.perf_counter() - begun

    # ------------------------------------------------------------------ the method
    def _line_search(
        self, q: np.ndarray, y: list[np.ndarray], delta: np.ndarray, value: float, slope: float
    ) -> tuple[float, np.ndarray, list, float]:
        """Armijo backtracking along the Newton step ``delta`` from ``q``: (step length, new point, its
        local terms, its value). With log scores the step stays inside (0, 1)."""
        t = 1.0
        if self.log:  # stay inside (0, 1): at most 99.5% of the way to the boundary
            with np.errstate(divide="ignore", invalid="ignore"):
                room = np.where(delta < 0, -q / delta, np.where((delta > 0) & self.single, (1 - q) / delta, np.inf))
            t = min(1.0, 0.995 * float(room.min(initial=np.inf)))
        for _ in range(30):
            cand = q + t * delta
            cand_local = self._local(cand, y)
            cand_value = self._value(cand, cand_local)
            if cand_value <= value + 1e-4 * t * slope + 1e-15 * abs(value):
                break
            # Halving. Measured, and worse: interpolating to the minimum of the quadratic model (it stops
            # steps at the kinks of L instead of crossing them), a non-monotone rule letting full steps
            # through, and recomputing the step with the faces of both points (twice and ten times as
            # many steps).
            t *= 0.5
        return t, cand, cand_local, cand_value

    def _rescale(self, q: np.ndarray) -> None:
        """ALM's rounds contract like h / (h + ρ) where the objective's curvature is h: near 0 or 1 the KL
        curvature 1/(q(1-q)) outgrows ρ, so each tuple's penalty grows with it."""
        h = self._curvature(q)
        self.scale = [np.clip(h[b.idx].max(axis=1, keepdims=True) / _CURVATURE, 1.0, _SCALE_MAX) for b in self.blocks]

    def _step_tolerance(self, tol: float) -> float:
        """The log objective's Newton step (in the forecasts' units) taken as converged. With pairs rounding keeps it
        above ~1e-9, where their flat directions (r KL(a/r ‖ p) is linear along (a, b)) meet penalties of 1e8
        (measured on 100,000 tuples)."""
        return 1e2 * tol if self.pairs is None else max(1e2 * tol, _PAIR_STEP)

    def solve(self, start: Solution | None = None, tol: float = FEAS_TOL) -> Solution:
        begun = time.perf_counter()
        if start is not None:
            q = start.q.copy()
            y = [a.copy() for a in start.y]
            self.rho = self.rho_max
        else:  # from the forecasts, with a penalty growing tenfold a round: early rounds are well conditioned
            q = self.p.copy()
            y = [np.zeros(b.idx.shape) for b in self.blocks]
            self.rho = self.rho_max * _COLD["log" if self.log else "brier"]
            self.hints = None
        newton = 0
        incoherence = np.inf
        stationarity = np.inf
        converged = False
        rounds = 0
        history: list[float] = []
        loose = self._step_tolerance(tol)
        for rounds in range(1, (_ROUNDS if self.pairs is None else _PAIR_ROUNDS) + 1):
            if self.log:
                self._rescale(q)
            local = self._local(q, y)
            value = self._value(q, local)
            # The gradient sums terms of size ρ|w|: below a few hundred roundings of those it is noise.
            floor = max(0.1 * tol, 256 * np.finfo(float).eps * self.rho)
            if self.rho < self.rho_max:
                floor = max(floor, _LOOSE)
            last = np.inf
            for _ in range(_NEWTON):
                g = self._gradient(q, local)
                if not self.log:
                    stationarity = float(np.abs(g).max(initial=0.0))
                    if stationarity <= floor or (stationarity > 0.5 * last and stationarity <= 1e3 * floor):
                        break
                delta, cg = self._newton_step(g, local, q)
                if self.log:
                    # The KL objective's curvature spans many orders (1/(q(1-q))) and so do the penalties: the
                    # Newton step, in the forecasts' units, says how far q is from the round's minimum.
                    stationarity = float(np.abs(delta).max(initial=0.0))
                    if stationarity <= 0.1 * tol or (stationarity > 0.5 * last and stationarity <= loose):
                        break
                last = stationarity
                newton += 1
                t, q, local, value = self._line_search(q, y, delta, value, float(g @ delta))
                log.debug("  Newton: |g| %.1e, CG %d, step %.3g", stationarity, cg, t)
                if t * float(np.abs(delta).max(initial=0.0)) <= 1e-16:
                    break
            new_y = [self.rho * scale * r for (_, _, r, _), scale in zip(local, self.scale, strict=True)]
            incoherence = max(
                (
                    float((np.abs(a - b) / (self.rho * scale)).max(initial=0.0))
                    for a, b, scale in zip(new_y, y, self.scale, strict=True)
                ),
                default=0.0,
            )
            y = new_y
            final = self.rho >= self.rho_max
            self.rho = min(10.0 * self.rho, self.rho_max)
            log.debug(
                "augmented Lagrangian: round %d, incoherence %.1e, stationarity %.1e, %d Newton steps so far",
                rounds,
                incoherence,
                stationarity,
                newton,
            )
            if final and incoherence <= tol and stationarity <= (max(tol, floor) if not self.log else loose):
                converged = True
                break
            if final:
                # No solution (tuples in conflict): the multipliers grow without the incoherence falling.
                history.append(incoherence)
                if len(history) > _STALL and history[-1] > 0.5 * min(history[:-_STALL]):
                    break
        return Solution(
            q, y, incoherence, stationarity, rounds, newton, self.factorisations, time.perf_counter() - begun, converged
        )


def _schur(
    K: np.ndarray, s: np.ndarray, u: np.ndarray, hu: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For local Newton blocks K (G, n, n): A = (D_u + K_uu)⁻¹ (D_u = diag(hu), or I), A K_us and
    C = K_ss - K_su A K_us."""
    Kuu, Kus, Kss = K[:, u][:, :, u], K[:, u][:, :, s], K[:, s][:, :, s]
    if len(u):
        if hu is None:
            diagonal = np.eye(len(u))[None]
        elif hu.ndim == 3:  # a full block (the log objective's pairs)
            diagonal = hu
        else:
            diagonal = hu[:, :, None] * np.eye(len(u))[None]
        A = np.linalg.inv(diagonal + Kuu)
    else:
        A = np.zeros((len(K), 0, 0))
    AKus = A @ Kus
    return A, AKus, Kss - np.einsum("rua,rub->rab", Kus, AKus)


def _pcg(S, b: np.ndarray, precondition, max_iter: int, x0: np.ndarray | None = None) -> tuple[np.ndarray, int, bool]:
    """Preconditioned conjugate gradients to a relative residual of 1e-12."""
    x = np.zeros_like(b) if x0 is None else x0.copy()
    r = b - S @ x
    target = 1e-12 * max(float(np.abs(b).max(initial=0.0)), 1e-300)
    if float(np.abs(r).max(initial=0.0)) <= target:
        return x, 0, True
    z = precondition(r)
    d = z.copy()
    rz = float(r @ z)
    for it in range(1, max_iter + 1):
        Sd = S @ d
        alpha = rz / float(d @ Sd)
        x += alpha * d
        r -= alpha * Sd
        if float(np.abs(r).max(initial=0.0)) <= target:
            return x, it, True
        z = precondition(r)
        rz_new = float(r @ z)
        d = z + (rz_new / rz) * d
        rz = rz_new
    return x, max_iter, False
