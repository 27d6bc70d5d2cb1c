"""Per-tuple repair of checks with categorical fields (multiple-choice options, numeric bins).

Brier geometry: a categorical field is scored by the multi-class Brier score Σ_o (q_o - [o happened])², so with
each categorical field written as its one-hot columns (:attr:`~consistency.checks.Check.expanded_worlds`) every
field's score is a squared distance and the coherent forecasts are the convex hull of the expanded worlds. The
repair is the Euclidean projection onto it, and Pythagoras gives, in every world, an improvement of at least the
squared distance moved (as for yes/no checks, :mod:`.tuples`). When all fields are categorical and take the same
outcome in each world (NUMERIC_PARAPHRASE), the projection is the average of the distributions. PARTITION has only
yes/no fields and is repaired by :func:`~consistency.repair.tuples.repair_tuples`.

Log geometry: the repair is the arbitrage prices of :func:`~consistency.metrics.categorical.categorical_arbitrage`,
which improve the log score in every world by at least the arbitrage V.
"""

from __future__ import annotations

import numpy as np

from ..checks import Check
from ..metrics.categorical import CategoricalPlan, categorical_arbitrage, validate_columns
from .common import Score, TupleRepair, check_score
from .polytope import FixedHull

#: Worlds up to which the projection enumerates the hull's faces.
MAX_HULL_WORLDS = 12


def repair_categorical(check: Check, probs: np.ndarray, score: Score = "brier") -> TupleRepair:
    """Repair each row of ``probs`` (N, ``check.n_columns``) on its own; no model calls."""
    check_score(score)
    probs = validate_columns(check, probs)
    if score == "log":
        result = categorical_arbitrage(check, probs)
        repaired, moved, iterations = result.prices, result.violation, result.iterations
    else:
        repaired, iterations = brier_projection(check, probs), 0
        moved = ((probs - repaired) ** 2).sum(axis=1)
    return TupleRepair(repaired, moved, world_improvements(check, probs, repaired, score).min(axis=1), iterations)


def brier_projection(check: Check, probs: np.ndarray) -> np.ndarray:
    """The projection of every row onto the hull of the expanded worlds."""
    same = _same_outcomes(check)
    if same is not None:  # min Σ_i ||λ - p_i||² over the simplex: the mean, which is in it
        mean = np.mean([probs[:, cols] for cols in same], axis=0)
        out = np.empty_like(probs)
        for cols in same:
            out[:, cols] = mean
        return out
    if len(check.worlds) > MAX_HULL_WORLDS:
        raise ValueError(f"{check.name}: the Brier repair enumerates at most {MAX_HULL_WORLDS} worlds")
    return np.clip(FixedHull.of(check.expanded_worlds.astype(float)).project(probs)[0], 0.0, 1.0)


def _same_outcomes(check: Check) -> list[np.ndarray] | None:
    """Each field's columns in world order, when every field is categorical and one-to-one with the worlds."""
    if len(check.categorical) != check.n_fields:
        return None
    K = len(check.worlds)
    out = []
    for i, name in enumerate(check.fields):
        values = check.worlds[:, i].astype(np.intp)
        if check.categorical[name] != K or len(set(values.tolist())) != K:
            return None
        out.append(check.column_slices[name].start + values)
    return out


def world_improvements(check: Check, probs: np.ndarray, repaired: np.ndarray, score: Score) -> np.ndarray:
    """Loss improvement from ``probs`` to ``repaired`` in every world: shape (N, worlds)."""
    E = check.expanded_worlds.astype(float)
    if score == "brier":
        # Σ_c (p_c - e_c)² - (q_c - e_c)² = Σ p² - q² - 2 (p - q)·e over every column (a categorical field's
        # multi-class Brier score is the sum over its one-hot columns).
        return (probs**2 - repaired**2).sum(axis=1, keepdims=True) - 2.0 * (probs - repaired) @ E.T
    plan = CategoricalPlan.of(check)
    lp, lq = np.log(plan.internal(probs, 1e-3)), np.log(plan.internal(repaired, 1e-3))
    return plan.per_world(lq - lp)
