"""ForecastBench's leaderboard columns: exact on the constant forecasters, its bootstrap, its rules, its scale."""

from __future__ import annotations

import json
import math
from datetime import date

import numpy as np
import pytest

from consistency.accuracy.difficulty import difficulty_adjusted_brier
from consistency.forecastbench import load
from consistency.forecastbench.bootstrap import weight_blocks, weighted_scores
from consistency.forecastbench.fixed_effects import read_fixed_effects, records
from consistency.forecastbench.forecasts import Forecasts
from consistency.forecastbench.formats import MARKET_SOURCES
from consistency.forecastbench.keys import key_of
from consistency.forecastbench.leaderboard import BASELINES, brier_index, leaderboard
from consistency.forecastbench.synthetic import Shape, make_round, write_round
from tests.forecastbench.test_forecastbench_read import FB, SETS, needs_forecastbench


def _plain_brier(p: float) -> dict[str, float]:
    """Plain Brier of always-p on every scored row of the reference sets, straight from the JSON files: resolved
    dataset rows (each resolution date) and resolved market rows of the set's own questions, combinations left out."""
    losses = {"dataset": [], "market": []}
    for name in SETS:
        qset = json.loads((FB / "question_sets" / f"{name}.json").read_text())
        rset = json.loads((FB / "resolution_sets" / f"{name[:10]}_resolution_set.json").read_text())
        asked = {(q["id"], q["source"]) for q in qset["questions"]}
        for r in rset["resolutions"]:
            if isinstance(r["id"], list) or not r["resolved"] or (r["id"], r["source"]) not in asked:
                continue
            losses["market" if r["source"] in MARKET_SOURCES else "dataset"].append((p - r["resolved_to"]) ** 2)
    out = {part: math.fsum(v) / len(v) for part, v in losses.items()}
    out["overall"] = (out["dataset"] + out["market"]) / 2
    out["n_dataset"], out["n_market"] = len(losses["dataset"]), len(losses["market"])
    return out


@needs_forecastbench
@pytest.mark.parametrize("with_others", [False, True])
def test_constant_forecasters_score_their_plain_brier_on_the_reference_sets(with_others):
    questions = load([str(FB)]).imported.questions
    others = []
    if with_others:  # forecasters that shape the difficulties, so γ is far from trivial
        rng = np.random.default_rng(5)
        keys = [key_of(q.id) for q in questions]
        crowd = {key_of(q.id): q.metadata.get("market_prob", 0.4) for q in questions}
        others = [Forecasts("uniform", "u", {k: float(rng.random()) for k in keys}), Forecasts("crowd", "c", crowd)]
    board = leaderboard(questions, others, bootstrap=0, all_rounds=True)
    assert board.rounds == ["2024-07-21", "2025-10-26", "2026-08-02"]
    rows = {s.forecaster: s for s in board.standings}
    for name, p in BASELINES.items():
        plain = _plain_brier(p)
        s = rows[name]
        assert (s.dataset.n, s.market.n) == (plain["n_dataset"], plain["n_market"])
        for part in ("dataset", "market", "overall"):
            assert getattr(s, part).brier == pytest.approx(plain[part], abs=1e-12)
            assert getattr(s, part).index == pytest.approx(100 * (1 - math.sqrt(plain[part])), abs=1e-9)
    assert rows["Always 0.5"].overall.index == pytest.approx(50.0, abs=1e-9)


def _forecasters(rnd, names_noise, coverage=1.0):
    out = []
    for name, noise in names_noise:
        rng = np.random.default_rng(sum(name.encode()))
        probs = {}
        for (qid, source, day), p in rnd.latent.items():
            if rng.random() < coverage:
                logit = math.log(p / (1 - p)) + rng.normal(0, noise)
                probs[
                    key_of(f"fb:{rnd.question_set['forecast_due_date']}:{source}:{qid}" + (f":{day}" if day else ""))
                ] = 1 / (1 + math.exp(-logit))
        out.append(Forecasts(name, name, probs))
    return out


@pytest.fixture(scope="module")
def rounds(tmp_path_factory):
    root = tmp_path_factory.mktemp("rounds")
    made = [
        make_round(due, date(2026, 1, 1), seed=4) for due in (date(2025, 3, 2), date(2025, 3, 16), date(2025, 3, 30))
    ]
    for rnd in made:
        write_round(rnd, root)
    return made, load([str(root)]).imported.questions


