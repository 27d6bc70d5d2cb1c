"""What the ForecastBench leaderboard's faster paths must keep: the same draws, the same scores, one key per row."""

from __future__ import annotations

import gc
import json
from datetime import date

import numpy as np
import pytest

from consistency.forecastbench import bootstrap, load
from consistency.forecastbench.bootstrap import scorer, weight_blocks, weighted_scores
from consistency.forecastbench.bulk import paused_collector
from consistency.forecastbench.forecasts import read_forecasts
from consistency.forecastbench.keys import RowKey, key_of, make_key
from consistency.forecastbench.synthetic import forecast_set, make_round, write_round


@pytest.mark.parametrize("shuffled", [False, True])
def test_the_draws_do_not_depend_on_how_the_replicates_are_split_into_blocks(monkeypatch, shuffled):
    groups = np.repeat(np.arange(6), [40, 7, 153, 1, 60, 39])
    if shuffled:  # questions of a group scattered: each slot's draw goes through the sort order
        np.random.default_rng(3).shuffle(groups)
    drawn = {}
    for block in (200_000, 1000, 200):  # every replicate at once, five at a time, one at a time
        monkeypatch.setattr(bootstrap, "_BLOCK", block)
        drawn[block] = np.vstack(list(weight_blocks(groups, 37, np.random.default_rng(9))))
    assert drawn[1000].shape == (37, 300)
    np.testing.assert_array_equal(drawn[200_000], drawn[1000])
    np.testing.assert_array_equal(drawn[200_000], drawn[200])
    for g in range(6):  # every group keeps its size in every replicate
        assert np.all(drawn[200][:, groups == g].sum(axis=1) == (groups == g).sum())


@pytest.mark.parametrize("with_gamma", [False, True])
def test_a_prepared_scorer_scores_each_block_as_the_one_call_does(with_gamma):
    rng = np.random.default_rng(4)
    brier = rng.random((120, 5)) * 0.5
    brier[rng.random((120, 5)) < 0.2] = np.nan
    brier[:, 0] = rng.random(120) * 0.5  # every question has a fitted row
    fitted = np.array([True, True, True, False, False])
    gamma = rng.random(120) * 0.2 if with_gamma else None
    weights = np.vstack(list(weight_blocks(np.repeat(np.arange(4), 30), 50, np.random.default_rng(1))))
    score = scorer(brier, fitted, gamma, 0.1 if with_gamma else None)
    together = weighted_scores(brier, fitted, weights, gamma, 0.1 if with_gamma else None)
    np.testing.assert_allclose(np.vstack([score(weights[:20]), score(weights[20:])]), together, rtol=1e-12)


def test_a_forecast_sets_rows_are_the_questions_own_key_objects(tmp_path):
    rnd = make_round(date(2025, 3, 2), date(2025, 6, 1), seed=5)
    write_round(rnd, tmp_path / "datasets")
    questions = load([str(tmp_path / "datasets")]).imported.questions
    path = tmp_path / "2025-03-02.Lab.m.json"
    path.write_text(json.dumps(forecast_set(rnd, "Lab", "m", noise=0.5)))
    forecasts = read_forecasts(path)
    keys = {id(key_of(q.id)) for q in questions}
    assert forecasts.probs and all(id(k) in keys for k in forecasts.probs)
    first = next(iter(forecasts.probs))
    again = make_key(first.due, first.source, first.ids, first.resolution_date, first.direction)
    assert again is first and again == RowKey(first.due, first.source, first.ids, first.resolution_date)
    assert hash(again) == hash(RowKey(first.due, first.source, first.ids, first.resolution_date))


def test_a_bulk_build_leaves_the_collector_on_with_nothing_young_to_walk():
    assert gc.isenabled()
    with paused_collector():
        assert not gc.isenabled()
        built = [{"n": [i]} for i in range(50_000)]
    assert gc.isenabled()
    oldest = {id(o) for o in gc.get_objects(generation=2)}  # moved there, not left for the young collections
    assert id(built[0]) in oldest and id(built[-1]) in oldest and id(built[-1]["n"]) in oldest
    gc.disable()
    try:
        with paused_collector():
            pass
        assert not gc.isenabled()  # a collector that was off stays off
    finally:
        gc.enable()
