"""Joint repair: one repaired value per question, over tuples of several checks that share questions.

Brier geometry. The forecasts ``p`` (one per distinct question) are projected onto the intersection
of the tuples' coherent sets: minimise ``||q - p||²`` over ``q`` and, per tuple ``t``, a distribution
``λ_t`` on its check's worlds with ``q[idx_t] = W_tᵀ λ_t``. That is a sparse convex QP, solved by
Clarabel (an interior-point solver) with its gap and feasibility tolerances at 1e-12; the guarantee's
error is bounded by the duality gap, which the tests check against brute force to 1e-9. Where a
check's worlds are affinely independent (all shipped checks) the weights are an affine function of
the forecasts and need no variables of their own. Every joint world consistent with all tuples (a
0/1 vector over the questions) lies in the intersection, so by Pythagoras the Brier loss over all
questions improves by at least ``||p - q||²`` in every such world.

Tuples with conditional fields: the repair is the fixed point of :mod:`.tuples` in every tuple at
once. The unresolved coordinates of each world take the current values ``c`` of the conditional
questions and the QP is solved with them fixed (one outer iteration). The next ``c`` comes from each
conditional tuple's own fixed point for its local target (its repaired values plus its share of the
QP's multipliers: with the other tuples held, its repair is the projection of that target), with
Anderson acceleration, until ``c`` and the repaired values agree within ``1e-10`` or settle at the
QP's accuracy (about 1e-9 on large graphs; the status says so). In every consistent joint world the
loss then improves by at least the squared distance moved on the questions that resolve there
(a conditional question scores nothing where its condition fails); ``guaranteed`` counts the
questions that resolve in every world.

The QP's constraints and the Clarabel call live in :mod:`.qp`; ``CC_REPAIR_SOLVER=newton``
solves it instead with the warm-started solver of :mod:`.active_set` (see :class:`_Inner`).

Log geometry is not supported jointly: per-tuple log repair (the arbitrage prices) or joint Brier.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..checks.check import NONE, Check
from .active_set import solve_newton
from .qp import Block, System, build, read_solution, solve_clarabel
from .tuples import ConditionalPlan, Score, TupleRepair, check_score, guaranteed_improvement, repair_tuples

log = logging.getLogger(__name__)

OUTER_TOL = 1e-10
_MAX_OUTER = 60
_DEPTH = 5  # Anderson acceleration's memory
_STALL = 4  # stop when the best residual has not improved for this many outer iterations


@dataclass(frozen=True)
class GraphRepair:
    """One repaired value per question and the guarantees.

    ``moved``: the total squared change. ``guaranteed``: the smallest loss improvement over every joint
    world consistent with all tuples (a lower bound: ``moved`` when every field is binary).
    ``per_block``: each block's tuples gathered from ``repaired``; their ``guaranteed`` is on that
    tuple's own worlds and may be negative for one tuple in a joint repair.
    """

    repaired: np.ndarray
    moved: float
    per_block: list[TupleRepair]
    guaranteed: float
    status: str
    iterations: int
    seconds: float


def repair_graph(blocks: Sequence[tuple[Check, np.ndarray]], probs: np.ndarray, score: Score = "brier") -> GraphRepair:
    """Repair forecasts ``probs`` (shape ``(M,)``) jointly over ``blocks`` of ``(check, idx)``.

    ``idx`` has shape ``(N_t, n_fields)``: the positions in ``probs`` of each tuple's fields.
    """
    start = time.perf_counter()
    check_score(score)
    if score == "log":
        raise ValueError(
            "joint log repair is not supported: repair tuple by tuple with the log score (the arbitrage "
            "prices), or jointly with the Brier score"
        )
    p = np.asarray(probs, dtype=float)
    if p.ndim != 1 or not np.all(np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError("probs must be a 1-d array of finite forecasts in [0, 1]")
    M = len(p)
    parts: list[Block] = []
    offset = M
    for check, idx in blocks:
        idx = np.asarray(idx)
        if idx.ndim != 2 or idx.shape[1] != check.n_fields or not np.issubdtype(idx.dtype, np.integer):
            raise ValueError(f"{check.name}: idx must be an integer array of shape (N, {check.n_fields})")
        if idx.size and (idx.min() < 0 or idx.max() >= M):
            raise ValueError(f"{check.name}: idx refers to questions outside 0..{M - 1}")
        part = Block(check, idx.astype(np.int64), offset, np.asarray(check.worlds))
        parts.append(part)
        offset += part.size
    conditional = _conditional_questions(parts, M)
    if any(len(part.idx) for part in parts):
        q, status, iterations = _solve(parts, p, conditional)
    else:  # nothing constrains the forecasts
        q, status, iterations = p.copy(), "Solved", 0
    per_block = []
    for part in parts:
        pb, qb = p[part.idx], q[part.idx]
        moved = ((pb - qb) ** 2).sum(axis=1)
        gain = guaranteed_improvement(part.check, pb, qb, "brier") if len(pb) else np.zeros(0)
        per_block.append(TupleRepair(qb, moved, gain, iterations))
    change = (p - q) ** 2
    return GraphRepair(
        repaired=q,
        moved=float(change.sum()),
        per_block=per_block,
        guaranteed=float(change[~conditional].sum()),
        status=status,
        iterations=iterations,
        seconds=time.perf_counter() - start,
    )


def _conditional_questions(parts: list[Block], M: int) -> np.ndarray:
    """Questions that some tuple asks as a conditional field (they may go unresolved)."""
    out = np.zeros(M, dtype=bool)
    for part in parts:
        cols = np.flatnonzero((part.worlds == NONE).any(axis=0))
        if cols.size:
            out[part.idx[:, cols].ravel()] = True
    return out


def _solve(parts: list[Block], p: np.ndarray, conditional: np.ndarray) -> tuple[np.ndarray, str, int]:
    inner = _Inner(parts, p)
    if not conditional.any():
        q, status, *_ = inner.solve(None)
        return q, status, 1
    # Outer iterations on the conditional questions' values c, from each tuple's own fixed point: the
    # map c -> _local(...) (whose fixed point is the repair), with Anderson acceleration.
    c = _start(parts, p, conditional)
    cond = np.flatnonzero(conditional)
    xs: list[np.ndarray] = []
    gs: list[np.ndarray] = []
    status, change, best, best_q, best_outer = "", np.inf, np.inf, p, 0
    for outer in range(1, _MAX_OUTER + 1):
        q, status, _, targets = inner.solve(c)
        x = c[cond]
        change = float(np.abs(q[cond] - x).max())
        log.info("joint repair: outer iteration %d, conditional values off by %.1e", outer, change)
        if change < OUTER_TOL:
            return q, status, outer
        if change < best:
            best, best_q, best_outer = change, q, outer
        else:  # acceleration went astray, or the QP's accuracy is reached: plain local steps again
            xs, gs = [], []
            if outer - best_outer >= _STALL:
                # the status says it; a user hears of it only when it is far from the QP's own accuracy
                (log.warning if best > 1e-7 else log.info)(
                    "joint repair: conditional values settled %.1e from the fixed point", best
                )
                return best_q, f"{status} (conditional values settled to {best:.0e})", outer
        g = _local(parts, targets, q, c, conditional)[cond]
        xs, gs = [*xs[-_DEPTH:], x], [*gs[-_DEPTH:], g]
        nxt = g
        if len(xs) > 1:
            F = np.stack([b - a for a, b in zip(xs, gs, strict=True)], axis=1)  # residuals
            dF, dG = np.diff(F, axis=1), np.diff(np.stack(gs, axis=1), axis=1)
            gamma = np.linalg.lstsq(dF, F[:, -1], rcond=None)[0]
            nxt = g - dG @ gamma
        c = c.copy()
        c[cond] = np.clip(nxt, 0.0, 1.0)
    log.warning("joint repair: conditional values still moving by %.1e after %d outer iterations", change, outer)
    return q, status + f" (conditional values moving by {change:.1e})", outer


def _local(parts: list[Block], targets: list, q: np.ndarray, c: np.ndarray, conditional: np.ndarray) -> np.ndarray:
    """The next conditional values: each conditional tuple's own fixed point for its local target.

    With the other tuples' multipliers held, tuple t's repair is the projection of its target
    ``q[idx_t] + y_t`` onto its own polytope, so its fixed point there accounts at once for the slow
    part of the plain iteration (the mass of the worlds where the condition fails). The joint repair
    is a fixed point of this map too. Where a block has no target the plain value ``q`` is used.
    """
    total, count = np.zeros(len(c)), np.zeros(len(c))
    for part, target in zip(parts, targets, strict=True):
        cols = np.flatnonzero((part.worlds == NONE).any(axis=0))
        if not cols.size or not len(part.idx):
            continue
        if target is None:
            values = q[part.idx[:, cols]]
        else:
            plan = ConditionalPlan.of(part.worlds)
            values = plan.fixed_point(target, start=c[part.idx[:, cols]])[0][:, cols]
        np.add.at(total, part.idx[:, cols].ravel(), values.ravel())
        np.add.at(count, part.idx[:, cols].ravel(), 1.0)
    return np.where(conditional & (count > 0), total / np.maximum(count, 1.0), c)


def _start(parts: list[Block], p: np.ndarray, conditional: np.ndarray) -> np.ndarray:
    """Each conditional question's value in its tuples' own repairs (their mean where several ask it)."""
    total, count = np.zeros(len(p)), np.zeros(len(p))
    for part in parts:
        cols = np.flatnonzero((part.worlds == NONE).any(axis=0))
        if cols.size and len(part.idx):
            alone = repair_tuples(part.check, p[part.idx]).repaired
            np.add.at(total, part.idx[:, cols].ravel(), alone[:, cols].ravel())
            np.add.at(count, part.idx[:, cols].ravel(), 1.0)
    return np.where(conditional & (count > 0), total / np.maximum(count, 1.0), p)


class _Inner:
    """The inner QP for successive conditional values: Clarabel by default.

    ``CC_REPAIR_SOLVER=newton`` picks :func:`.active_set.solve_newton` where every block's
    weights are affine in the forecasts, warm-started from the last solution, with Clarabel taking
    over when it fails. Measured: more accurate (20,000 tuples reach the fixed point to 1e-10 in 14
    outer iterations, incoherence 9e-12, against Clarabel's 6e-9 and 18) but not yet faster (21 s
    against 19 s there; at 100,000 tuples SuperLU's factorisation costs 10 s and the solver needs
    about 150 of them), so it stays opt-in.
    """

    def __init__(self, parts: list[Block], p: np.ndarray) -> None:
        self.parts, self.p = parts, p
        self.state: tuple | None = None
        self.use_newton = os.environ.get("CC_REPAIR_SOLVER", "clarabel") == "newton"

    def solve(self, c: np.ndarray | None) -> tuple[np.ndarray, str, list, list]:
        """q, status, each block's λ, each block's local target (see :func:`.qp.read_solution`)."""
        M = len(self.p)
        system = build(self.parts, M, c)
        x = z = None
        if self.use_newton and system.affine:
            x, z = self._newton(system)
        if x is None:
            x, z, status = solve_clarabel(system, self.p)
        else:
            status = "Solved"
        lams, targets = read_solution(system, self.parts, x, z)
        return np.clip(x[:M], 0.0, 1.0), status, lams, targets

    def _newton(self, system: System) -> tuple[np.ndarray | None, np.ndarray | None]:
        start = time.perf_counter()
        result = solve_newton(system.A_eq, system.b_eq, system.A_in, system.b_in, self.p, self.state)
        if result is None:
            log.warning("joint repair: the Newton solver did not converge; Clarabel takes over")
            self.state = None
            return None, None
        log.info(
            "joint repair: Newton solver, %d rounds, %d factorisations, KKT residual %.1e, %.1f s",
            result.rounds,
            result.factorisations,
            result.kkt,
            time.perf_counter() - start,
        )
        self.state = (result.q, result.y, result.z)
        return result.q, np.concatenate([result.y, result.z])
