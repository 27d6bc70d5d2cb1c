"""Significance tools from the Metaculus AI benchmarking methodology, checked against hand and textbook values."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pytest
from scipy import stats

from consistency.accuracy.inputs import ScoreInputError
from consistency.accuracy.significance import (
    early_closer_filter,
    group_weight,
    group_weights,
    head_to_head,
    question_weights,
    repeat_weights,
    weighted_bootstrap,
    weighted_t_test,
)

# ---------------------------------------------------------------------------------------------- weights


def test_repeat_weights_by_hand() -> None:
    w = repeat_weights(["a", "b", "a", "c", "a", "b"])
    np.testing.assert_allclose(w, [1, 1, 1 / 2, 1, 1 / 3, 1 / 2])
    np.testing.assert_allclose(repeat_weights([("x", 1), ("x", 1), ("x", 2)]), [1, 1 / 2, 1])
    assert repeat_weights([]).shape == (0,)


def test_group_weight_formula_matches_the_worked_examples() -> None:
    np.testing.assert_allclose(group_weight(3), 0.5)  # log2(4)/4
    assert round(float(group_weight(2)), 2) == 0.53  # log2(3)/3
    assert round(6 * float(group_weight(6)), 1) == 2.4  # largest group in the series
    assert round(64 * float(group_weight(64))) == 6  # "roughly six" for 64 teams
    np.testing.assert_allclose(group_weight(1), 0.5)  # the bare formula at N=1 ...


def test_group_weights_singletons_keep_weight_one() -> None:
    w = group_weights(["g", None, "g", "h", "g", "solo"])
    np.testing.assert_allclose(w, [0.5, 1, 0.5, 1, 0.5, 1])  # ... but a group of one is an independent question
    w2 = group_weights(["p", "p"])
    np.testing.assert_allclose(w2, [math.log2(3) / 3] * 2)
    np.testing.assert_allclose(group_weights([None, None]), [1, 1])


def test_question_weights_multiply_rules() -> None:
    w = question_weights(
        4, repeats=["q1", "q1", "q2", "q3"], groups=[None, None, "g", "g"], weights=[1.0, 1.0, 2.0, 0.0]
    )
    g2 = math.log2(3) / 3
    np.testing.assert_allclose(w, [1, 0.5, 2 * g2, 0])
    np.testing.assert_allclose(question_weights(3), [1, 1, 1])


# ---------------------------------------------------------------------------------------------- head-to-head


def test_head_to_head_by_hand() -> None:
    pa = [0.8, 0.3, 0.5, 0.9]
    pb = [0.6, 0.4, 0.5, 0.2]
    res = ["yes", 0, True, "no"]
    w = [1.0, 0.5, 2.0, 1.0]
    h = head_to_head(pa, pb, res, w, answered_b=[True, True, True, False])
    expected = [100 * math.log(0.8 / 0.6), 100 * math.log(0.7 / 0.6), 0.0]
    np.testing.assert_array_equal(h.indices, [0, 1, 2])
    np.testing.assert_allclose(h.scores, expected, rtol=1e-12)
    np.testing.assert_allclose(h.weights, [1.0, 0.5, 2.0])
    total = expected[0] + 0.5 * expected[1]
    assert h.total == pytest.approx(total, rel=1e-12)
    assert h.weight_sum == 3.5
    assert h.mean == pytest.approx(total / 3.5, rel=1e-12)
    # antisymmetric: B against A is the negative
    hb = head_to_head(pb, pa, res, w, answered_a=[True, True, True, False])
    np.testing.assert_allclose(hb.scores, -h.scores)


def test_head_to_head_unanswered_values_are_ignored_and_clip_bounds_certainty() -> None:
    h = head_to_head([0.7, np.nan], [0.5, 0.5], [1, 1], answered_a=[True, False])
    np.testing.assert_allclose(h.scores, [100 * math.log(0.7 / 0.5)])
    h = head_to_head([0.0], [0.5], [1], clip=0.001)
    np.testing.assert_allclose(h.scores, [100 * math.log(0.001 / 0.5)])


# ---------------------------------------------------------------------------------------------- t-test


def _textbook(x: np.ndarray, w: np.ndarray, conf: float = 0.95) -> dict[str, float]:
    big_w = w.sum()
    mean = sum(wi * xi for wi, xi in zip(w, x, strict=True)) / big_w
    sd = math.sqrt(sum(wi * (xi - mean) ** 2 for wi, xi in zip(w, x, strict=True)) / (big_w - 1))
    se = sd / math.sqrt(big_w)
    df = big_w - 1
    t = mean / se
    crit = stats.t.ppf(1 - (1 - conf) / 2, df)
    return {
        "mean": mean,
        "sd": sd,
        "se": se,
        "df": df,
        "t": t,
        "p": 2 * stats.t.sf(abs(t), df),
        "lo": mean - crit * se,
        "hi": mean + crit * se,
    }


def test_weighted_t_test_matches_textbook_formulas() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(3.0, 20.0, size=40)
    w = rng.choice([1.0, 0.5, 1 / 3, 0.53], size=40)
    r = weighted_t_test(x, w)
    ref = _textbook(x, w)
    assert r.mean == pytest.approx(ref["mean"], rel=1e-12)
    assert r.sd == pytest.approx(ref["sd"], rel=1e-12)
    assert r.se == pytest.approx(ref["se"], rel=1e-12)
    assert r.df == pytest.approx(ref["df"], rel=1e-12)  # non-integer
    assert r.df != round(r.df)
    assert r.t == pytest.approx(ref["t"], rel=1e-12)
    assert r.p_value == pytest.approx(ref["p"], rel=1e-10)
    assert (r.ci_low, r.ci_high) == (pytest.approx(ref["lo"], rel=1e-12), pytest.approx(ref["hi"], rel=1e-12))
    assert r.t_ratio == pytest.approx(r.t / r.critical_t)
    # smaller weights -> fewer effective questions -> a wider interval than unit weights
    unit = weighted_t_test(x)
    assert r.ci_high - r.ci_low > unit.ci_high - unit.ci_low


def test_weighted_t_test_unit_weights_equal_scipy() -> None:
    rng = np.random.default_rng(11)
    x = rng.standard_t(3, size=25) * 30 - 4
    r = weighted_t_test(x, np.ones(25))
    ref = stats.ttest_1samp(x, 0.0)
    ci = ref.confidence_interval(0.95)
    assert abs(r.t - ref.statistic) < 1e-10
    assert abs(r.p_value - ref.pvalue) < 1e-10
    assert abs(r.ci_low - ci.low) < 1e-10
    assert abs(r.ci_high - ci.high) < 1e-10
    assert r.df == 24
    shifted = weighted_t_test(x, popmean=2.5, confidence=0.9)
    ref2 = stats.ttest_1samp(x, 2.5)
    assert abs(shifted.t - ref2.statistic) < 1e-10
    assert abs(shifted.p_value - ref2.pvalue) < 1e-10
    assert abs(shifted.ci_low - ref2.confidence_interval(0.9).low) < 1e-10


# ---------------------------------------------------------------------------------------------- bootstrap


def test_bootstrap_equal_weights_brackets_mean_and_approaches_normal_theory() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(5.0, 10.0, size=2000)
    b = weighted_bootstrap(x, np.full(2000, 0.7), resamples=4000, draws=2000, seed=1)
    assert b.ci_low < x.mean() < b.ci_high
    assert b.draws == 2000 and b.means.shape == (4000,)
    se = x.std(ddof=1) / math.sqrt(x.size)
    z = stats.norm.ppf(0.975)
    assert b.ci_low == pytest.approx(x.mean() - z * se, abs=0.1 * se)
    assert b.ci_high == pytest.approx(x.mean() + z * se, abs=0.1 * se)
    assert b.prob_positive == 1.0
    # unit weights: default draws = weighted count = n, and the t interval agrees closely
    b1 = weighted_bootstrap(x, resamples=4000, seed=2)
    t1 = weighted_t_test(x)
    assert b1.draws == 2000
    assert b1.ci_low == pytest.approx(t1.ci_low, abs=0.1 * se)
    assert b1.ci_high == pytest.approx(t1.ci_high, abs=0.1 * se)


def test_bootstrap_default_draws_is_weighted_count_and_is_seeded_and_blocked() -> None:
    x = np.arange(10.0)
    w = np.full(10, 0.5)
    a = weighted_bootstrap(x, w, resamples=300, seed=5, max_block_elements=7)  # blocks of 1 resample
    assert a.draws == 5
    b = weighted_bootstrap(x, w, resamples=300, seed=5, max_block_elements=7)
    np.testing.assert_array_equal(a.means, b.means)
    c = weighted_bootstrap(x, w, resamples=300, seed=6)
    assert not np.array_equal(a.means, c.means)


def test_bootstrap_one_huge_weight_dominates_and_zero_weight_never_drawn() -> None:
    x = np.array([50.0, -1.0, 2.0, -3.0, 4.0, 1e6])
    w = np.array([1e4, 1.0, 1.0, 1.0, 1.0, 0.0])
    b = weighted_bootstrap(x, w, resamples=500, draws=50, seed=0)
    assert b.means.max() < 1e3  # one draw of the zero-weight outlier would add 1e6 / 50
    assert abs(np.median(b.means) - 50.0) < 1e-12  # most resamples are that question only
    assert b.ci_low > 45 and b.ci_high == 50.0
    assert b.mean == pytest.approx(np.dot(w, x) / w.sum())


# ---------------------------------------------------------------------------------------------- early closers


def test_early_closer_filter_table() -> None:
    d = np.datetime64
    resolved = [
        d("2024-08-01"),  # 0 early, scheduled date not reached -> held back
        d("2024-08-01"),  # 1 early, scheduled date passed -> kept
        d("2024-09-10"),  # 2 on schedule -> kept
        None,  # 3 unresolved -> excluded
        d("2024-09-20"),  # 4 resolves after as_of -> unresolved as of then
        d("2024-09-05"),  # 5 resolved late (after schedule) -> kept
    ]
    scheduled = ["2024-10-01", "2024-09-01", "2024-09-10", "2024-09-30", "2024-09-30", "2024-09-01"]
    f = early_closer_filter(resolved, scheduled, dt.date(2024, 9, 15))
    np.testing.assert_array_equal(f.keep, [False, True, True, False, False, True])
    assert sorted(f.reasons) == [0, 3, 4]
    assert f.reasons[0] == (
        "early closer: resolved 2024-08-01 before its scheduled resolution 2024-10-01; "
        "held back until then (as of 2024-09-15)"
    )
    assert f.reasons[3] == "unresolved as of 2024-09-15"
    assert f.reasons[4] == "unresolved as of 2024-09-15"
    # once the scheduled date passes, the early closer counts
    later = early_closer_filter(resolved, scheduled, "2024-10-01")
    np.testing.assert_array_equal(later.keep, [True, True, True, False, True, True])


def test_early_closer_filter_accepts_aware_datetimes_and_nat() -> None:
    utc = dt.UTC
    resolved = np.array(["2024-01-01T10", "NaT"], dtype="datetime64[h]")
    scheduled = [dt.datetime(2024, 1, 2, tzinfo=utc), dt.datetime(2024, 1, 2, tzinfo=utc)]
    f = early_closer_filter(resolved, scheduled, dt.datetime(2024, 1, 2, 1, tzinfo=dt.timezone(dt.timedelta(hours=2))))
    np.testing.assert_array_equal(f.keep, [False, False])  # 01:00+02:00 is 23:00 UTC on Jan 1
    assert f.reasons[0].startswith("early closer")


# ---------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: weighted_t_test([1.0, 2.0, 3.0], [1.0, 1.0]), r"^weights must have shape \(3,\), got \(2,\)$"),
        (lambda: weighted_t_test([1.0, 2.0], [1.0, -1.0]), r"^weights must be finite and non-negative$"),
        (lambda: weighted_t_test([1.0, 2.0], [0.0, 0.0]), r"^weights sum to zero$"),
        (lambda: weighted_t_test([1.0, 2.0], [0.5, 0.5]), r"^weights sum to 1; the t-test needs a weighted"),
        (lambda: weighted_t_test([1.0, np.nan, 3.0]), r"^scores must be finite; 1 are not \(first at index 1: nan\)$"),
        (lambda: weighted_t_test([2.0, 2.0, 2.0]), r"all equal; the t-test is undefined for zero spread$"),
        (lambda: weighted_t_test([]), r"^scores is empty$"),
        (lambda: weighted_t_test([1.0, 2.0], confidence=95), r"^confidence must be in \(0, 1\), got 95$"),
        (lambda: weighted_bootstrap([1.0, 2.0], [1.0, np.nan]), r"^weights must be finite and non-negative$"),
        (lambda: weighted_bootstrap([1.0, 2.0], [0.0, 0.0]), r"^weights sum to zero$"),
        (lambda: weighted_bootstrap([1.0, 2.0], resamples=0), r"^resamples must be a positive integer, got 0$"),
        (lambda: weighted_bootstrap([1.0, 2.0], draws=2.5), r"^draws must be a positive integer, got 2.5$"),
        (
            lambda: head_to_head([0.5, 0.6], [0.5], [1, 0]),
            r"^forecasts_b must have shape \(2,\) like forecasts_a, got \(1,\)$",
        ),
        (
            lambda: head_to_head([0.5, 1.2], [0.5, 0.5], [1, 0]),
            r"^forecasts_a \(questions both answered\) must be probabilities in \[0, 1\]; "
            r"1 are not \(e\.g\. 1: 1\.2\)$",
        ),
        (
            lambda: head_to_head([0.5, 0.5], [0.5, np.nan], [1, 0]),
            r"^forecasts_b \(questions both answered\) must be probabilities in \[0, 1\]; "
            r"1 are not \(e\.g\. 1: nan\)$",
        ),
        (
            lambda: head_to_head([0.5, 0.5], [0.5, 0.5], [1, "maybe"]),
            r"^resolutions \(questions both answered\)\[1\] = 'maybe' is not a resolution",
        ),
        (
            lambda: head_to_head([0.5, 0.5], [0.5, 0.5], [1, 0], [1.0, 0.0], answered_a=[False, True]),
            r"^weights of the 1 questions both forecasters answered sum to zero$",
        ),
        (
            lambda: head_to_head([0.5], [0.5], [1], answered_a=[True], answered_b=[False]),
            r"^the two forecasters have no question in common$",
        ),
        (
            lambda: head_to_head([0.5, 0.4], [0.5, 1.0], [1, 0]),
            r"^forecasts_b\[1\] gives probability 0 to the realised outcome, so its log score is infinite",
        ),
        (lambda: head_to_head([0.5], [0.5], [1], answered_a=[1]), r"^answered_a must be a boolean mask"),
        (lambda: group_weights([["unhashable"]]), r"^labels must be hashable question keys"),
        (lambda: question_weights(2, repeats=["a"]), r"^repeats must have length 2, got 1$"),
        (
            lambda: early_closer_filter(["2024-01-01"], ["2024-01-01", "2024-02-01"], "2024-03-01"),
            r"^scheduled_resolution must have shape \(1,\) like resolved_at, got \(2,\)$",
        ),
        (
            lambda: early_closer_filter(["2024-01-01"], [None], "2024-03-01"),
            r"^scheduled_resolution\[0\] is missing$",
        ),
        (
            lambda: early_closer_filter(["soon"], ["2024-01-01"], "2024-03-01"),
            r"^resolved_at\[0\] = 'soon' is not a date$",
        ),
        (lambda: early_closer_filter([None], ["2024-01-01"], None), r"^as_of is missing$"),
    ],
)
def test_bad_input_raises_precise_errors(call, message: str) -> None:
    with pytest.raises(ScoreInputError, match=message):
        call()
