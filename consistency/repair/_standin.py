"""TEMPORARY stand-in for ``repair_graph`` (branch ``repairmath``), behind the agreed signature.

Repairs each block with the real :func:`repair_tuples`, then averages each question's values: not a
joint projection (and not coherent where a question is shared). Deleted when ``repairmath``'s lands.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..checks import Check
from .tuples import Score, TupleRepair, guaranteed_improvement, repair_tuples


@dataclass(frozen=True)
class GraphRepair:
    repaired: np.ndarray
    moved: float
    per_block: list[TupleRepair]
    guaranteed: float
    status: str = "stand-in"
    iterations: int = 0
    seconds: float = 0.0


def repair_graph(blocks: Sequence[tuple[Check, np.ndarray]], probs: np.ndarray, score: Score = "brier") -> GraphRepair:
    probs = np.asarray(probs, dtype=float)
    total = np.zeros_like(probs)
    count = np.zeros_like(probs)
    for check, idx in blocks:
        part = repair_tuples(check, probs[idx], score).repaired
        np.add.at(total, idx.ravel(), part.ravel())
        np.add.at(count, idx.ravel(), 1)
    repaired = np.where(count > 0, total / np.maximum(count, 1), probs)
    per_block = [
        TupleRepair(
            repaired[idx],
            ((repaired[idx] - probs[idx]) ** 2).sum(axis=1),
            guaranteed_improvement(check, probs[idx], repaired[idx], score),
            0,
        )
        for check, idx in blocks
    ]
    moved = float(((repaired - probs) ** 2).sum())
    guaranteed = float(sum(b.guaranteed.sum() for b in per_block))
    return GraphRepair(repaired, moved, per_block, guaranteed)
