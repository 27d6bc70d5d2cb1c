"""Consistency versus accuracy: correlations and their bootstrap intervals."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from consistency.accuracy.inputs import ScoreInputError
from consistency.accuracy.versus import consistency_vs_brier, correlate, pearson_rows


def test_pearson_matches_scipy():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=50), rng.normal(size=50)
    assert pearson_rows(x[None], y[None])[0] == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-12)


def test_interval_brackets_the_estimate_and_shrinks_with_n():
    rng = np.random.default_rng(1)
    small = correlate(*(lambda x: (x, x + rng.normal(size=20)))(rng.normal(size=20)))
    x = rng.normal(size=2000)
    large = correlate(x, x + rng.normal(size=2000))
    for c in (small, large):
        assert c.low <= c.r <= c.high
    assert (large.high - large.low) < (small.high - small.low)
    assert large.r == pytest.approx(1 / np.sqrt(2), abs=0.05)


def test_consistency_vs_brier_per_check_and_aggregate():
    rng = np.random.default_rng(2)
    skill = rng.uniform(0, 1, 12)
    brier = {f"f{i}": 0.1 + 0.1 * s for i, s in enumerate(skill)}
    violations = {
        f"f{i}": {"COND": 0.02 + 0.05 * s + rng.normal(0, 0.002), "NEGATION": rng.uniform(0, 0.1)}
        for i, s in enumerate(skill)
    }
    brier["bad"] = 0.4  # worse than always-0.5: excluded by default
    violations["bad"] = {"COND": 0.0, "NEGATION": 0.0}
    table = consistency_vs_brier(violations, brier)
    assert table["COND"].n == 12 and table["COND"].r > 0.95
    assert abs(table["NEGATION"].r) < 0.8
    assert set(table) == {"COND", "NEGATION", "aggregate"}
    with_bad = consistency_vs_brier(violations, brier, max_brier=None)
    assert with_bad["COND"].n == 13


def test_too_few_forecasters_is_a_clear_error():
    with pytest.raises(ScoreInputError, match="need at least 3 forecasters"):
        consistency_vs_brier({"a": {"COND": 0.1}, "b": {"COND": 0.2}}, {"a": 0.2, "b": 0.1})
    assert np.isnan(correlate([1, 2], [2, 1]).r)
