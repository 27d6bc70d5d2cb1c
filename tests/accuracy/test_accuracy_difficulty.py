"""Difficulty-adjusted Brier, peer score, Brier skill score and the ranking simulation (ForecastBench update)."""

from __future__ import annotations

import numpy as np
import pytest

from consistency.accuracy.difficulty import (
    DisconnectedPanelError,
    brier_skill_score,
    difficulty_adjusted_brier,
    mean_brier,
    peer_score,
    two_way_fixed_effects,
)
from consistency.accuracy.inputs import ScoreInputError
from consistency.accuracy.simulation import simulate_ranking_quality


def random_panel(seed: int, n_f: int, n_q: int, density: float):
    """A connected random panel: every forecaster answers question 0, plus random extra pairs."""
    rng = np.random.default_rng(seed)
    obs = rng.random((n_f, n_q)) < density
    obs[:, 0] = True
    obs[0, :] = True
    f, q = np.nonzero(obs)
    b = rng.random(len(f)) ** 2
    perm = rng.permutation(len(f))  # row order must not matter
    return f[perm], q[perm], b[perm]


def dense_ols(f, q, b, n_f, n_q):
    """Reference: dummy-variable OLS by numpy.linalg.lstsq, then the mean(α) = 0 identification."""
    x = np.zeros((len(f), n_f + n_q))
    x[np.arange(len(f)), f] = 1.0
    x[np.arange(len(f)), n_f + q] = 1.0
    coef = np.linalg.lstsq(x, b, rcond=None)[0]
    alpha, gamma = coef[:n_f], coef[n_f:]
    c = alpha.mean()
    return alpha - c, gamma + c


@pytest.mark.parametrize(("seed", "n_f", "n_q"), [(0, 6, 15), (1, 15, 6), (2, 9, 9), (3, 2, 30)])
def test_fixed_effects_equal_dense_ols(seed, n_f, n_q):
    f, q, b = random_panel(seed, n_f, n_q, 0.5)
    fit = two_way_fixed_effects(f, q, b)
    alpha, gamma = dense_ols(f, q, b, n_f, n_q)
    np.testing.assert_allclose(fit.alpha, alpha, atol=1e-10, rtol=0)
    np.testing.assert_allclose(fit.gamma, gamma, atol=1e-10, rtol=0)
    assert abs(fit.alpha.mean()) < 1e-12


def test_iterative_path_matches_dense_ols():
    f, q, b = random_panel(4, 12, 40, 0.4)
    fit = two_way_fixed_effects(f, q, b, dense_limit=0)  # conjugate gradients on the reduced system
    alpha, gamma = dense_ols(f, q, b, 12, 40)
    np.testing.assert_allclose(fit.alpha, alpha, atol=1e-10, rtol=0)
    np.testing.assert_allclose(fit.gamma, gamma, atol=1e-10, rtol=0)


def test_labels_are_arbitrary_and_sorted():
    f, q, b = random_panel(5, 4, 6, 0.7)
    names = np.array(["zed", "amy", "bob", "cat"])
    fit = two_way_fixed_effects(names[f], q * 10, b)
    ref = two_way_fixed_effects(f, q, b)
    order = np.argsort(names)
    assert list(fit.forecasters) == sorted(names)
    np.testing.assert_allclose(fit.alpha, ref.alpha[order], atol=1e-12)
    assert list(fit.questions) == list(np.arange(6) * 10)


def test_full_overlap_gives_the_mean_brier_ranking():
    rng = np.random.default_rng(6)
    n_f, n_q = 8, 20
    f, q = (a.ravel() for a in np.meshgrid(np.arange(n_f), np.arange(n_q), indexing="ij"))
    b = rng.random(n_f * n_q) ** 2
    adj = difficulty_adjusted_brier(f, q, b)
    plain = mean_brier(f, q, b)
    diff = adj.scores - plain.scores
    np.testing.assert_allclose(diff, diff[0], atol=1e-12)
    np.testing.assert_array_equal(adj.ranks, plain.ranks)


def test_always_half_forecaster_scores_a_quarter():
    rng = np.random.default_rng(7)
    n_f, n_q = 6, 25
    outcome_q = (rng.random(n_q) < 0.4).astype(int)
    f, q, _ = random_panel(7, n_f, n_q, 0.5)
    keep = f != 0  # forecaster 0 is re-added below as the always-0.5 forecaster on every question
    f, q = np.concatenate([f[keep], np.zeros(n_q, int)]), np.concatenate([q[keep], np.arange(n_q)])
    prob = np.where(f == 0, 0.5, rng.random(len(f)))
    for kw in ({}, {"market_question": [1, 2, 3], "market_prob": [0.1, 0.5, 0.9], "market_weight": 0.5}):
        res = difficulty_adjusted_brier(f, q, prob=prob, outcome=outcome_q[q], **kw)
        assert res.scores[0] == pytest.approx(0.25, abs=1e-12)
        assert res.shift == pytest.approx(res.gamma.mean(), abs=1e-15)