def test_forecasters_on_different_rounds_are_put_on_one_scale(rounds):
    made, questions = rounds
    a = _forecasters(made[0], [("a", 0.3)])[0]
    b = _forecasters(made[1], [("b", 0.3)])[0]
    c0, c1, c2 = (_forecasters(r, [("c", 1.0)])[0] for r in made)
    c = Forecasts("c", "c", {**c0.probs, **c1.probs, **c2.probs})
    board = leaderboard(questions, [a, b, c], bootstrap=200)
    rows = {s.forecaster: s for s in board.standings}
    assert board.rounds == ["2025-03-02", "2025-03-16", "2025-03-30"]
    assert rows["a"].dataset.n < rows["c"].dataset.n  # a and b answered one round each, c all three
    assert rows["a"].overall.brier < rows["c"].overall.brier and rows["b"].overall.brier < rows["c"].overall.brier
    for s in board.standings:
        assert s.overall.index == pytest.approx(brier_index(s.overall.brier))
        assert s.overall.brier == pytest.approx((s.dataset.brier + s.market.brier) / 2)
        assert s.overall.low <= s.overall.index <= s.overall.high
    ranks = [s.rank for s in board.standings]
    assert ranks == sorted(ranks) and ranks[0] == 1


def test_the_weighted_refit_is_the_project_fit_on_the_duplicated_panel():
    rng = np.random.default_rng(0)
    brier = rng.random((300, 6)) * 0.5
    brier[150:, 3] = np.nan
    brier[:150, 4] = np.nan
    fitted = np.array([True] * 5 + [False])
    q, f = np.nonzero(np.isfinite(brier))
    plain = difficulty_adjusted_brier(f, q, brier[q, f], exclude_from_difficulty=[5])
    np.testing.assert_allclose(weighted_scores(brier, fitted, np.ones((1, 300)))[0], plain.scores, atol=1e-12)
    weights = rng.integers(0, 4, size=300).astype(float)
    weights[[0, 299]] = 1.0  # both halves stay in
    rows = np.repeat(np.arange(300), weights.astype(int))
    q2, f2 = np.nonzero(np.isfinite(brier[rows]))
    dup = difficulty_adjusted_brier(f2, q2, brier[rows][q2, f2], exclude_from_difficulty=[5])
    np.testing.assert_allclose(weighted_scores(brier, fitted, weights[None, :])[0], dup.scores, atol=1e-12)


def test_the_bootstrap_redraws_questions_within_their_group():
    groups = np.array([0] * 40 + [1] * 7 + [2] * 153)
    blocks = list(weight_blocks(groups, 500, np.random.default_rng(1)))
    w = np.vstack(blocks)
    assert w.shape == (500, 200)
    for g, n in ((0, 40), (1, 7), (2, 153)):
        assert np.all(w[:, groups == g].sum(axis=1) == n)
    assert abs(w.mean() - 1.0) < 0.01 and w.var() > 0.5


def test_a_file_with_too_many_missing_forecasts_is_left_off_and_a_small_round_waits(rounds):
    made, questions = rounds
    full = _forecasters(made[0], [("full", 0.5)])[0]
    sparse = _forecasters(made[0], [("sparse", 0.5)], coverage=0.9)[0]
    board = leaderboard(questions, [full, sparse], bootstrap=0)
    assert "sparse" not in {s.forecaster for s in board.standings}
    assert any(n.startswith("sparse: its round 2025-03-02 is left off the leaderboard") and "more than 5%" in n
               for n in board.notes)  # fmt: skip
    # Few resolved rows: ForecastBench does not rank the round yet (--all-rounds does).
    small = make_round(date(2025, 9, 7), date(2025, 9, 20), Shape({"manifold": 5}, {"acled": 5}), seed=1)
    tiny = [q for q in _imported(small)]
    with pytest.raises(Exception, match="no round left to score"):
        leaderboard(tiny, [], bootstrap=0, today=date(2026, 1, 1))
    assert leaderboard(tiny, [], bootstrap=0, all_rounds=True, today=date(2026, 1, 1)).rounds == ["2025-09-07"]
    recent = leaderboard(questions, [full], bootstrap=0, today=date(2025, 5, 1))
    assert recent.rounds == ["2025-03-02"]
    assert any(n.startswith("round 2025-03-16") and "less than 50 days before 2025-05-01" in n for n in recent.notes)


