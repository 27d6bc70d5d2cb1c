"""Joint repair: one repaired value per question, over tuples of several checks that share questions.

Brier geometry. The forecasts ``p`` (one per distinct question) are projected onto the intersection
of the tuples' coherent sets: minimise ``||q - p||²`` subject to ``q[idx_t] ∈ H_t`` (the hull of tuple t's
worlds) for every t. That is a sparse convex QP. It is solved by an augmented Lagrangian whose local step
is the per-tuple projection and whose Newton systems are reduced to the questions tuples share
(:mod:`.augmented`, to tuple incoherence 1e-11); Clarabel, an interior-point solver, is the reference
(``CC_REPAIR_SOLVER=clarabel``) and takes over when the augmented Lagrangian does not converge, which is
how tuples that contradict each other are recognised (:mod:`.conflicts`). Connected components are
repaired apart, in processes of their own when several are large. Every joint world consistent with all
tuples (a 0/1 vector over the questions) lies in the intersection, so by Pythagoras the Brier loss over
all questions improves by at least ``||p - q||²`` in every such world.

Tuples with conditional fields: the repair is the fixed point of :mod:`.tuples` in every tuple at
once. The unresolved coordinates of each world take the current values ``c`` of the conditional
questions and the QP is solved with them fixed (one outer iteration). The next ``c`` comes from each
conditional tuple's own fixed point for its local target (its repaired values plus its share of the
QP's multipliers: with the other tuples held, its repair is the projection of that target), with
Anderson acceleration, until ``c`` and the repaired values agree within ``1e-10`` or settle at the
QP's accuracy (the status says so). Each outer iteration's QP is warm-started from the last one's
solution and solved only as accurately as the conditional values are yet known. In every consistent joint world the
loss then improves by at least the squared distance moved on the questions that resolve there
(a conditional question scores nothing where its condition fails); ``guaranteed`` counts the
questions that resolve in every world.

The QP's constraints and the Clarabel call live in :mod:`.qp`; ``CC_REPAIR_SOLVER=newton`` solves it
with the earlier warm-started solver of :mod:`.active_set` (see :class:`_Inner`).

Log geometry (yes/no checks): the repair is the KL (Bregman) projection of the forecasts (clipped as the
log score clips them) onto the same intersection, ``min Σ_i KL(q_i ‖ p_i)``, solved by the same augmented
Lagrangian with the KL objective. The log loss of forecast x in world ω is ``KL(ω ‖ x)``, so the
generalised Pythagorean inequality of Bregman projections onto a convex set gives, in every joint
world consistent with all tuples, ``logloss(p, ω) - logloss(q, ω) >= Σ_i KL(q_i ‖ p_i)``: ``moved`` and
``guaranteed`` are that sum, in nats. On tuples sharing no question it is each tuple's arbitrage prices
(the per-tuple log repair). With conditional fields: the graph's arbitrage prices (:mod:`.log_graph` says why).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..checks.categorical import columns_check
from ..checks.check import NONE, Check
from ..errors import RunFailed
from ..metrics.arbitrage import clip_forecasts
from . import log_graph
from .active_set import solve_newton
from .augmented import FEAS_TOL, AugmentedLagrangian, LocalBlock, Solution
from .categorical import MAX_HULL_WORLDS
from .conflicts import ConflictingTuples, RepairFailed, find_conflict, world_conflict
from .qp import Block, System, build, involved_tuples, read_solution, solve_clarabel, solve_kl_clarabel, vertices
from .tuples import ConditionalPlan, Score, TupleRepair, check_score, guaranteed_improvement, repair_tuples
from .worlds import WorldSearch

log = logging.getLogger(__name__)

OUTER_TOL = 1e-10
_MAX_OUTER = 60
_DEPTH = 5  # Anderson acceleration's memory
_STALL = 4  # stop when the best residual has not improved for this many outer iterations
_FAIL = 1e-4  # conditional values this far from the fixed point: no repair (closer: the status says how close)
SOLVERS = ("fast", "clarabel", "newton")
_LOOSE_INNER = 1e-4  # the inner solution's accuracy in the first outer iterations
PARALLEL_MIN = 20_000  # tuples in a component worth a process of its own


@dataclass(frozen=True)
class GraphRepair:
    """One repaired value per question and the guarantees.

    ``moved``: the total squared change. ``guaranteed``: the smallest loss improvement over every joint
    world consistent with all tuples repaired (a lower bound: ``moved`` when every field is binary).
    ``per_block``: each block's tuples gathered from ``repaired``; their ``guaranteed`` is on that
    tuple's own worlds and may be negative for one tuple in a joint repair. ``left_out``: the (block,
    row) pairs of tuples left out because they conflict with others (``skip_conflicts``); the
    guarantee is over the other tuples' worlds.
    """

    repaired: np.ndarray
    moved: float
    per_block: list[TupleRepair]
    guaranteed: float
    status: str
    iterations: int
    seconds: float
    left_out: list[tuple[int, int]] = field(default_factory=list)
    conflicts: list[ConflictingTuples] = field(default_factory=list)
    residual: float = 0.0  # conditional values: how far the last outer iteration left them from the fixed point
    worlds: str = "found"  # a joint world consistent with every tuple repaired: found, or unknown (search budget)


def repair_graph(
    blocks: Sequence[tuple[Check, np.ndarray]],
    probs: np.ndarray,
    score: Score = "brier",
    *,
    skip_conflicts: bool = False,
) -> GraphRepair:
    """Repair forecasts ``probs`` (shape ``(M,)``) jointly over ``blocks`` of ``(check, idx)``.

    ``idx`` has shape ``(N_t, n_columns)``: the positions in ``probs`` of each tuple's forecast columns (a
    categorical field has one per outcome, each a value of its own: :func:`~consistency.checks.categorical.
    columns_check`; Brier only, as its multi-class score is the sum of its columns'). Raises
    :class:`.conflicts.ConflictingTuples` (carrying an irreducible set of (block, row) pairs) when no
    forecasts satisfy all tuples; with ``skip_conflicts`` such sets are left out, one after another,
    and the rest repaired. :class:`.conflicts.RepairFailed`: the solver failed otherwise.
    """
    start = time.perf_counter()
    check_score(score)
    p = np.asarray(probs, dtype=float)
    if p.ndim != 1 or not np.all(np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError("probs must be a 1-d array of finite forecasts in [0, 1]")
    categorical = sorted({c.name for c, idx in blocks if c.categorical and len(idx)})
    if categorical and score == "log":
        raise ValueError(
            f"joint log repair is not supported for checks with multiple-choice or numeric fields "
            f"({', '.join(categorical)}): repair them tuple by tuple with the log score, or jointly with the "
            "Brier score"
        )
    large = sorted({c.name for c, idx in blocks if c.categorical and len(idx) and len(c.worlds) > MAX_HULL_WORLDS})
    if large:
        raise ValueError(
            f"the joint repair projects onto hulls of at most {MAX_HULL_WORLDS} worlds; {', '.join(large)} "
            "has more (a numeric grid): repair it tuple by tuple"
        )
    blocks = [(columns_check(c), idx) for c, idx in blocks]
    if score == "log":
        p = clip_forecasts(p)  # as the log score and the per-tuple log repair clip them
    M = len(p)
    checked: list[tuple[Check, np.ndarray]] = []
    for check, idx in blocks:
        idx = np.asarray(idx)
        if idx.ndim != 2 or idx.shape[1] != check.n_fields or not np.issubdtype(idx.dtype, np.integer):
            raise ValueError(f"{check.name}: idx must be an integer array of shape (N, {check.n_fields})")
        if idx.size and (idx.min() < 0 or idx.max() >= M):
            raise ValueError(f"{check.name}: idx refers to questions outside 0..{M - 1}")
        checked.append((check, idx.astype(np.int64)))
    keep = [np.ones(len(idx), dtype=bool) for _, idx in checked]
    conflicts: list[ConflictingTuples] = []
    while True:
        try:
            q, status, iterations, conditional, residual, worlds, resolves = _solve_kept(checked, keep, p, score)
            break
        except _Unsolved as exc:
            conflict = _explain(checked, keep, exc, score)
            if not skip_conflicts:
                raise conflict from None
            conflicts.append(conflict)
            for b, r in conflict.tuples:
                keep[b][r] = False
            log.info("joint repair: %s; left out", conflict)
    weights = np.ones(M) if resolves is None else resolves[0]  # log, conditional fields: each question's r_i
    change = weights * divergence(p, q, score)
    per_block = []
    for check, idx in checked:
        pb, qb = p[idx], q[idx]
        gain = guaranteed_improvement(check, pb, qb, score) if len(pb) else np.zeros(0)
        per_block.append(TupleRepair(qb, change[idx].sum(axis=1), gain, iterations))
    if resolves is None:
        guaranteed = float(change[~conditional].sum())
    else:  # the arbitrage's certified guarantee at the prices returned, and the KL moved on yes/no components
        guaranteed = resolves[3] + float(change[~resolves[2]].sum())
    return GraphRepair(
        repaired=q,
        moved=float(change.sum()) if resolves is None else resolves[1] + float(change[~resolves[2]].sum()),
        per_block=per_block,
        guaranteed=guaranteed,
        status=status,
        iterations=iterations,
        seconds=time.perf_counter() - start,
        left_out=sorted((b, r) for c in conflicts for b, r in c.tuples),
        conflicts=conflicts,
        residual=residual,
        worlds=worlds,
    )


def divergence(p: np.ndarray, q: np.ndarray, score: Score) -> np.ndarray:
    """Per forecast, what moving it from p to q costs in the score's geometry: (p - q)² for Brier,
    KL(q ‖ p) for the log score (its Bregman divergence); the guarantee is their sum."""
    if score == "brier":
        return (p - q) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = q * np.log(q / p) + (1 - q) * np.log((1 - q) / (1 - p))
    return np.where(q == p, 0.0, kl)


def _solve_kept(
    checked: list[tuple[Check, np.ndarray]], keep: list[np.ndarray], p: np.ndarray, score: Score = "brier"
) -> tuple[np.ndarray, str, int, np.ndarray, float, str, tuple | None]:
    """(q, status, outer iterations, conditional questions, residual, worlds, resolves) over the kept rows
    (``resolves``: with conditional fields, the log repair's r_i, V, the questions it covers and its guarantee);
    raises :class:`_Unsolved`.

    Connected components (tuples linked by shared questions) are repaired independently: in parallel
    processes when at least two are large (:func:`_run_components`)."""
    M = len(p)
    kept = [(check, idx[rows], np.flatnonzero(rows)) for (check, idx), rows in zip(checked, keep, strict=True)]
    conditional = _conditional_questions([Block(c, i, 0, np.asarray(c.worlds)) for c, i, _ in kept], M)
    if not any(len(i) for _, i, _ in kept):  # nothing constrains the forecasts
        return p.copy(), "Solved", 0, conditional, 0.0, "found", None
    labels, count = components([i for _, i, _ in kept], M)
    jobs = []
    for label in range(count):
        blocks, rows, questions = [], [], []
        for (check, idx, where), lab in zip(kept, labels, strict=True):
            mine = np.flatnonzero(lab == label)
            blocks.append((check, idx[mine]))
            rows.append(where[mine])
            questions.append(idx[mine].ravel())
        used = np.unique(np.concatenate(questions))
        local = [(check, np.searchsorted(used, idx)) for check, idx in blocks]
        jobs.append((local, used, rows))
    q = p.copy()
    statuses, iterations, residual, worlds, resolves = [], 0, 0.0, "found", None
    outcomes = _run_components([(lb, p[u], score) for lb, u, _ in jobs])
    for (_, used, rows), outcome in zip(jobs, outcomes, strict=True):
        if isinstance(outcome, _Unsolved):
            tuples = [(b, int(rows[b][r])) for b, r in outcome.candidates] if outcome.candidates else None
            raise _Unsolved(outcome.status, None, tuples, kind=outcome.kind)
        q[used], status, its, res, arbitrage, found = outcome
        if arbitrage is not None:  # (r_i, V) of the log repair with conditional fields
            resolves = (np.ones(M), 0.0, np.zeros(M, dtype=bool), 0.0) if resolves is None else resolves
            resolves[0][used], resolves[2][used] = arbitrage[0], True
            resolves = (resolves[0], resolves[1] + arbitrage[1], resolves[2], resolves[3] + arbitrage[2])
        worlds = "unknown" if "unknown" in (worlds, found) else found
        statuses.append(status)
        iterations = max(iterations, its)
        residual = max(residual, res)
    worst = next((st for st in statuses if st != "Solved"), "Solved")
    return q, worst, iterations, conditional, residual, worlds, resolves


def components(idx: list[np.ndarray], M: int) -> tuple[list[np.ndarray], int]:
    """Per block, each tuple's connected component (tuples sharing a question are connected); and their number."""
    from scipy import sparse
    from scipy.sparse.csgraph import connected_components

    sizes = [len(i) for i in idx]
    T = sum(sizes)
    tuple_of = np.repeat(np.arange(T), [i.shape[1] for i in idx for _ in range(len(i))]) if T else np.zeros(0, int)
    questions = np.concatenate([i.ravel() for i in idx]) if T else np.zeros(0, int)
    graph = sparse.coo_matrix((np.ones(len(questions)), (tuple_of, T + questions)), shape=(T + M, T + M))
    _, labels = connected_components(graph, directed=False)
    tuple_labels = labels[:T]
    _, tuple_labels = np.unique(tuple_labels, return_inverse=True)
    count = int(tuple_labels.max()) + 1 if T else 0
    return list(np.split(tuple_labels, np.cumsum(sizes)[:-1])), count


def _solve_component(blocks: list[tuple[Check, np.ndarray]], p: np.ndarray, score: Score = "brier"):
    """One connected component's repair: (q, status, iterations, residual, worlds), or the :class:`_Unsolved`
    it raised with its candidates as (block, row) pairs of ``blocks``.

    ``worlds``: whether a joint world consistent with every tuple was found (the guarantee is about those
    worlds; with none it would be empty: an :class:`_Unsolved` of kind ``no_world``) or the search ran out
    of budget (``unknown``)."""
    solved = _solve_component_qp(blocks, p, score)
    if isinstance(solved, _Unsolved):
        return solved
    found, _ = WorldSearch(blocks, len(p)).find(solved[0])
    if found == "none":
        pairs = [(b, r) for b, (_, idx) in enumerate(blocks) for r in range(len(idx))]
        return _Unsolved("no joint world", None, pairs, kind="no_world")
    return (*solved, found)


def _solve_component_qp(blocks: list[tuple[Check, np.ndarray]], p: np.ndarray, score: Score):
    M = len(p)
    if score == "log" and any((check.worlds == NONE).any() for check, idx in blocks if len(idx)):
        return _solve_log_conditional(blocks, p)
    if score == "log":
        return _solve_log(blocks, p)
    parts: list[Block] = []
    offset = M
    for check, idx in blocks:
        part = Block(check, idx.astype(np.int64), offset, np.asarray(check.worlds))
        parts.append(part)
        offset += part.size
    try:
        return (*_solve(parts, p, _conditional_questions(parts, M)), None)
    except _Unsolved as exc:
        pairs = [(b, r) for b, (_, idx) in enumerate(blocks) for r in range(len(idx))]
        if exc.involved is not None and exc.involved.any():
            return _Unsolved(exc.status, None, [t for t, hit in zip(pairs, exc.involved, strict=True) if hit])
        return _Unsolved(exc.status, None, pairs)


def _run_components(jobs: list[tuple[list, np.ndarray, Score]]) -> list:
    """Solve each component: in a pool of processes when two or more have at least :data:`PARALLEL_MIN`
    tuples (``CC_REPAIR_WORKERS`` caps the processes; 1 turns the pool off), else one after the other."""
    sizes = [sum(len(idx) for _, idx in blocks) for blocks, *_ in jobs]
    big = sum(size >= PARALLEL_MIN for size in sizes)
    workers = min(int(os.environ.get("CC_REPAIR_WORKERS") or os.cpu_count() or 1), big)
    if workers < 2:
        return [_solve_component(*job) for job in jobs]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    order = np.argsort(sizes)[::-1]  # the largest first
    results: list = [None] * len(jobs)
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {int(j): pool.submit(_solve_component, *jobs[j]) for j in order if sizes[j] >= PARALLEL_MIN}
        for j in order:
            if sizes[j] < PARALLEL_MIN:
                results[j] = _solve_component(*jobs[j])
        for j, future in futures.items():
            results[j] = future.result()
    log.info("joint repair: %d components, %d of them in %d processes", len(jobs), len(futures), workers)
    return results


def _solve_log(blocks: list[tuple[Check, np.ndarray]], p: np.ndarray):
    """The joint log repair of binary checks: the KL projection of ``p`` onto the tuples' coherent sets,
    by the augmented Lagrangian with the KL objective (:mod:`.augmented`)."""
    if os.environ.get("CC_REPAIR_SOLVER") == "clarabel":  # the reference: the exponential cone
        parts, offset = [], len(p)
        for check, idx in blocks:
            part = Block(check, idx.astype(np.int64), offset, np.asarray(check.worlds))
            parts.append(part)
            offset += part.size
        system = build(parts, len(p), None)
        x, status = solve_kl_clarabel(system, p)
        if status != "Solved":
            return _Unsolved(status, None, [(b, r) for b, (_, idx) in enumerate(blocks) for r in range(len(idx))])
        return np.clip(x[: len(p)], 0.0, 1.0), status, 1, 0.0, None
    local = [LocalBlock(idx.astype(np.int64), worlds=check.worlds.astype(float)) for check, idx in blocks if len(idx)]
    solution = AugmentedLagrangian(local, p, objective="log").solve()
    log.info(
        "joint log repair: %d rounds, %d Newton steps, incoherence %.1e, %.1f s",
        solution.rounds,
        solution.newton,
        solution.incoherence,
        solution.seconds,
    )
    if not solution.converged:
        pairs = [(b, r) for b, (_, idx) in enumerate(blocks) for r in range(len(idx))]
        return _Unsolved("the KL projection did not converge", None, pairs)
    return np.clip(solution.q, 0.0, 1.0), "Solved", 1, 0.0, None


def _solve_log_conditional(blocks: list[tuple[Check, np.ndarray]], p: np.ndarray):
    """The joint log repair with conditional fields: the graph's arbitrage prices (:mod:`.log_graph`)."""
    try:
        solution = log_graph.solve(blocks, p)
    except (log_graph.Infeasible, RuntimeError) as exc:
        return _Unsolved(str(exc), None, [(b, r) for b, (_, idx) in enumerate(blocks) for r in range(len(idx))])
    log.info("joint log repair with conditional fields: %s, arbitrage profit %.6g", solution.status, solution.value)
    return solution.q, solution.status, 1, 0.0, (solution.resolves, solution.value, solution.guaranteed)


class _Unsolved(RunFailed):
    """The inner QP was not solved: its status, and the tuples that may explain it: per tuple as built, whether
    an infeasibility certificate involves it (``involved``), or a list of (block, row) pairs (``candidates``)."""

    def __init__(
        self, status: str, involved: np.ndarray | None, candidates: list | None = None, kind: str = "unsolved"
    ) -> None:
        super().__init__(status, involved, candidates, kind)
        self.status, self.involved, self.candidates, self.kind = status, involved, candidates, kind

    def __str__(self) -> str:
        return self.status


def _explain(
    checked: list[tuple[Check, np.ndarray]], keep: list[np.ndarray], exc: _Unsolved, score: Score = "brier"
) -> ConflictingTuples:
    """The conflict behind an unsolved QP, or :class:`RepairFailed` when the tuples do not conflict."""
    kept = [(b, int(r)) for b, rows in enumerate(keep) for r in np.flatnonzero(rows)]
    candidates = exc.candidates or kept
    if exc.kind == "no_world":
        return world_conflict(checked, candidates)
    conditional = any((check.worlds == NONE).any() for check, _ in checked)
    repairs = (log_graph.feasible if score == "log" else _repairs) if conditional else None
    conflict = find_conflict(checked, candidates, exc.status, repairs)
    if conflict is None and candidates is not kept:
        conflict = find_conflict(checked, kept, exc.status, repairs)
    if conflict is None:
        raise RepairFailed(f"the joint repair's solver stopped with status {exc.status} and no conflicting tuples")
    return conflict


def _repairs(blocks: list[tuple[Check, np.ndarray]], m: int) -> bool:
    """Whether the joint repair of ``blocks`` (over ``m`` questions) succeeds: a test for conflicts."""
    try:
        _solve_kept(blocks, [np.ones(len(idx), dtype=bool) for _, idx in blocks], np.full(m, 0.5))
    except _Unsolved:
        return False
    return True


def _conditional_questions(parts: list[Block], M: int) -> np.ndarray:
    """Questions that some tuple asks as a conditional field (they may go unresolved)."""
    out = np.zeros(M, dtype=bool)
    for part in parts:
        cols = np.flatnonzero((part.worlds == NONE).any(axis=0))
        if cols.size:
            out[part.idx[:, cols].ravel()] = True
    return out


def _solve(parts: list[Block], p: np.ndarray, conditional: np.ndarray) -> tuple[np.ndarray, str, int, float]:
    """(q, status, outer iterations, the conditional values' last residual |q_J - c|)."""
    inner = _Inner(parts, p)
    if not conditional.any():
        q, status, *_ = inner.solve(None)
        return q, status, 1, 0.0
    # Outer iterations on the conditional questions' values c, from each tuple's own fixed point: the
    # map c -> _local(...) (whose fixed point is the repair), with Anderson acceleration.
    c = _start(parts, p, conditional)
    cond = np.flatnonzero(conditional)
    xs: list[np.ndarray] = []
    gs: list[np.ndarray] = []
    status, change, best, best_q, best_outer = "", np.inf, np.inf, p, 0
    for outer in range(1, _MAX_OUTER + 1):
        # Early outer iterations need no exact inner solution: its accuracy follows the conditional values'.
        q, status, _, targets = inner.solve(c, float(np.clip(0.01 * change, FEAS_TOL, _LOOSE_INNER)))
        x = c[cond]
        change = float(np.abs(q[cond] - x).max())
        log.info("joint repair: outer iteration %d, conditional values off by %.1e", outer, change)
        if change < OUTER_TOL:
            return q, status, outer, change
        if change < best:
            best, best_q, best_outer = change, q, outer
        else:  # acceleration went astray, or the QP's accuracy is reached: plain local steps again
            xs, gs = [], []
            if outer - best_outer >= _STALL:
                # the status says it; a user hears of it only when it is far from the QP's own accuracy
                if best > _FAIL:
                    raise _Unsolved(f"conditional values settled {best:.0e} from the fixed point", None)
                (log.warning if best > 1e-7 else log.info)(
                    "joint repair: conditional values settled %.1e from the fixed point", best
                )
                return best_q, f"{status} (conditional values settled to {best:.0e})", outer, best
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
    if change > _FAIL:
        raise _Unsolved(f"conditional values still moving by {change:.0e}", None)
    log.warning("joint repair: conditional values still moving by %.1e after %d outer iterations", change, outer)
    return q, status + f" (conditional values moving by {change:.1e})", outer, change


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
    """The inner QP for successive conditional values, by the solver ``CC_REPAIR_SOLVER`` names.

    ``fast`` (the default): the augmented Lagrangian of :mod:`.augmented`, warm-started from the last outer
    iteration's solution (faces, multipliers), with Clarabel taking over where it does not converge (tuples in
    conflict: Clarabel's status and certificate then say which). ``clarabel``: Clarabel alone, the reference
    the tests and the benchmark compare with. ``newton``: the active-set solver of :mod:`.active_set`
    (affine blocks only; Clarabel otherwise), kept for comparison.
    """

    def __init__(self, parts: list[Block], p: np.ndarray) -> None:
        self.parts, self.p = parts, p
        self.state: tuple | None = None
        self.solver = os.environ.get("CC_REPAIR_SOLVER", "fast") or "fast"
        if self.solver not in SOLVERS:
            raise ValueError(f"CC_REPAIR_SOLVER must be one of {', '.join(SOLVERS)}, not {self.solver!r}")
        self.alm: AugmentedLagrangian | None = None
        self.warm: Solution | None = None

    def solve(self, c: np.ndarray | None, tol: float = FEAS_TOL) -> tuple[np.ndarray, str, list, list]:
        """q, status, each block's λ (Clarabel and Newton only), each block's local target (q[idx] plus the
        tuple's normal vector; see :func:`.qp.read_solution`). ``tol``: the fast solver's accuracy."""
        if self.solver == "fast":
            found = self._fast(c, tol)
            if found is not None:
                return found
        M = len(self.p)
        system = build(self.parts, M, c)
        x = z = None
        if self.solver == "newton" and system.affine:
            x, z = self._newton(system)
        if x is None:
            x, z, status = solve_clarabel(system, self.p)
            if status != "Solved":
                _check_status(system, x, z, status)
        else:
            status = "Solved"
        lams, targets = read_solution(system, self.parts, x, z)
        return np.clip(x[:M], 0.0, 1.0), status, lams, targets

    def _fast(self, c: np.ndarray | None, tol: float) -> tuple[np.ndarray, str, list, list] | None:
        used = [i for i, part in enumerate(self.parts) if len(part.idx)]
        blocks = []
        for i in used:
            part = self.parts[i]
            if (part.worlds == NONE).any():
                blocks.append(LocalBlock(part.idx, vertices=vertices(part, c)))
            else:
                blocks.append(LocalBlock(part.idx, worlds=part.worlds.astype(float)))
        if self.alm is None:
            self.alm = AugmentedLagrangian(blocks, self.p)
        else:
            self.alm.blocks = blocks
        solution = self.alm.solve(self.warm, tol)
        log.info(
            "joint repair: augmented Lagrangian, %d rounds, %d Newton steps, incoherence %.1e, %.1f s",
            solution.rounds,
            solution.newton,
            solution.incoherence,
            solution.seconds,
        )
        if not solution.converged:
            log.info("joint repair: the augmented Lagrangian did not converge; Clarabel takes over")
            self.warm = None
            return None
        self.warm = solution
        targets: list = [None] * len(self.parts)
        for i, y in zip(used, solution.y, strict=True):
            targets[i] = np.clip(solution.q[self.parts[i].idx], 0.0, 1.0) + y
        return np.clip(solution.q, 0.0, 1.0), "Solved", [], targets

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


def _check_status(system: System, x: np.ndarray, z: np.ndarray, status: str) -> None:
    """Accept a solution Clarabel reached at reduced accuracy when it satisfies the constraints to 1e-9;
    else raise :class:`_Unsolved` with the tuples an infeasibility certificate involves."""
    if status == "AlmostSolved":
        off = max(
            float(np.abs(system.A_eq @ x - system.b_eq).max(initial=0.0)),
            float((system.A_in @ x - system.b_in).max(initial=0.0)),
        )
        if off <= 1e-9:
            log.info("joint repair: Clarabel's status AlmostSolved, constraints met to %.0e", off)
            return
    involved = None
    if status in ("PrimalInfeasible", "AlmostPrimalInfeasible"):
        involved = involved_tuples(system, z, system.n_tuples)
    raise _Unsolved(status, involved)
