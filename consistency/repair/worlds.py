"""Whether some joint world is consistent with every tuple: the worlds the joint repair's guarantee is about.

A joint world gives every question a resolution (true, false, or none for a conditional question whose
condition failed) such that each tuple's fields resolve as one of its check's worlds. Tuples can admit
coherent forecasts and still no such world: "P" paraphrased as "Q" and negated as "Q" holds only at
P = Q = 1/2. The joint repair then succeeds, but its guarantee ("in every world consistent with all the
tuples") would be about no world at all.

The search is constraint propagation with backtracking. Each question keeps the set of resolutions still
possible (a 3-bit mask); each tuple the set of its check's worlds its questions still allow; a tuple's
allowed worlds restrict its questions and back, through the questions shared, until nothing changes
(vectorised over the tuples a change touches). Then a question with several resolutions left is given
one (the repaired forecast's nearer end first) and the search goes on, undoing on a contradiction.
Graphs built from base events resolve almost entirely by propagation; the search has a budget of choices
and reports ``unknown`` when it runs out.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..checks.check import NONE, Check

_BITS = {1: 1, 0: 2, NONE: 4}  # resolution -> bit of the question's mask
_ALL = 7
NODES = 20_000  # choices before the search reports unknown
SECONDS = 20.0


@dataclass
class _Block:
    worlds: np.ndarray  # (k, n)
    idx: np.ndarray  # (N, n) questions
    first: int  # global number of its first tuple
    rows_for: np.ndarray  # (n, 8): per field and question mask, the worlds (bit mask) that mask allows
    field_mask: np.ndarray  # (n, 2^k): per field and allowed worlds, the question mask they leave
    start: np.ndarray  # (N,) worlds allowed by the tuple's own repeated questions


def _block(check: Check, idx: np.ndarray, first: int) -> _Block:
    W = np.asarray(check.worlds)
    k, n = W.shape
    rows_for = np.zeros((n, 8), dtype=np.int64)
    for f in range(n):
        for mask in range(8):
            rows_for[f, mask] = sum(1 << r for r in range(k) if _BITS[int(W[r, f])] & mask)
    field_mask = np.zeros((n, 1 << k), dtype=np.uint8)
    for f in range(n):
        for allowed in range(1 << k):
            field_mask[f, allowed] = np.bitwise_or.reduce(
                [_BITS[int(W[r, f])] for r in range(k) if allowed >> r & 1] or [0]
            )
    start = np.full(len(idx), (1 << k) - 1, dtype=np.int64)
    for f in range(n):  # a question twice in one tuple must resolve alike in both places
        for g in range(f + 1, n):
            same = idx[:, f] == idx[:, g]
            if same.any():
                alike = sum(1 << r for r in range(k) if W[r, f] == W[r, g])
                start[same] &= alike
    return _Block(W, idx, first, rows_for, field_mask, start)


class WorldSearch:
    """A joint world for ``blocks`` over ``M`` questions, if one exists: :meth:`find`."""

    def __init__(self, blocks: Sequence[tuple[Check, np.ndarray]], M: int) -> None:
        self.blocks, first = [], 0
        for check, idx in blocks:
            idx = np.asarray(idx, dtype=np.int64)
            self.blocks.append(_block(check, idx, first))
            first += len(idx)
        self.M = M
        owners = [np.repeat(b.first + np.arange(len(b.idx)), b.idx.shape[1]) for b in self.blocks]
        questions = np.concatenate([b.idx.ravel() for b in self.blocks]) if self.blocks else np.zeros(0, int)
        owners = np.concatenate(owners) if owners else np.zeros(0, int)
        order = np.argsort(questions, kind="stable")
        self.occ_tuples = owners[order]
        self.occ_start = np.searchsorted(questions[order], np.arange(M + 1))
        self.block_of = np.repeat(np.arange(len(self.blocks)), [len(b.idx) for b in self.blocks])
        self.used = np.zeros(M, dtype=bool)
        self.used[questions] = True

    def _tuples_of(self, questions: np.ndarray) -> np.ndarray:
        starts, ends = self.occ_start[questions], self.occ_start[questions + 1]
        if not len(questions):
            return np.zeros(0, dtype=np.int64)
        take = np.concatenate([self.occ_tuples[s:e] for s, e in zip(starts, ends, strict=True)])
        return np.unique(take)

    def _propagate(self, dom: np.ndarray, tuples: np.ndarray, trail: list) -> bool:
        """Restrict ``dom`` to a fixed point from ``tuples``; False on a contradiction. Changes go on ``trail``."""
        while tuples.size:
            changed: list[np.ndarray] = []
            for b_i in np.unique(self.block_of[tuples]):
                b = self.blocks[b_i]
                rows = tuples[self.block_of[tuples] == b_i] - b.first
                idx = b.idx[rows]
                allowed = b.start[rows].copy()
                for f in range(idx.shape[1]):
                    allowed &= b.rows_for[f][dom[idx[:, f]]]
                if (allowed == 0).any():
                    return False
                for f in range(idx.shape[1]):
                    new = dom[idx[:, f]] & b.field_mask[f][allowed]
                    shrink = new != dom[idx[:, f]]
                    if shrink.any():
                        q = idx[shrink, f]
                        trail.append((q, dom[q].copy()))
                        np.bitwise_and.at(dom, q, new[shrink])
                        if (dom[q] == 0).any():
                            return False
                        changed.append(q)
            tuples = self._tuples_of(np.unique(np.concatenate(changed))) if changed else np.zeros(0, dtype=np.int64)
        return True

    def find(
        self, hint: np.ndarray | None = None, nodes: int = NODES, seconds: float = SECONDS
    ) -> tuple[str, np.ndarray | None]:
        """("found", resolutions per question: 1, 0, -1; -2 for questions in no tuple), ("none", None), or
        ("unknown", None) when the budget ran out."""
        dom = np.where(self.used, _ALL, 0).astype(np.uint8)
        trail: list = []
        every = np.arange(sum(len(b.idx) for b in self.blocks))
        if not self._propagate(dom, every, trail):
            return "none", None
        # Only questions in several places need choosing: once they are settled, each tuple's own questions
        # take any world the tuple still allows (no other tuple sees them).
        counts = np.diff(self.occ_start)
        order = np.flatnonzero(counts >= 2)
        if hint is not None:  # the surest questions first
            order = order[np.argsort(-np.abs(hint[order] - 0.5), kind="stable")]
        stack: list = []  # (position in order, values left to try, trail length)
        pos, spent, begun = 0, 0, time.perf_counter()
        while True:
            while pos < len(order) and dom[order[pos]] in (1, 2, 4):
                pos += 1
            if pos == len(order):
                return "found", self._complete(dom)
            q = order[pos]
            prefer = [1, 0] if hint is None or hint[q] >= 0.5 else [0, 1]
            values = [v for v in [*prefer, NONE] if dom[q] & _BITS[v]]
            stack.append((pos, values, len(trail)))
            while True:
                if spent >= nodes or time.perf_counter() - begun > seconds:
                    return "unknown", None
                top_pos, left, mark = stack[-1]
                self._undo(dom, trail, mark)
                if not left:
                    stack.pop()
                    if not stack:
                        return "none", None
                    continue
                value = left.pop(0)
                spent += 1
                q = order[top_pos]
                trail.append((np.array([q]), dom[[q]].copy()))
                dom[q] = _BITS[value]
                if self._propagate(dom, self._tuples_of(np.array([q])), trail):
                    pos = top_pos + 1
                    break

    def _complete(self, dom: np.ndarray) -> np.ndarray:
        """The world: shared questions as settled; each tuple's own questions from its first allowed world."""
        dom = dom.copy()
        for b in self.blocks:
            allowed = b.start.copy()
            for f in range(b.idx.shape[1]):
                allowed &= b.rows_for[f][dom[b.idx[:, f]]]
            first = np.argmax((allowed[:, None] >> np.arange(len(b.worlds))[None]) & 1, axis=1)
            for f in range(b.idx.shape[1]):
                dom[b.idx[:, f]] = np.array([_BITS[int(v)] for v in b.worlds[:, f]], dtype=np.uint8)[first]
        world = np.full(self.M, -2, dtype=np.int64)
        for value, bit in _BITS.items():
            world[dom == bit] = value
        return world

    @staticmethod
    def _undo(dom: np.ndarray, trail: list, mark: int) -> None:
        while len(trail) > mark:
            q, old = trail.pop()
            dom[q[::-1]] = old[::-1]  # repeated questions: the oldest value wins


def world_exists(blocks: Sequence[tuple[Check, np.ndarray]], M: int, hint: np.ndarray | None = None) -> str:
    """ "found", "none" or "unknown" (see :meth:`WorldSearch.find`)."""
    return WorldSearch(blocks, M).find(hint)[0]
