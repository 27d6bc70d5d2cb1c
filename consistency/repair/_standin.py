"""TEMPORARY stand-in for the repair math (branch ``repairmath``), behind the agreed signatures.

Per-tuple repair is the log-geometry repair that already exists (the arbitrage prices); the joint
"repair" averages each question's per-tuple values. Deleted when ``repairmath`` is merged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..checks import Check
from ..metrics import arbitrage
from ..metrics.arbitrage import clip_forecasts

Score = Literal["brier", "log"]


@dataclass(frozen=True)
class TupleRepair:
    repaired: np.ndarray
    moved: np.ndarray
    guaranteed: np.ndarray
    iterations: int = 0


@dataclass(frozen=True)
class GraphRepair:
    repaired: np.ndarray
    moved: float
    per_block: list[TupleRepair]
    guaranteed: float
    status: str = "stand-in"
    iterations: int = 0
    seconds: float = 0.0


def _loss(p: np.ndarray, world: np.ndarray, score: Score) -> np.ndarray:
    resolves = world >= 0
    o = (world == 1).astype(float)
    if score == "brier":
        per = (p - o) ** 2
    else:
        c = clip_forecasts(p)
        per = -np.log(np.where(o == 1, c, 1 - c))
    return np.where(resolves, per, 0.0).sum(axis=-1)


def guaranteed_improvement(check: Check, probs: np.ndarray, repaired: np.ndarray, score: Score) -> np.ndarray:
    gains = [_loss(probs, w, score) - _loss(repaired, w, score) for w in check.worlds]
    return np.min(np.stack(gains), axis=0)


def repair_tuples(check: Check, probs: np.ndarray, score: Score = "brier") -> TupleRepair:
    probs = np.asarray(probs, dtype=float).reshape(-1, check.n_fields)
    repaired = arbitrage(probs, check.worlds).prices if len(probs) else probs.copy()
    moved = ((repaired - probs) ** 2).sum(axis=1)
    return TupleRepair(repaired, moved, guaranteed_improvement(check, probs, repaired, score))


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
        )
        for check, idx in blocks
    ]
    moved = float(((repaired - probs) ** 2).sum())
    guaranteed = float(sum(b.guaranteed.sum() for b in per_block))
    return GraphRepair(repaired, moved, per_block, guaranteed)
