"""A numeric or date forecast from yes/no answers at thresholds: how the logprob forecaster answers them.

One generated token cannot hold a distribution over a range, but it can answer "Will the answer be greater than
t?". The question is asked at ``k`` thresholds evenly spaced on its scale (rounded, worded and resolved as the
CDF_THRESHOLDS check's template makes them: :func:`consistency.generate.categorical.categorical_tuple`); one
minus each answer is the CDF at that threshold. Independent answers need not rise with t, so they are made
non-decreasing by isotonic regression (pool adjacent violators: the closest non-decreasing sequence in squared
error), and the CDF on the question's grid runs linearly (on the scale) between them: to 0 and 1 at closed
bounds, and on an open side with the slope of the nearest two thresholds, cut at 0 and 1 (mass beyond the bound).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import distributions as dist
from ..models import ForecastingQuestion, NumericForecast
from .base import ForecastError

#: Thresholds a numeric question is asked at by default.
THRESHOLDS = 7


def threshold_questions(question: ForecastingQuestion, k: int) -> list[tuple[float, ForecastingQuestion]]:
    """(threshold, yes/no question "greater than threshold") at ``k`` thresholds evenly spaced on the scale
    (a crowd forecast in the question's metadata is not looked at: it would tell the model where the crowd is)."""
    from ..checks import cdf_thresholds_check
    from ..generate.categorical import categorical_tuple, choose_thresholds

    plain = question.model_copy(update={"metadata": {}})
    at = choose_thresholds(plain, k)
    made = categorical_tuple(cdf_thresholds_check(k), plain, at=at)
    return [(t, ForecastingQuestion.model_validate(made[f"T_{j}"])) for j, t in enumerate(at, start=1)]


def isotonic(values: Sequence[float]) -> np.ndarray:
    """The non-decreasing sequence closest to ``values`` in squared error (pool adjacent violators)."""
    blocks: list[list[float]] = []  # [mean, count]
    for v in values:
        blocks.append([float(v), 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            mean, count = blocks.pop()
            prev = blocks[-1]
            prev[0] = (prev[0] * prev[1] + mean * count) / (prev[1] + count)
            prev[1] += count
    return np.concatenate([np.full(int(count), mean) for mean, count in blocks]) if blocks else np.array([])


def cdf_through_thresholds(
    question: ForecastingQuestion, answers: Sequence[tuple[float, float]], failed: Sequence[str] = ()
) -> NumericForecast:
    """The CDF through ``answers`` ((threshold, P(outcome > threshold)) pairs, thresholds increasing) on the
    question's grid; ``failed``: why other thresholds have no answer (at least two must have one)."""
    r = question.range
    assert r is not None
    if len(answers) < 2:
        why = f": {failed[0]}" if failed else ""
        raise ForecastError(f"only {len(answers)} of the threshold questions got an answer{why}")
    at = np.array([t for t, _ in answers])
    above = np.array([p for _, p in answers])
    u = np.asarray(r.location(at), dtype=float)
    c = np.clip(isotonic(1.0 - above), 0.0, 1.0)
    xs, ys = list(u), list(c)
    if r.open_lower:
        ys[0:0] = [max(0.0, c[0] - u[0] * _slope(u[0], u[1], c[0], c[1]))]
    else:
        ys[0:0] = [0.0]
    xs[0:0] = [0.0]
    if r.open_upper:
        ys.append(min(1.0, c[-1] + (1.0 - u[-1]) * _slope(u[-2], u[-1], c[-2], c[-1])))
    else:
        ys.append(1.0)
    xs.append(1.0)
    cdf = np.maximum.accumulate(np.clip(np.interp(dist.locations(), xs, ys), 0.0, 1.0))
    metadata = {"thresholds": at.tolist(), "p_above": above.tolist(), "cdf_at_thresholds": c.tolist()}
    if failed:
        metadata["failed_thresholds"] = list(failed)
    return NumericForecast(cdf=cdf.tolist(), metadata=metadata)


def _slope(u0: float, u1: float, c0: float, c1: float) -> float:
    return (c1 - c0) / (u1 - u0) if u1 > u0 else 0.0
