"""Tuples that no forecasts satisfy together: the joint repair's answer when there is nothing to project onto.

Tuples contradict each other when the text of one question is reused in incompatible roles (a question
that is P in one tuple and "not P" of itself in another, say). Their coherent sets then have no common
point and the joint repair has no solution: any number a solver returns is meaningless, and so is a
guarantee "in every world consistent with all tuples" (there is none). This module names a small set
of such tuples, an *irreducible* one: the set has no coherent forecasts, while every proper subset has
some. It is found by a deletion filter (drop a tuple whenever the rest still conflict, first in
halving chunks, then one by one) started from the tuples the solver's infeasibility certificate
involves (the support of its Farkas vector) where that alone conflicts.

Feasibility of a set of tuples is decided exactly for binary checks: a linear program over the hulls
of their worlds (Clarabel's infeasibility certificate). For a conditional field the coherent set is not
convex; its hull is relaxed to the worlds with the unresolved field set to both 0 and 1. A relaxed
conflict is certain (the relaxation contains every coherent forecast). When only the coherent sets
conflict, the joint repair itself is the test, each proper subset having been repaired (so it is
certainly coherent) and the set having failed to: ``certain`` says which.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..checks.check import NONE, Check
from ..errors import RunFailed

log = logging.getLogger(__name__)

_MAX_TEST = 4000  # tuples a repair-based test (conditional conflicts) is tried on


class ConflictingTuples(RunFailed, ValueError):
    """No forecasts satisfy these tuples together; ``tuples``: (block, row) pairs, an irreducible set.

    ``certain``: the conflict is proved (a linear program's infeasibility certificate); otherwise the joint
    repair failed on the set and succeeded on each proper subset. ``status``: the solver's status that
    revealed it.
    """

    def __init__(self, tuples: list[tuple[int, int]], status: str, certain: bool, kind: str = "infeasible") -> None:
        self.tuples, self.status, self.certain, self.kind = tuples, status, certain, kind
        super().__init__(f"{summary(len(tuples), kind, certain)}: {', '.join(f'block {b} row {r}' for b, r in tuples)}")


def reason(kind: str, certain: bool) -> str:
    """Why a conflicting set conflicts, in a few words."""
    if kind == "no_world":
        return "no world resolves them all as their checks allow; coherent forecasts exist only in between"
    return "no forecasts satisfy them together" if certain else "the repair found no forecasts satisfying them"


def summary(n: int, kind: str, certain: bool) -> str:
    """One sentence on an irreducible conflicting set of ``n`` tuples (without the tuples)."""
    if n == 1:
        return f"a tuple contradicts itself ({reason(kind, certain)})"
    rest = "have a world where all resolve as their checks allow" if kind == "no_world" else "can be made coherent"
    return f"{n} tuples contradict each other ({reason(kind, certain)}; any {n - 1} of them {rest})"


class RepairFailed(RunFailed, ValueError):
    """The solver stopped without a solution although the tuples are not in conflict (its status says why)."""

    heading = "repair failed"  # how ``cc`` heads its sentence


@dataclass(frozen=True)
class Subgraph:
    """The rows of each block that a test considers."""

    blocks: Sequence[tuple[Check, np.ndarray]]

    def select(self, members: Sequence[tuple[int, int]]) -> tuple[list[tuple[Check, np.ndarray]], int]:
        """The blocks restricted to ``members``, questions renumbered 0..m-1; and m."""
        rows: dict[int, list[int]] = {}
        for b, r in members:
            rows.setdefault(b, []).append(r)
        chosen = [(self.blocks[b][0], np.asarray(self.blocks[b][1])[sorted(rs)]) for b, rs in sorted(rows.items())]
        used = np.unique(np.concatenate([idx.ravel() for _, idx in chosen])) if chosen else np.zeros(0, int)
        renumber = {int(q): i for i, q in enumerate(used)}
        remapped = [(check, np.vectorize(renumber.__getitem__, otypes=[np.int64])(idx)) for check, idx in chosen]
        return remapped, len(used)


def relaxed_worlds(worlds: np.ndarray) -> np.ndarray:
    """The worlds with every unresolved field set to 0 and to 1 (all combinations): a convex relaxation."""
    out = set()
    for world in np.asarray(worlds):
        free = np.flatnonzero(world == NONE)
        for values in itertools.product((0, 1), repeat=len(free)):
            w = world.copy()
            w[free] = values
            out.add(tuple(int(v) for v in w))
    return np.array(sorted(out), dtype=np.int8)


def linear_conflict(blocks: Sequence[tuple[Check, np.ndarray]], m: int) -> tuple[bool, np.ndarray | None]:
    """Whether the (relaxed) hulls of ``blocks`` over ``m`` questions have no common point, and per tuple
    (in block order) whether the infeasibility certificate involves it (None when there is no certificate)."""
    from .qp import Block, build, involved_tuples, solve_clarabel

    parts, offset = [], m
    for check, idx in blocks:
        part = Block(check, np.asarray(idx, dtype=np.int64), offset, relaxed_worlds(check.worlds))
        parts.append(part)
        offset += part.size
    if not any(len(part.idx) for part in parts):
        return False, None
    system = build(parts, m, None)
    _, z, status = solve_clarabel(system, np.full(m, 0.5), tol=1e-9)
    if status not in ("PrimalInfeasible", "AlmostPrimalInfeasible"):
        return False, None
    return True, involved_tuples(system, z, sum(len(part.idx) for part in parts))


def irreducible(members: list, conflicting: Callable[[list], bool]) -> list:
    """A subset of ``members`` (which conflict) that conflicts while each of its proper subsets does not.

    The deletion filter: a chunk is dropped whenever the rest still conflicts; chunks halve down to single
    tuples, and the last pass over single tuples makes the result irreducible (feasibility is monotone:
    a subset of a feasible set is feasible).
    """
    keep = list(members)
    chunk = max(len(keep) // 2, 1)
    while True:
        i = 0
        while i < len(keep) and len(keep) > 1:
            rest = keep[:i] + keep[i + chunk :]
            if rest and conflicting(rest):
                keep = rest
            else:
                i += chunk
        if chunk == 1:
            return keep
        chunk = max(chunk // 2, 1)


def world_conflict(blocks: Sequence[tuple[Check, np.ndarray]], candidates: list[tuple[int, int]]) -> ConflictingTuples:
    """An irreducible subset of ``candidates`` that no joint world satisfies (each smaller one has a world)."""
    from .worlds import WorldSearch

    graph = Subgraph(blocks)

    def none(members: list) -> bool:
        return WorldSearch(*graph.select(members)).find()[0] == "none"

    return ConflictingTuples(irreducible(sorted(candidates), none), "no joint world", certain=True, kind="no_world")


def find_conflict(
    blocks: Sequence[tuple[Check, np.ndarray]],
    candidates: list[tuple[int, int]],
    status: str,
    repairs: Callable[[list[tuple[Check, np.ndarray]], int], bool] | None = None,
) -> ConflictingTuples | None:
    """An irreducible conflicting subset of ``candidates`` ((block, row) pairs), or None if they do not conflict.

    ``repairs(blocks, m)``: whether the joint repair succeeds on a set (the test for conflicts of the
    conditional fields' coherent sets, which the linear relaxation does not see); None: linear tests only.
    """
    graph = Subgraph(blocks)

    def linear(members: list) -> bool:
        return linear_conflict(*graph.select(members))[0]

    found, involved = linear_conflict(*graph.select(candidates))
    if found:
        ordered = sorted(candidates)
        if involved is not None and involved.any() and not involved.all():
            # The certificate's support, in the order select() lays tuples out (by block, then row).
            support = [t for t, hit in zip(ordered, involved, strict=True) if hit]
            if linear(support):
                ordered = support
        return ConflictingTuples(irreducible(ordered, linear), status, certain=True)
    if repairs is None or len(candidates) > _MAX_TEST:
        return None

    def fails(members: list) -> bool:
        return not repairs(*graph.select(members))

    if not fails(sorted(candidates)):
        return None
    return ConflictingTuples(irreducible(sorted(candidates), fails), status, certain=False)
