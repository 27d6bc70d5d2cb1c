"""Proper scores of multiple-choice and numeric forecasts (issue 35, item 5): hand computations, exact integrals,
the proxy scores' expectations, and errors for bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from consistency.accuracy.distribution_scores import (
    crps,
    multiclass_brier,
    multiclass_log,
    numeric_log,
    outcome_losses,
    pool,
    proxy_crps,
    proxy_multiclass_brier,
)
from consistency.accuracy.inputs import ScoreInputError
from consistency.models import ChoiceForecast, Forecast, ForecastingQuestion, NumericForecast

UNIFORM = np.linspace(0.0, 1.0, 201)
GRID = np.linspace(0.0, 1.0, 201)


def test_multiclass_scores_by_hand():
    p = [[0.2, 0.3, 0.5], [0.2, 0.3, 0.5], [1.0, 0.0, 0.0]]
    assert multiclass_brier(p, [2, 0, 1]) == pytest.approx([0.04 + 0.09 + 0.25, 0.64 + 0.09 + 0.25, 1.0 + 1.0])
    assert multiclass_log(p, [2, 0, 1]) == pytest.approx([-math.log(0.5), -math.log(0.2), -math.log(1e-3)])
    assert multiclass_log(p, [2, 0, 0], base=2) == pytest.approx([1.0, -math.log2(0.2), 0.0])
    # Two options: twice the yes/no Brier score.
    assert multiclass_brier([[0.7, 0.3]], [0]) == pytest.approx([2 * 0.3**2])
    with pytest.raises(ScoreInputError, match=r"sum to 1\.1"):
        multiclass_brier([[0.5, 0.6]], [0])
    with pytest.raises(ScoreInputError, match="option indices from 0 to 1"):
        multiclass_brier([[0.5, 0.5]], [2])


def test_numeric_log_score_by_hand():
    # Uniform over the range: density 1 per unit location, score 0 inside.
    assert numeric_log([UNIFORM], [0.3]) == pytest.approx([0.0], abs=1e-12)
    # Half the mass beyond an open upper bound, uniform inside: density 1/2; outside, the mass 1/2.
    half = UNIFORM / 2
    assert numeric_log([half, half], [0.3, 1.4]) == pytest.approx([math.log(2), math.log(2)])
    # A closed upper bound: an outcome beyond it is scored in the last cell.
    ramp = np.r_[np.zeros(100), np.linspace(0, 1, 101)]  # all mass on the upper half: density 2 there
    assert numeric_log([ramp], [1.7], open_upper=False) == pytest.approx([-math.log(2)])
    # No mass where the outcome fell: clipped at eps (density 10⁻³).
    assert numeric_log([ramp], [0.2]) == pytest.approx([-math.log(1e-3)])
    # Out below an open lower bound with mass 0.25 there.
    below = 0.25 + 0.75 * UNIFORM
    assert numeric_log([below], [-0.5], open_lower=True) == pytest.approx([-math.log(0.25)])


def _exact_crps(cdf: np.ndarray, y: float) -> float:
    """∫ (F - H)² with every piece a quadratic: Simpson's rule between the grid points and y is exact."""
    knots = np.unique(np.r_[GRID, np.clip(y, 0, 1)])
    a, b = knots[:-1], knots[1:]
    m = (a + b) / 2

    def g(t):
        return (np.interp(t, GRID, cdf) - (t >= y)) ** 2

    gm = g(m)
    ga = (np.interp(a, GRID, cdf) - (m >= y)) ** 2  # the step's value inside the piece, at its ends
    gb = (np.interp(b, GRID, cdf) - (m >= y)) ** 2
    return float(((b - a) * (ga + 4 * gm + gb) / 6).sum())


def test_crps_by_hand_and_exactly():
    assert crps([UNIFORM, UNIFORM, UNIFORM], [0.5, 0.0, 1.0]) == pytest.approx([1 / 12, 1 / 3, 1 / 3], abs=1e-15)
    assert crps([UNIFORM], [-3.0]) == pytest.approx(crps([UNIFORM], [0.0]))  # beyond a bound: at the bound
    rng = np.random.default_rng(0)
    cdfs = np.sort(rng.random((20, 201)), axis=1)
    cdfs[:5, 0], cdfs[:5, -1] = 0.0, 1.0
    ys = np.r_[rng.random(15), GRID[37], 0.0, 1.0, 0.5, 0.123456]
    got = crps(cdfs, ys)
    for cdf, y, value in zip(cdfs, ys, got, strict=True):
        assert value == pytest.approx(_exact_crps(cdf, y), abs=1e-14)