def test_excluded_forecasters_do_not_change_difficulty_but_are_scored():
    f, q, b = random_panel(8, 7, 18, 0.6)
    stale = 3
    res = difficulty_adjusted_brier(f, q, b, exclude_from_difficulty=[stale])
    keep = f != stale
    without = two_way_fixed_effects(f[keep], q[keep], b[keep])
    np.testing.assert_allclose(res.gamma, without.gamma, atol=1e-12)
    # Their own scores are irrelevant to γ ...
    b2 = np.where(f == stale, 1.0 - b, b)
    again = difficulty_adjusted_brier(f, q, b2, exclude_from_difficulty=[stale])
    np.testing.assert_allclose(again.gamma, res.gamma, atol=1e-14)
    # ... yet they are scored against it: mean of b − γ̂ over their questions, plus the shift.
    mine = f == stale
    expected = np.mean(b[mine] - res.gamma[q[mine]]) + res.gamma.mean()
    assert res.excluded.tolist() == [i == stale for i in range(7)]
    assert res.scores[stale] == pytest.approx(expected, abs=1e-12)
    # Without exclusion γ does move, so the test has teeth.
    assert np.abs(difficulty_adjusted_brier(f, q, b).gamma - res.gamma).max() > 1e-4


def test_disconnected_panel_raises_with_component_sizes():
    f = np.array([0, 0, 1, 1, 1, 2, 3, 3])
    q = np.array([0, 1, 1, 2, 0, 3, 3, 4])
    b = np.linspace(0.1, 0.8, 8)
    with pytest.raises(DisconnectedPanelError) as err:
        difficulty_adjusted_brier(f, q, b)
    assert err.value.components == [(2, 3), (2, 2)]
    assert "2 connected components" in str(err.value)
    assert isinstance(err.value, ScoreInputError)
    # A bridge that exists only through an excluded forecaster does not count.
    f2, q2, b2 = np.append(f, 4), np.append(q, 0), np.append(b, 0.2)
    f2, q2, b2 = np.append(f2, 4), np.append(q2, 3), np.append(b2, 0.3)
    difficulty_adjusted_brier(f2, q2, b2)
    with pytest.raises(DisconnectedPanelError):
        difficulty_adjusted_brier(f2, q2, b2, exclude_from_difficulty=[4])


def test_market_weight_moves_difficulty_towards_the_market():
    f, q, b = random_panel(9, 8, 12, 0.6)
    mq = np.array([2, 5, 7])
    mb = np.array([0.0, 0.9, 0.2])
    fits = [
        difficulty_adjusted_brier(f, q, b, market_question=mq, market_brier=mb, market_weight=w)
        for w in (0.0, 0.25, 0.5, 1.0)
    ]
    ols = fits[0].gamma_ols
    np.testing.assert_allclose(fits[0].gamma, ols, atol=1e-15)
    np.testing.assert_allclose(fits[-1].gamma[mq], mb, atol=1e-15)
    gap = np.array([np.abs(r.gamma[mq] - mb) for r in fits])
    assert np.all(np.diff(gap, axis=0) < 0)  # strictly closer to the market as w grows
    other = np.setdiff1d(np.arange(12), mq)
    for r in fits:
        np.testing.assert_allclose(r.gamma[other], ols[other], atol=1e-15)
    np.testing.assert_allclose(fits[2].gamma[mq], 0.5 * mb + 0.5 * ols[mq], atol=1e-15)


def test_market_only_difficulty_skips_the_regression():
    # Disconnected panel, but with w = 1 every difficulty is the market's, so nothing needs connecting.
    f = np.array([0, 0, 1, 2])
    q = np.array([0, 1, 1, 2])
    b = np.array([0.1, 0.2, 0.3, 0.4])
    mb = np.array([0.05, 0.25, 0.35])
    res = difficulty_adjusted_brier(f, q, b, market_question=[0, 1, 2], market_brier=mb)
    np.testing.assert_allclose(res.alpha, [(0.05 - 0.05) / 2, 0.05, 0.05], atol=1e-15)
    assert np.isnan(res.gamma_ols).all()


def test_peer_score_by_hand():
    f = np.array(["a", "a", "b", "b", "c"])
    q = np.array([1, 2, 1, 2, 2])
    b = np.array([0.1, 0.4, 0.3, 0.2, 0.3])
    res = peer_score(f, q, b)
    # question 1: mean 0.2; question 2: mean 0.3
    np.testing.assert_allclose(
        res.scores, [((0.2 - 0.1) + (0.3 - 0.4)) / 2, ((0.2 - 0.3) + (0.3 - 0.2)) / 2, 0.0], atol=1e-15
    )
    loo = peer_score(f, q, b, leave_one_out=True)
    np.testing.assert_allclose(
        loo.scores, [((0.3 - 0.1) + (0.25 - 0.4)) / 2, ((0.1 - 0.3) + (0.35 - 0.2)) / 2, 0.0], atol=1e-15
    )
    assert res.higher_is_better


