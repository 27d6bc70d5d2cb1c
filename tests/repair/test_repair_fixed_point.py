"""The conditional checks' Brier fixed point q = Π_{H(q)}(p), solved face by face: exact, and deterministic where
it is not unique (a condition of probability 0 or 1 leaves a conditional value free over an interval)."""

from __future__ import annotations

import numpy as np
import pytest

from consistency.checks import get_check
from consistency.checks.check import NONE
from consistency.repair import repair_tuples
from consistency.repair.fixed_point import FacePlan
from consistency.repair.tuples import ConditionalPlan

CONDITIONAL = ["COND", "CONDCOND", "EXPEVIDENCE"]


def optimality(worlds: np.ndarray, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """max over worlds of <p - q, ω̃(q) - q>: <= 0 exactly when q is the projection of p onto H(q)."""
    W = np.where(worlds[None] == NONE, q[:, None, :], worlds[None]).astype(float)
    return np.einsum("rd,rkd->rk", p - q, W - q[:, None, :]).max(axis=1)


def in_hull(worlds: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Distance from q to H(q) (0 when q is coherent), by the exact projection."""
    from consistency.repair.polytope import project_each

    W = np.where(worlds[None] == NONE, q[:, None, :], worlds[None]).astype(float)
    return np.abs(project_each(q, W)[0] - q).max(axis=1)


def mixed(check, n: int, seed: int) -> np.ndarray:
    """Uniform forecasts, rounded ones with exact 0 and 1, coherent ones, coherent ones rounded."""
    rng = np.random.default_rng(seed)
    rounded = np.round(rng.random((n, check.n_fields)) * 1.2 - 0.1, 1).clip(0, 1)
    coherent = check.coherent_sample(n, rng)
    return np.vstack([rng.random((n, check.n_fields)), rounded, coherent, coherent.round(1)])


@pytest.mark.parametrize("name", CONDITIONAL)
def test_every_row_is_an_exact_fixed_point(name):
    check = get_check(name)
    p = mixed(check, 3000, seed=1)
    q = repair_tuples(check, p).repaired
    assert optimality(check.worlds, p, q).max() <= 1e-11
    assert in_hull(check.worlds, q).max() <= 1e-11
    assert check.condition_holds(q, tol=1e-9).all()


@pytest.mark.parametrize("name", CONDITIONAL)
def test_the_face_solver_leaves_few_rows_to_the_fallback(name):
    check = get_check(name)
    p = mixed(check, 3000, seed=2)
    plan = FacePlan.of(check.worlds)
    _, _, done, _ = plan.solve(p, np.clip(p[:, plan.cols], 0, 1))
    assert done.mean() >= 0.99


@pytest.mark.parametrize("name", CONDITIONAL)
def test_targets_outside_the_box_as_in_a_joint_repair(name):
    check = get_check(name)
    rng = np.random.default_rng(3)
    p = rng.random((3000, check.n_fields)) * 1.6 - 0.3
    q = ConditionalPlan.of(check.worlds).fixed_point(p)[0]
    assert optimality(check.worlds, p, q).max() <= 1e-11
    assert in_hull(check.worlds, q).max() <= 1e-11


def interval(worlds: np.ndarray, p: np.ndarray, q_of_c, grid: np.ndarray) -> np.ndarray:
    """The values c on ``grid`` at which q_of_c(c) is a fixed point for p (optimality and coherence)."""
    ok = []
    for c in grid:
        q = q_of_c(c)[None]
        ok.append(optimality(worlds, p[None], q)[0] <= 1e-12 and in_hull(worlds, q)[0] <= 1e-12)
    return grid[np.array(ok)]


def test_probability_one_condition_leaves_an_interval_and_the_nearest_value_is_taken():
    """EXPEVIDENCE with Q = 1: P given not Q is free. For p = (0.3, 1, 0.5, 0.7) the projection lies on the edge
    of the Q-worlds, q = (0.4, 1, 0.4, c), and c is a fixed point for c in [(1.7 - √0.33)/2, (0.7 + √0.33)/2]
    (the worlds with Q false bound it): the repair takes the value nearest its start."""
    check = get_check("EXPEVIDENCE")
    p = np.array([0.3, 1.0, 0.5, 0.7])
    lo, hi = (1.7 - np.sqrt(0.33)) / 2, (0.7 + np.sqrt(0.33)) / 2
    grid = np.linspace(0, 1, 2001)
    found = interval(check.worlds, p, lambda c: np.array([0.4, 1.0, 0.4, c]), grid)
    assert found.min() == pytest.approx(lo, abs=1e-3) and found.max() == pytest.approx(hi, abs=1e-3)
    plan = ConditionalPlan.of(check.worlds)
    j = list(plan.cols).index(3)
    for start, expected in ((0.7, hi), (0.1, lo), (0.6, 0.6), (lo, lo)):
        c0 = np.array([[0.4, 0.4]])
        c0[0, j] = start
        q = plan.fixed_point(p[None], start=c0)[0][0]
        np.testing.assert_allclose(q, [0.4, 1.0, 0.4, expected], atol=1e-12)
    # The default start is the forecasts' own values: p_4 = 0.7, so the upper end.
    np.testing.assert_allclose(repair_tuples(check, p[None]).repaired[0], [0.4, 1.0, 0.4, hi], atol=1e-12)


def test_probability_zero_condition_leaves_an_interval_in_a_joint_target():
    """COND with a target P < 0 (a joint repair's local target): q = (0, c, 0) and Q given P is free on an
    interval; each value in it is a fixed point, and the one nearest the start is returned."""
    check = get_check("COND")
    p = np.array([-0.1, 0.5, -0.1])
    grid = np.linspace(0, 1, 2001)
    found = interval(check.worlds, p, lambda c: np.array([0.0, c, 0.0]), grid)
    # g(TT) = -0.2 + (0.5 - c)(1 - c) <= 0 and g(TF) = -0.1 + (0.5 - c) c... both quadratics: [lo, hi]
    lo, hi = (1.5 - np.sqrt(1.05)) / 2, (0.5 + np.sqrt(0.65)) / 2
    assert found.min() == pytest.approx(lo, abs=1e-3) and found.max() == pytest.approx(hi, abs=1e-3)
    plan = ConditionalPlan.of(check.worlds)
    for start, expected in ((0.0, lo), (1.0, hi), (0.5, 0.5)):
        q = plan.fixed_point(p[None], start=np.array([[start]]))[0][0]
        np.testing.assert_allclose(q, [0.0, expected, 0.0], atol=1e-12)


def test_two_free_values_start_where_the_start_is_a_fixed_point():
    """CONDCOND with P < 0 in the target: both conditional values are free on a region; a start inside it is
    kept, one outside it moves into it (deterministically)."""
    check = get_check("CONDCOND")
    p = np.array([-0.2, 0.5, 0.5, 0.0])
    plan = ConditionalPlan.of(check.worlds)
    kept = plan.fixed_point(p[None], start=np.array([[0.45, 0.55]]))[0][0]
    np.testing.assert_allclose(kept, [0.0, 0.45, 0.55, 0.0], atol=1e-12)
    moved = plan.fixed_point(p[None], start=np.array([[0.0, 1.0]]))[0]
    assert optimality(check.worlds, p[None], moved)[0] <= 1e-12
    again = plan.fixed_point(p[None], start=np.array([[0.0, 1.0]]))[0]
    np.testing.assert_array_equal(moved, again)


@pytest.mark.parametrize("name", CONDITIONAL)
def test_a_fixed_point_as_start_is_returned_as_it_is(name):
    """The joint repair's outer iterations pass the last values as the start: where they are still a fixed point
    for the new target, nothing moves (so the iterations settle)."""
    check = get_check(name)
    plan = ConditionalPlan.of(check.worlds)
    p = mixed(check, 500, seed=4)
    q = plan.fixed_point(p)[0]
    again = plan.fixed_point(p, start=q[:, plan.cols])[0]
    np.testing.assert_allclose(again, q, atol=1e-11)


@pytest.mark.parametrize("name", ["NEGATION", "OR", "ANDOR", "BUT", "COND", "CONDCOND", "EXPEVIDENCE", "MONOTONE"])
def test_log_repair_prices_keep_their_guarantee_as_returned(name):
    """Forecasts within 1e-3..1e-12 of 0 or 1: the arbitrage prices rounded to the nearest float guaranteed up to
    2e-3 nats less than the profit V (a price rounded to 1 is even scored as the clipped 1 - 1e-3); moved toward
    1/2 by a few units in the last place they guarantee V, up to the log score's clipping at 1e-12 per field."""
    from consistency.metrics import arbitrage
    from consistency.repair import guaranteed_improvement

    check = get_check(name)
    rng = np.random.default_rng(7)
    N = 20000
    edge = 10.0 ** -rng.uniform(3, 12, (N, check.n_fields))
    p = np.where(rng.random((N, check.n_fields)) < 0.5, edge, 1 - edge)
    p = np.where(rng.random((N, check.n_fields)) < 0.3, rng.random((N, check.n_fields)), p)
    result = repair_tuples(check, p, "log")
    assert np.all(result.guaranteed >= result.moved - 1e-12 * check.n_fields)
    raw = arbitrage(p, check.worlds).prices  # the prices as the solver rounds them
    np.testing.assert_allclose(result.repaired, raw, atol=1e-15, rtol=0)
    assert (guaranteed_improvement(check, p, raw, "log") < result.moved - 1e-6).any()  # what was lost before