def _imported(rnd):
    from consistency.forecastbench.formats import question_set, resolution_set
    from consistency.forecastbench.reader import import_set

    return import_set(question_set(rnd.question_set, "q"), resolution_set(rnd.resolution_set, "r")).questions


def test_published_fixed_effects_place_a_forecaster_where_the_fit_would(rounds, tmp_path):
    made, questions = rounds
    panel = _forecasters(made[0], [("a", 0.2), ("b", 0.6), ("c", 1.2)])
    fitted = leaderboard(questions, panel, bootstrap=0)
    path = tmp_path / "question_fixed_effects.2026-01-01.baseline_leaderboard.json"
    recs = [r for part, (keys, gamma) in fitted.difficulties.items() for r in records(keys, gamma, "baseline")]
    for r in recs:  # as ForecastBench writes them: horizons as floats, null for markets
        r["horizon"] = None if r["horizon"] is None else float(r["horizon"])
    path.write_text(json.dumps(recs))
    effects = read_fixed_effects(path)
    placed = leaderboard(questions, [panel[1]], fixed_effects=effects, bootstrap=100)
    want = {s.forecaster: s for s in fitted.standings}["b"]
    got = {s.forecaster: s for s in placed.standings}["b"]
    for part in ("dataset", "market", "overall"):
        assert getattr(got, part).brier == pytest.approx(getattr(want, part).brier, abs=1e-12)
    assert got.overall.low < got.overall.index < got.overall.high
    assert placed.scale == str(path)


def test_a_fixed_effects_file_of_two_leaderboards_is_refused(tmp_path):
    from consistency.forecastbench import ForecastBenchError

    rec = {"forecast_due_date": "2025-03-02", "source": "fred", "id": "x", "horizon": 7.0, "question_fixed_effect": 0.1}
    path = tmp_path / "fe.json"
    path.write_text(
        json.dumps([{**rec, "leaderboard_type": "baseline"}, {**rec, "id": "y", "leaderboard_type": "tournament"}])
    )
    with pytest.raises(ForecastBenchError, match="several leaderboards"):
        read_fixed_effects(path)


def test_one_model_files_of_several_rounds_are_one_forecaster(rounds):
    made, questions = rounds
    first, second = (_forecasters(r, [("m", 0.5)])[0] for r in made[:2])
    whole = Forecasts("m", "both", {**first.probs, **second.probs})
    apart = leaderboard(questions, [first, second], bootstrap=0)
    together = leaderboard(questions, [whole], bootstrap=0)
    rows = {s.forecaster: s for s in apart.standings}
    assert set(rows) == {"m", *BASELINES}
    assert rows["m"] == {s.forecaster: s for s in together.standings}["m"]
    twin = Forecasts("m", "elsewhere", dict(first.probs))
    named = {s.forecaster for s in leaderboard(questions, [first, twin], bootstrap=0).standings}
    assert {"m", "m (elsewhere)"} <= named


def test_runs_on_different_rounds_alone_are_connected_by_the_baselines(rounds):
    made, questions = rounds
    a = _forecasters(made[0], [("a", 0.3)])[0]
    b = _forecasters(made[1], [("b", 0.3)])[0]
    board = leaderboard(questions, [a, b], bootstrap=50)
    rows = {s.forecaster: s for s in board.standings}
    assert any("share no round with each other, so the baselines join the difficulty fit" in n for n in board.notes)
    assert rows["a"].overall.low is not None and rows["Always 0.5"].overall.brier == pytest.approx(0.25)
    with pytest.raises(Exception, match="connected components"):
        leaderboard(questions, [a, b], baselines=False, bootstrap=0)


def test_a_forecaster_without_rows_in_one_part_scores_there_as_nothing(rounds):
    made, questions = rounds
    a = _forecasters(made[0], [("a", 0.3)])[0]
    c = _forecasters(made[0], [("c", 0.8)])[0]
    only_markets = Forecasts("m", "m", {k: p for k, p in c.probs.items() if k.market})
    board = leaderboard(questions, [a, only_markets], bootstrap=30)  # "m" is left off its round: too many missing
    assert {s.forecaster for s in board.standings} >= {"a"}
    fitted = np.array([True, True, False])
    brier = np.random.default_rng(2).random((40, 3)) * 0.4
    brier[:, 1] = np.nan  # a fitted forecaster with no row in this part
    scores = weighted_scores(brier, fitted, np.ones((2, 40)))
    assert np.isnan(scores[:, 1]).all() and np.isfinite(scores[:, [0, 2]]).all()