def test_brier_skill_scores_by_hand():
    f = np.array(["ref", "ref", "ref", "x", "x", "y"])
    q = np.array([0, 1, 2, 0, 1, 2])
    b = np.array([0.2, 0.0, 0.5, 0.1, 0.3, 0.25])
    pct = brier_skill_score(f, q, b, reference="ref", kind="pct")
    ab = brier_skill_score(f, q, b, reference="ref", kind="abs")
    # pct skips question 1 (b_ref = 0): x uses question 0 only.
    np.testing.assert_allclose(pct.scores, [0.0, 1 - 0.1 / 0.2, 1 - 0.25 / 0.5])
    np.testing.assert_allclose(ab.scores, [0.0, ((0.2 - 0.1) + (0.0 - 0.3)) / 2, 0.25])
    assert pct.n_answered.tolist() == [2, 1, 1]
    with pytest.raises(ScoreInputError, match="reference forecaster 'nobody'"):
        brier_skill_score(f, q, b, reference="nobody")


def test_bad_inputs_raise_precise_errors():
    f = np.array(["a", "b", "b", "c"])
    q = np.array(["q1", "q2", "q2", "q1"])
    with pytest.raises(ScoreInputError, match=r"forecaster 'b' on question 'q2' appears in rows 1 and 2"):
        difficulty_adjusted_brier(f, q, [0.1, 0.2, 0.3, 0.4])
    ok_f, ok_q = np.array(["a", "b", "a", "b"]), np.array(["q1", "q1", "q2", "q2"])
    with pytest.raises(ScoreInputError, match="brier scores must be finite"):
        difficulty_adjusted_brier(ok_f, ok_q, [0.1, np.nan, 0.3, 0.4])
    with pytest.raises(ScoreInputError, match=r"prob must be probabilities in \[0, 1\]"):
        peer_score(ok_f, ok_q, prob=[0.1, 1.2, 0.3, 0.4], outcome=[1, 1, 0, 0])
    with pytest.raises(ScoreInputError, match="question 'q1' has both outcomes"):
        mean_brier(ok_f, ok_q, prob=[0.1, 0.2, 0.3, 0.4], outcome=[1, 0, 0, 0])
    with pytest.raises(ScoreInputError, match="not a resolution"):
        mean_brier(ok_f, ok_q, prob=[0.1, 0.2, 0.3, 0.4], outcome=[1, 1, "maybe", 0])
    with pytest.raises(ScoreInputError, match="either brier scores or prob"):
        mean_brier(ok_f, ok_q, [0.1] * 4, prob=[0.1] * 4, outcome=[1] * 4)
    with pytest.raises(ScoreInputError, match="excluded forecaster 'zz'"):
        difficulty_adjusted_brier(ok_f, ok_q, [0.1] * 4, exclude_from_difficulty=["zz"])
    with pytest.raises(ScoreInputError, match="market_weight"):
        difficulty_adjusted_brier(ok_f, ok_q, [0.1] * 4, market_weight=1.5)
    with pytest.raises(ScoreInputError, match="one length"):
        mean_brier(ok_f, ok_q[:3], [0.1] * 3)


def test_question_answered_only_by_excluded_forecasters_is_an_error():
    f = np.array([0, 0, 1, 1, 2])
    q = np.array([0, 1, 0, 1, 2])
    with pytest.raises(ScoreInputError, match="question 2 is answered only by excluded"):
        difficulty_adjusted_brier(f, q, [0.1, 0.2, 0.3, 0.4, 0.5], exclude_from_difficulty=[2])


def test_simulation_is_seeded_and_shaped():
    kw = {"n_sims": 3, "seed": 11, "top_k": (5, 10)}
    a = simulate_ranking_quality(**kw)
    b = simulate_ranking_quality(**kw)
    assert a.as_dict() == b.as_dict()
    assert a.methods[:4] == ("mean Brier", "peer score", "BSS (pct)", "BSS (abs)")
    assert len(a.methods) == 7 and set(a.top_k) == {5, 10}
    assert np.all((a.spearman >= -1) & (a.spearman <= 1))
    assert "spearman" in str(a)


def test_simulation_difficulty_adjustment_wins_under_drift():
    res = simulate_ranking_quality(
        scheme="rounds",
        n_sims=4,
        seed=3,
        skill_temperature=2.0,
        difficulty_temperature=2.0,
        market_weights=(0.0,),
    ).as_dict()
    assert res["diff.-adj. Brier (w=0)"]["spearman"] > res["mean Brier"]["spearman"] + 0.1


def test_simulation_on_a_complete_matrix_without_overlap_problems():
    # Everyone answers everything: every sensible method recovers the truth exactly.
    rng = np.random.default_rng(12)
    matrix = rng.random((15, 30)) ** 2
    res = simulate_ranking_quality(matrix, questions_per_forecaster=30, n_sims=2, top_k=(5,))
    d = res.as_dict()
    for name in ("mean Brier", "peer score", "BSS (abs)", "diff.-adj. Brier (w=0)"):
        assert d[name]["spearman"] == pytest.approx(1.0)
        assert d[name]["median_displacement"] == 0
