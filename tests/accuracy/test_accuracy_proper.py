"""Proper scores and calibration: textbook values, the Murphy identity, ECE, and the paper's stored scores.

The paper's ground-truth files (when ../shared/reference-data is present) store Brier = (p - y)² and a
base-2 log score per question. Its summary uses other conventions, reproduced here only to pin them down:
bins are the forecasts' nearest "anchor" in [.01, .03, .05, .1, .2, ..., .9, .95, .97, .99];
``calibration_error`` is the unweighted mean of |frequency - mean forecast| over non-empty bins; and the
decomposition's ``reliability`` uses the last forecast of the file instead of each bin's mean forecast.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from consistency.accuracy.inputs import ScoreInputError
from consistency.accuracy.proper import (
    absolute_error,
    brier,
    calibration_table,
    expected_calibration_error,
    log_loss,
    mean_score,
    murphy_decomposition,
    zero_one,
)
from tests.support.reference import GROUND_TRUTH, needs_reference

P = [0.0, 0.2, 0.5, 0.7, 1.0, 0.9]
Y = [1, 0, 1, "yes", True, "no"]


def random_sample(seed: int, n: int = 500, distinct: int | None = 12):
    """Forecasts on a coarse grid (so exact bins hold several forecasts), outcomes and weights."""
    rng = np.random.default_rng(seed)
    p = rng.integers(0, distinct + 1, n) / distinct if distinct else rng.random(n)
    y = (rng.random(n) < np.clip(p + rng.normal(0, 0.15, n), 0, 1)).astype(int)
    return p, y, rng.exponential(1.0, n)


# --- losses --------------------------------------------------------------------------------------


def test_losses_match_textbook_formulas():
    np.testing.assert_allclose(brier(P, Y), [1.0, 0.04, 0.25, 0.09, 0.0, 0.81])
    np.testing.assert_allclose(absolute_error(P, Y), [1.0, 0.2, 0.5, 0.3, 0.0, 0.9])
    np.testing.assert_allclose(
        log_loss(P, Y),
        [-math.log(1e-3), -math.log(0.8), math.log(2), -math.log(0.7), -math.log(1 - 1e-3), -math.log(0.1)],
    )
    np.testing.assert_allclose(log_loss([0.25], [1], base=2), [2.0])
    np.testing.assert_allclose(zero_one(P, Y), [1.0, 0.0, 0.5, 0.0, 0.0, 1.0])


def test_log_loss_clips_at_eps():
    assert log_loss([0.0], [1], eps=0.01)[0] == pytest.approx(-math.log(0.01))
    assert log_loss([1e-6], [1], eps=0.01)[0] == log_loss([0.01], [1], eps=0.01)[0]
    assert log_loss([1.0], [1], eps=0.01)[0] == pytest.approx(-math.log(0.99))
    assert log_loss([0.5], [1], eps=0.01)[0] == pytest.approx(math.log(2))  # inside [eps, 1-eps]: untouched
    assert np.isinf(log_loss([0.0], [1], eps=0.0)[0])
    with pytest.raises(ScoreInputError, match="eps"):
        log_loss([0.5], [1], eps=0.5)


def test_zero_one_counts_ties_as_half_for_either_outcome():
    np.testing.assert_array_equal(zero_one([0.5, 0.5], [0, 1]), [0.5, 0.5])
    np.testing.assert_array_equal(zero_one([0.5000001, 0.4999999], [0, 1]), [1.0, 1.0])


def test_losses_keep_shape():
    p = np.array([[0.1, 0.9], [0.4, 0.6]])
    assert brier(p, [[0, 1], [1, 0]]).shape == (2, 2)
    assert brier(0.3, 1).shape == ()


def test_mean_score_weights():
    assert mean_score([1.0, 0.0, 0.5]) == pytest.approx(0.5)
    assert mean_score([1.0, 0.0], weights=[3, 1]) == pytest.approx(0.75)
    with pytest.raises(ScoreInputError, match="NaN at positions \\[1\\]"):
        mean_score([0.1, float("nan")])
    with pytest.raises(ScoreInputError, match=r"shape \(2,\), got \(3,\)"):
        mean_score([0.1, 0.2], weights=[1, 1, 1])


# --- calibration table and ECE -------------------------------------------------------------------


def test_calibration_table_bins_edges_and_empty_bins():
    p = [0.0, 0.05, 0.1, 0.3, 0.3, 0.95, 1.0]
    y = [0, 0, 1, 1, 0, 1, 1]
    w = [1, 1, 1, 3, 1, 1, 1]
    t = calibration_table(p, y, bins=10, weights=w)
    np.testing.assert_allclose(t.edges, np.arange(11) / 10)
    np.testing.assert_array_equal(t.count, [2, 1, 0, 2, 0, 0, 0, 0, 0, 2])  # 0.3 in [0.3, 0.4), 1.0 in the last
    np.testing.assert_allclose(t.weight, [2, 1, 0, 4, 0, 0, 0, 0, 0, 2])
    np.testing.assert_allclose(t.mean_forecast[[0, 1, 3, 9]], [0.025, 0.1, 0.3, 0.975])
    np.testing.assert_allclose(t.frequency[[0, 1, 3, 9]], [0.0, 1.0, 0.75, 1.0])
    assert np.isnan(t.mean_forecast[2]) and np.isnan(t.frequency[2])
    assert t.n_bins == 10

    exact = calibration_table(p, y, bins=None)
    assert exact.edges is None
    np.testing.assert_allclose(exact.mean_forecast, [0.0, 0.05, 0.1, 0.3, 0.95, 1.0])
    np.testing.assert_array_equal(exact.count, [1, 1, 1, 2, 1, 1])


def test_ece_by_hand():
    # bin [0, .5): forecasts .2/.2, outcomes 1/0 -> gap .3; bin [.5, 1]: .8, outcome 1 -> gap .2
    assert expected_calibration_error([0.2, 0.2, 0.8], [1, 0, 1], bins=2) == pytest.approx((2 * 0.3 + 0.2) / 3)
    assert expected_calibration_error([0.2, 0.2, 0.8], [1, 0, 1], bins=2, weights=[1, 1, 2]) == pytest.approx(
        (2 * 0.3 + 2 * 0.2) / 4
    )


def test_ece_small_for_calibrated_large_for_miscalibrated():
    rng = np.random.default_rng(0)
    p = rng.random(200_000)
    y = rng.random(p.size) < p
    assert expected_calibration_error(p, y) < 0.01
    overconfident = np.clip(0.5 + 1.8 * (p - 0.5), 0, 1)  # same outcomes, forecasts pushed to the extremes
    assert expected_calibration_error(overconfident, y) > 0.1
    assert expected_calibration_error(np.full(p.size, 0.9), y) == pytest.approx(0.4, abs=0.01)


# --- Murphy decomposition ------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_murphy_identity_exact_with_exact_bins(seed, weighted):
    p, y, w = random_sample(seed)
    w = w if weighted else None
    m = murphy_decomposition(p, y, weights=w)
    assert m.brier == pytest.approx(mean_score(brier(p, y), w), abs=1e-12)
    assert m.reliability >= 0 and m.resolution >= 0


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.lists(st.tuples(st.integers(0, 20), st.booleans(), st.floats(0.01, 10)), min_size=1, max_size=60),
)
def test_murphy_identity_exact_hypothesis(rows):
    p = np.array([r[0] / 20 for r in rows])
    y = np.array([r[1] for r in rows])
    w = np.array([r[2] for r in rows])
    assert murphy_decomposition(p, y, weights=w).brier == pytest.approx(mean_score(brier(p, y), w), abs=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_murphy_with_ten_bins_misses_exactly_the_within_bin_terms(weighted):
    p, y, w = random_sample(4, distinct=None)  # continuous forecasts: many per bin
    w = w if weighted else np.ones(p.size)
    m = murphy_decomposition(p, y, bins=10, weights=w)
    mean_brier = mean_score(brier(p, y), w)
    assert abs(m.brier - mean_brier) > 1e-6  # not exact (calibrated forecasts: the within-bin terms nearly cancel)

    t = calibration_table(p, y, bins=10, weights=w)
    b = np.clip(np.searchsorted(t.edges, p, side="right") - 1, 0, 9)
    dp, dy = p - t.mean_forecast[b], y - t.frequency[b]
    within_variance = np.sum(w * dp**2) / w.sum()
    within_covariance = np.sum(w * dp * dy) / w.sum()
    assert within_variance > 1e-4
    assert m.brier + within_variance - 2 * within_covariance == pytest.approx(mean_brier, abs=1e-12)


def test_murphy_uncertainty_is_base_rate_variance():
    m = murphy_decomposition([0.5, 0.5, 0.5, 0.5], [1, 0, 0, 0])
    assert (m.reliability, m.resolution, m.uncertainty) == pytest.approx((0.0625, 0.0, 0.1875))


# --- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: brier([0.2, 1.2], [1, 0]),
            r"forecasts must be probabilities in \[0, 1\]; 1 are not \(e\.g\. 1: 1\.2\)",
        ),
        (lambda: log_loss([float("nan")], [1]), r"forecasts must be probabilities .*0: nan"),
        (lambda: zero_one([0.2, 0.4], ["yes", "maybe"]), r"resolutions\[1\] = 'maybe' is not a resolution"),
        (lambda: brier([0.1, 0.2, 0.3], [1, 0]), r"same length; got 3 forecasts and 2 resolutions"),
        (lambda: calibration_table([0.1, 0.2], [1, 0, 1]), r"got 2 forecasts and 3 resolutions"),
        (lambda: murphy_decomposition([0.1], [1], weights=[1, 2]), r"weights must have shape \(1,\), got \(2,\)"),
        (lambda: expected_calibration_error([], []), "no forecasts to score"),
        (lambda: calibration_table([0.1], [1], bins=0), "bins must be at least 1"),
        (lambda: calibration_table([0.1], [1], bins=[0, 0.5, 0.4, 1]), "increase strictly from 0 to 1"),
    ],
)
def test_bad_input_raises_precise_errors(call, message):
    with pytest.raises(ScoreInputError, match=message):
        call()


# --- the paper's stored values -------------------------------------------------------------------

RESULT_FILES = sorted(GROUND_TRUTH.glob("*/ground_truth_results.jsonl")) if GROUND_TRUTH.is_dir() else []
ANCHORS = np.array([1, 3, 5, *range(10, 100, 10), 95, 97, 99]) / 100


def load(path: Path):
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    p = np.array([r["prob"] for r in rows])
    y = [r["resolution"] for r in rows]
    return rows, p, y


def paper_edges(p: np.ndarray) -> np.ndarray:
    """Edges that group forecasts as the paper does: each to its nearest anchor, float ties to the first."""
    values = np.unique(p)
    anchor = np.argmin(np.abs(ANCHORS[None, :] - values[:, None]), axis=1)
    assert np.all(np.diff(anchor) >= 0)
    cut = np.flatnonzero(np.diff(anchor))
    return np.concatenate([[0.0], (values[cut] + values[cut + 1]) / 2, [1.0]])


@needs_reference
@pytest.mark.parametrize("path", RESULT_FILES, ids=lambda p: p.parent.name)
def test_per_question_scores_reproduced(path):
    rows, p, y = load(path)
    np.testing.assert_allclose(brier(p, y), [r["brier_score"] for r in rows], atol=1e-4, rtol=0)
    # log_score is in bits: -log2(p_outcome + 1e-8); with eps clipping instead the difference is < 1e-7 here
    np.testing.assert_allclose(log_loss(p, y, base=2), [r["log_score"] for r in rows], atol=1e-4, rtol=0)
    assert not np.allclose(log_loss(p, y), [r["log_score"] for r in rows], atol=1e-4)  # not nats


@needs_reference
@pytest.mark.parametrize("path", RESULT_FILES, ids=lambda p: p.parent.name)
def test_summary_reproduced(path):
    _, p, y = load(path)
    summary = json.loads((path.parent / "ground_truth_summary.json").read_text())
    half = 5e-4  # the summary is rounded to 3 decimals
    assert mean_score(brier(p, y)) == pytest.approx(summary["avg_brier_score"], abs=half)
    assert mean_score(log_loss(p, y, base=2)) == pytest.approx(summary["avg_log_score"], abs=half)

    decomposition = summary["brier_score_decomposition"]
    exact = murphy_decomposition(p, y)
    assert exact.uncertainty == pytest.approx(decomposition["uncertainty"], abs=half)
    assert summary["tuned_brier_baseline"] == pytest.approx(exact.uncertainty, abs=half)

    # calibration bins: nearest anchor; ours reproduces counts, frequencies and mean forecasts
    data = summary["calibration_error_data"]
    edges = paper_edges(p)
    table = calibration_table(p, y, bins=edges)
    np.testing.assert_array_equal(table.count, data["num_samples"])
    np.testing.assert_allclose(table.frequency, data["bin_accuracies"], atol=half)
    np.testing.assert_allclose(table.mean_forecast, data["bin_confidences"], atol=half)
    # the paper's calibration error averages bins equally; our (sample-weighted) ECE is a different number
    unweighted = np.mean(np.abs(table.frequency - table.mean_forecast))
    assert unweighted == pytest.approx(summary["calibration_error"], abs=half)
    assert abs(expected_calibration_error(p, y, bins=edges) - summary["calibration_error"]) > 0.01

    # resolution on the anchor bins matches; the stored reliability uses the file's last forecast for every bin
    binned = murphy_decomposition(p, y, bins=edges)
    assert binned.resolution == pytest.approx(decomposition["resolution"], abs=half)
    as_stored = np.sum(table.count * (p[-1] - table.frequency) ** 2) / p.size
    assert as_stored == pytest.approx(decomposition["reliability"], abs=half)
    assert abs(binned.reliability - decomposition["reliability"]) > 0.01
