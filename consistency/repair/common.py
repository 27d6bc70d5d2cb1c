"""What every per-tuple repair returns and the scores it knows: shared by the yes/no (:mod:`.tuples`) and the
categorical (:mod:`.categorical`) repairs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

Score = Literal["brier", "log"]
SCORES = ("brier", "log")


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


def check_score(score: str) -> None:
    if score not in SCORES:
        raise ValueError(f"score must be one of {', '.join(SCORES)}, got {score!r}")
