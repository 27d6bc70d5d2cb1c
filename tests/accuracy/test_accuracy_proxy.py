"""Proxy scores: aggregators against their formulas, LOO against explicit recomputation, NaN, batches, errors."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from consistency.accuracy.inputs import ScoreInputError
from consistency.accuracy.proxy import (
    AGGREGATORS,
    aggregate,
    batch_means,
    extremized_mean,
    forecast_matrix,
    logit_pool,
    loo_aggregate,
    mean,
    median,
    per_forecast_losses,
    proxy_correlation_table,
    proxy_losses,
    proxy_scores,
    zscore_within_batches,
)

METHODS = ("mean", "median", "extremized_mean", "logit_pool")


def _matrix(seed: int, n: int = 7, m: int = 30, missing: float = 0.25) -> np.ndarray:
    rng = np.random.default_rng(seed)
    F = rng.random((n, m))
    F[rng.random(F.shape) < missing] = np.nan
    F[:, 0] = np.nan  # nobody forecast question 0
    F[1:, 1] = np.nan  # only forecaster 0 forecast question 1
    F[0, 2], F[1, 2] = 0.0, 1.0  # endpoints
    F[2, 3] = 0.5
    return F


def _by_hand(F: np.ndarray, method: str) -> np.ndarray:
    """Each aggregate from its formula, one question at a time in plain Python."""
    out = []
    for column in F.T:
        xs = [float(x) for x in column if not math.isnan(x)]
        if not xs:
            out.append(math.nan)
        elif method == "mean":
            out.append(sum(xs) / len(xs))
        elif method == "median":
            out.append(statistics.median(xs))
        elif method == "extremized_mean":
            m = sum(xs) / len(xs)
            out.append(m**2 / (m**2 + (1 - m) ** 2))
        else:
            clipped = [min(max(x, 1e-3), 1 - 1e-3) for x in xs]
            z = math.sqrt(3) * sum(math.log(c / (1 - c)) for c in clipped) / len(clipped)
            out.append(1 / (1 + math.exp(-z)))
    return np.array(out)


@pytest.mark.parametrize("method", METHODS)
def test_aggregators_match_their_formulas(method):
    F = _matrix(0)
    np.testing.assert_allclose(aggregate(F, method), _by_hand(F, method), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(AGGREGATORS[method](F), _by_hand(F, method), rtol=1e-12, atol=1e-15)


def test_extremized_mean_and_logit_pool_parameters():
    F = np.array([[0.6, 0.1, 0.0], [0.8, 0.3, 0.0], [0.7, np.nan, 1.0]])
    m = np.array([0.7, 0.2, 1 / 3])
    for alpha in (1.0, 2.0, 3.5):
        np.testing.assert_allclose(extremized_mean(F, alpha=alpha), m**alpha / (m**alpha + (1 - m) ** alpha))
    np.testing.assert_allclose(extremized_mean(F, alpha=1.0), mean(F))
    assert extremized_mean([[0.0, 1.0]]).tolist() == [0.0, 1.0]
    assert extremized_mean([[0.5]], alpha=5000.0)[0] == pytest.approx(0.5)  # no 0/0 from underflowing powers
    clipped = np.clip(F, 1e-3, 1 - 1e-3)
    for d in (1.0, 2.5):
        z = d * np.nanmean(np.log(clipped / (1 - clipped)), axis=0)
        np.testing.assert_allclose(logit_pool(F, d=d), 1 / (1 + np.exp(-z)))
    np.testing.assert_allclose(logit_pool(F, d=1.0, eps=0.2)[2], 1 / (1 + np.exp(-np.log(0.25) / 3)))
    np.testing.assert_allclose(median(F), [0.7, 0.2, 0.0])


@pytest.mark.parametrize("method", METHODS)
def test_leave_one_out_matches_explicit_recomputation(method):
    F = _matrix(1)
    params = {"extremized_mean": {"alpha": 2.5}, "logit_pool": {"d": 1.3}}.get(method, {})
    got = loo_aggregate(F, method, **params)
    for i in range(F.shape[0]):
        rest = np.delete(F, i, axis=0)
        with np.errstate(all="ignore"):
            want = _by_hand(rest, method) if not params else _reference(rest, method, params)
        np.testing.assert_allclose(got[i], want, rtol=1e-12, atol=1e-15, err_msg=f"forecaster {i}")
        scored = ~np.isnan(F[i]) & ~np.isnan(want)
        losses = proxy_losses(F, method, loo=True, **params)[i]
        np.testing.assert_allclose(losses[scored], (F[i, scored] - want[scored]) ** 2, rtol=1e-12, atol=1e-15)
        assert np.isnan(losses[~scored]).all()
        assert proxy_scores(F, method, loo=True, **params)[i] == pytest.approx(np.mean(losses[scored]), rel=1e-12)


def _reference(F: np.ndarray, method: str, params: dict) -> np.ndarray:
    m = np.array([np.mean(c[~np.isnan(c)]) if (~np.isnan(c)).any() else np.nan for c in F.T])
    if method == "extremized_mean":
        a = params["alpha"]
        return m**a / (m**a + (1 - m) ** a)
    c = np.clip(F, 1e-3, 1 - 1e-3)
    lm = np.array([np.mean(v[~np.isnan(v)]) if (~np.isnan(v)).any() else np.nan for v in np.log(c / (1 - c)).T])
    return 1 / (1 + np.exp(-params["d"] * lm))


def test_loo_median_with_ties_and_small_columns():
    F = np.array(
        [
            [0.3, 0.5, 0.2, np.nan],
            [0.3, 0.5, np.nan, np.nan],
            [0.3, 0.1, np.nan, 0.4],
            [0.7, 0.5, 0.9, np.nan],
        ]
    )
    got = loo_aggregate(F, "median")
    for i in range(4):
        want = _by_hand(np.delete(F, i, axis=0), "median")
        np.testing.assert_array_equal(got[i], want)
    assert np.isnan(got[2, 3])  # the only forecast on question 3: nobody left


def test_missing_forecasts_are_ignored_and_empty_questions_skipped():
    F = _matrix(2)
    for method in METHODS:
        agg = aggregate(F, method)
        assert np.isnan(agg[0])  # nobody forecast question 0
        assert not np.isnan(agg[1:]).any()
        losses = proxy_losses(F, method)
        np.testing.assert_array_equal(np.isnan(losses), np.isnan(F))
        want = [np.mean((row[~np.isnan(row)] - agg[~np.isnan(row)]) ** 2) for row in F]
        np.testing.assert_allclose(proxy_scores(F, method), want, rtol=1e-12)
        # LOO: question 1 has only forecaster 0, so it is skipped for forecaster 0 (nobody else to compare with)
        loo = proxy_losses(F, method, loo=True)
        assert np.isnan(loo[0, 1]) and np.isnan(loo[:, 0]).all()
    # adding a forecaster with no forecasts changes nothing and gets NaN
    G = np.vstack([F, np.full(F.shape[1], np.nan)])
    for method in METHODS:
        s = proxy_scores(G, method, loo=True)
        assert np.isnan(s[-1])
        np.testing.assert_allclose(s[:-1], proxy_scores(F, method, loo=True), rtol=1e-12)


def test_no_warnings_on_edge_values():
    F = np.array([[0.0, 1.0, np.nan, 0.5], [0.0, 1.0, np.nan, np.nan]])
    with np.errstate(all="raise"):
        for method in METHODS:
            for loo in (False, True):
                proxy_scores(F, method, loo=loo)
                (loo_aggregate if loo else aggregate)(F, method)


def test_zscores_within_each_batch_have_mean_zero_and_unit_std():
    rng = np.random.default_rng(3)
    L = rng.random((6, 40))
    L[rng.random(L.shape) < 0.2] = np.nan
    batches = np.repeat(["a", "b", "c", "d"], 10)
    means, names = batch_means(L, batches)
    assert names == ["a", "b", "c", "d"]
    for b, name in enumerate(names):
        cols = L[:, batches == name]
        want = [np.nanmean(row) if (~np.isnan(row)).any() else np.nan for row in cols]
        np.testing.assert_allclose(means[:, b], want, rtol=1e-12)
    for ddof in (0, 1):
        z = zscore_within_batches(means, ddof=ddof)
        for b in range(len(names)):
            col = z[~np.isnan(z[:, b]), b]
            assert col.mean() == pytest.approx(0.0, abs=1e-12)
            assert col.std(ddof=ddof) == pytest.approx(1.0, rel=1e-12)
    # batch labels per forecast give the same as per question when they agree
    per_forecast = np.broadcast_to(batches, L.shape)
    np.testing.assert_allclose(batch_means(L, per_forecast)[0], means)
    # a batch with one scored forecaster, or no spread, has no z-scores
    z = zscore_within_batches(np.array([[1.0, 2.0, 0.3], [np.nan, 2.0, 0.5], [np.nan, 2.0, 0.1]]))
    assert np.isnan(z[:, :2]).all() and not np.isnan(z[:, 2]).any()


def _simulate(seed: int, n_batches: int = 8, per_batch: int = 60):
    """Forecasters see the true probability through logit noise of different sizes; outcomes drawn from it."""
    rng = np.random.default_rng(seed)
    noise = np.linspace(0.2, 2.5, 12)
    m = n_batches * per_batch
    truth = 1 / (1 + np.exp(-rng.normal(0, 1.5, m)))
    y = (rng.random(m) < truth).astype(float)
    logit = np.log(truth / (1 - truth))
    F = 1 / (1 + np.exp(-(logit + noise[:, None] * rng.normal(size=(len(noise), m)))))
    F[rng.random(F.shape) < 0.1] = np.nan
    return F, y, np.repeat(np.arange(n_batches), per_batch), noise


def test_less_noisy_forecasters_get_better_proxy_scores_and_proxy_tracks_brier():
    F, y, batches, noise = _simulate(4)
    for method in METHODS:
        for loo in (False, True):
            s = proxy_scores(F, method, loo=loo)
            rho = np.corrcoef(np.argsort(np.argsort(s)), np.arange(len(noise)))[0, 1]
            assert rho > 0.9, (method, loo, rho)
    table = proxy_correlation_table(F, y, batches)
    assert table.columns == ("brier", "log", "absolute", "zero_one")
    assert table.rows[:2] == ("mean", "mean (LOO)") and len(table.rows) == 8
    assert (table.n == 12 * 8).all()
    for row in table.rows:
        assert table.get(row, "brier") > 0.5, table.format()
    assert table.as_dict()["logit_pool"]["brier"] == table.get("logit_pool", "brier")
    assert "logit_pool (LOO)" in table.format()


def test_correlation_table_matches_manual_pipeline():
    F, y, batches, _ = _simulate(5, n_batches=4, per_batch=30)
    y_obj = y.astype(object)
    y_obj[:3] = None  # unresolved questions are left out of both sides
    table = proxy_correlation_table(F, y_obj, batches, methods=["logit_pool"], loo=[True], losses=["brier"])
    keep = slice(3, None)
    zp = zscore_within_batches(batch_means(proxy_losses(F[:, keep], "logit_pool", loo=True), batches[keep])[0])
    zb = zscore_within_batches(batch_means((F[:, keep] - y[keep]) ** 2, batches[keep])[0])
    ok = ~np.isnan(zp) & ~np.isnan(zb)
    assert table.get("logit_pool (LOO)", "brier") == pytest.approx(np.corrcoef(zp[ok], zb[ok])[0, 1], rel=1e-12)
    losses = per_forecast_losses(F, y_obj, "brier")
    assert np.isnan(losses[:, :3]).all()
    np.testing.assert_allclose(losses[:, keep], (F[:, keep] - y[keep]) ** 2)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: proxy_scores([[0.2, 1.3]], "mean"),
            r"forecasts must be probabilities in \[0, 1\]; 1 are not \(e\.g\. \(0, 1\): 1\.3\)",
        ),
        (lambda: aggregate([[0.2, -0.1, np.inf]], "median"), r"2 are not \(e\.g\. \(0, 1\): -0\.1, \(0, 2\): inf\)"),
        (
            lambda: proxy_scores([0.2, 0.3], "mean"),
            r"must be a 2-D array of shape \(n_forecasters, n_questions\), got shape \(2,\)",
        ),
        (lambda: proxy_scores(np.zeros((2, 2, 2)), "mean"), r"got shape \(2, 2, 2\)"),
        (
            lambda: proxy_scores(np.zeros((0, 3)), "mean"),
            r"at least one forecaster and one question, got shape \(0, 3\)",
        ),
        (lambda: proxy_scores([[np.nan, np.nan]], "logit_pool"), r"forecasts are all NaN"),
        (lambda: proxy_scores([["a", 0.2]], "mean"), r"forecasts must be numeric"),
        (lambda: aggregate([[0.2]], "mode"), r"unknown aggregation method 'mode'; expected one of: mean, median"),
        (lambda: aggregate([[0.2]], "mean", alpha=2), r"mean got unexpected parameter\(s\) alpha; accepted: none"),
        (
            lambda: aggregate([[0.2]], "logit_pool", alpha=2),
            r"logit_pool got unexpected parameter\(s\) alpha; accepted: d, eps",
        ),
        (lambda: extremized_mean([[0.2]], alpha=-1), r"extremized_mean: alpha must be a finite number > 0, got -1"),
        (lambda: logit_pool([[0.2]], d=math.nan), r"logit_pool: d must be a finite number > 0, got nan"),
        (lambda: logit_pool([[0.2]], eps=0.5), r"logit_pool: eps must be a finite number in \(0, 0\.5\), got 0\.5"),
        (
            lambda: batch_means(np.zeros((2, 3)), ["a", "b"]),
            r"batches must have shape \(3,\) \(one label per question\) or \(2, 3\)",
        ),
        (
            lambda: per_forecast_losses([[0.2, 0.4]], [1]),
            r"resolutions must have shape \(2,\) \(one per question\), got \(1,\)",
        ),
        (lambda: per_forecast_losses([[0.2, 0.4]], [1, 2]), r"resolutions\[1\] = 2 is not a resolution"),
        (lambda: per_forecast_losses([[0.2]], [1], "hinge"), r"unknown loss 'hinge'; expected one of: brier, log"),
        (lambda: proxy_correlation_table([[0.2, 0.4]], [None, None], [0, 0]), r"no question is resolved"),
        (lambda: proxy_correlation_table([[0.2]], [1], [0], methods=["avg"]), r"unknown aggregation method 'avg'"),
        (lambda: zscore_within_batches([1.0, 2.0]), r"scores must be a 2-D array \(n_forecasters, n_batches\)"),
    ],
)
def test_bad_input_raises_precise_errors(call, message):
    with pytest.raises(ScoreInputError, match=message):
        call()


def test_forecast_matrix_accepts_nan_and_endpoints():
    X = forecast_matrix([[0.0, np.nan], [1.0, 0.5]])
    assert X.dtype == np.float64 and X.shape == (2, 2)


def test_inputs_are_not_modified():
    F = _matrix(7)
    before = F.copy()
    for method in METHODS:
        for loo in (False, True):
            proxy_scores(F, method, loo=loo)
            (loo_aggregate if loo else aggregate)(F, method)
    np.testing.assert_array_equal(F, before)


def test_large_matrix_runs_vectorised():
    rng = np.random.default_rng(6)
    F = rng.random((20, 5000))
    F[rng.random(F.shape) < 0.05] = np.nan
    for method in METHODS:
        for loo in (False, True):
            s = proxy_scores(F, method, loo=loo)
            assert s.shape == (20,) and np.isfinite(s).all()