def test_proxy_scores_are_expected_scores_minus_a_constant():
    rng = np.random.default_rng(1)
    a = rng.dirichlet(np.ones(4))
    for p in rng.dirichlet(np.ones(4), 5):
        expected = sum(a[o] * multiclass_brier([p], [o])[0] for o in range(4))
        assert expected - proxy_multiclass_brier(p, a) == pytest.approx(1 - (a * a).sum())
    # Numeric: E_{y ~ A}[CRPS(F, y)] = ∫ (F - A)² + ∫ A (1 - A). Inside a cell y is uniform and CRPS(F, y) is
    # quadratic in y, so two Gauss points per cell integrate it exactly; A (1 - A) is quadratic too (Simpson).
    A = np.r_[0.0, np.sort(rng.random(199)), 1.0]
    F = np.r_[0.0, np.sort(rng.random(199)), 1.0]
    nodes = 0.5 + np.array([-1, 1]) / (2 * math.sqrt(3))
    ys = ((np.arange(200)[:, None] + nodes[None]) / 200).ravel()
    mass = np.repeat(np.diff(A) / 2, 2)
    expected = float((crps(np.tile(F, (ys.size, 1)), ys) * mass).sum())
    mid = (A[:-1] + A[1:]) / 2
    spread = float(((A[:-1] * (1 - A[:-1]) + 4 * mid * (1 - mid) + A[1:] * (1 - A[1:])) / 6).sum() / 200)
    assert expected - proxy_crps([F], [A])[0] == pytest.approx(spread, abs=1e-14)
    assert proxy_crps([A], [A])[0] == 0.0 and proxy_crps([F], [A])[0] > 0


def test_pooling():
    X = np.array([[[0.2, 0.8], [0.5, 0.5]], [[0.4, 0.6], [np.nan, np.nan]]])  # forecaster 2 skipped question 2
    assert pool(X) == pytest.approx(np.array([[0.3, 0.7], [0.5, 0.5]]))
    g = np.sqrt(np.array([0.2 * 0.4, 0.8 * 0.6]))
    assert pool(X, "geometric")[0] == pytest.approx(g / g.sum())
    loo = pool(X, loo=True)
    assert loo[0, 0] == pytest.approx([0.4, 0.6]) and loo[1, 0] == pytest.approx([0.2, 0.8])
    assert np.isnan(loo[0, 1]).all()  # nobody else forecast question 2


def test_outcome_losses_of_each_type():
    mc = ForecastingQuestion(title="Which?", question_type="multiple_choice", options=["A", "B", "C"], resolution="C")
    losses = outcome_losses(mc, ChoiceForecast(probs=[0.2, 0.3, 0.5]))
    assert losses == pytest.approx({"brier": 0.38, "log": -math.log(0.5)})
    q = ForecastingQuestion(title="How many?", question_type="numeric", range={"lower": 0, "upper": 10}, resolution=5)
    losses = outcome_losses(q, NumericForecast(cdf=UNIFORM.tolist()))
    assert losses == pytest.approx({"log": 0.0, "crps": 1 / 12}, abs=1e-12)
    b = ForecastingQuestion(title="Will it?", resolution=True)
    assert outcome_losses(b, Forecast(prob=0.8)) == pytest.approx({"brier": 0.04, "log": -math.log(0.8)})
    assert outcome_losses(ForecastingQuestion(title="Open?"), Forecast(prob=0.5)) is None


def test_bad_cdfs_are_refused():
    with pytest.raises(ScoreInputError, match="shape"):
        crps([[0.0, 1.0]], [0.5])
    falling = UNIFORM.copy()
    falling[50] = 0.0
    with pytest.raises(ScoreInputError, match="CDF 1 is not a CDF"):
        crps([UNIFORM, falling], [0.5, 0.5])
    with pytest.raises(ScoreInputError, match="no location"):
        numeric_log([UNIFORM], [float("nan")])
