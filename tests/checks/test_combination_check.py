"""COMBINATION: ForecastBench's two-question combinations as a check, against hand computations and brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import minimize

from consistency.checks import COMBINATION, all_checks, get_check
from consistency.checks.combination import DIRECTIONS, field_for_direction
from consistency.metrics import arbitrage, clip_forecasts, frequentist
from consistency.models import tuple_model

FIELDS = COMBINATION.field_names


def test_the_declaration_gives_the_four_joint_worlds_and_the_three_identities():
    # P, Q and the joint outcomes in ForecastBench's direction order: exactly one joint field is true per world.
    assert FIELDS == ("P", "Q", "P_and_Q", "P_and_not_Q", "not_P_and_Q", "not_P_and_not_Q")
    worlds = {tuple(w) for w in COMBINATION.worlds.tolist()}
    assert worlds == {(1, 1, 1, 0, 0, 0), (1, 0, 0, 1, 0, 0), (0, 1, 0, 0, 1, 0), (0, 0, 0, 0, 0, 1)}
    assert len(COMBINATION.constraints) == 3 and all(c.equality for c in COMBINATION.constraints)
    assert [field_for_direction(d) for d in ([1, 1], [1, -1], [-1, 1], [-1, -1])] == list(DIRECTIONS)
    with pytest.raises(ValueError):
        field_for_direction([1, 0])


def test_found_by_every_name_but_not_in_the_default_set():
    for name in ("COMBINATION", "CombinationChecker", "combo", "combination"):
        assert get_check(name) is COMBINATION
    assert COMBINATION not in all_checks()  # no bundled tuples: `cc generate`/`cc attack` defaults leave it out
    assert tuple_model(COMBINATION).check is COMBINATION


def test_resolution_propagates_from_the_two_questions():
    assert COMBINATION.resolve({"P": True, "Q": False}) == {
        "P": True, "Q": False, "P_and_Q": False, "P_and_not_Q": True, "not_P_and_Q": False, "not_P_and_not_Q": False
    }  # fmt: skip
    assert COMBINATION.resolve({"P": True})["not_P_and_Q"] is False
    assert COMBINATION.resolve({"P": True})["P_and_Q"] is None


def _symmetric(a: float) -> float:
    """P = Q = 1/2 and every joint outcome at a: by symmetry the arbitrageur's prices are the uniform
    distribution (joint 1/4, P = Q = 1/2), and in every world one joint market pays log(1/(4a)) and three
    pay log((3/4)/(1 - a)); P and Q are already at their price."""
    return math.log(0.25 / a) + 3 * math.log(0.75 / (1 - a))


@pytest.mark.parametrize("a", [0.1, 0.2, 0.25, 0.3, 0.4])
def test_arbitrage_matches_the_hand_computation_of_the_symmetric_case(a):
    F = np.array([[0.5, 0.5, a, a, a, a]])
    assert arbitrage(F, COMBINATION.worlds).violation[0] == pytest.approx(_symmetric(a), abs=1e-9)
    expected_freq = abs(4 * a - 1) / math.sqrt(4 * a * (1 - a) + 1e-3)  # the sum identity binds
    assert frequentist(F, COMBINATION.constraints, FIELDS)[0] == pytest.approx(expected_freq, rel=1e-12)


def test_frequentist_matches_the_hand_computation():
    F = np.array([[0.6, 0.5, 0.3, 0.2, 0.2, 0.2]])
    # P − PQ − P¬Q = 0.1 with variance 0.6·0.4 + 0.3·0.7 + 0.2·0.8; the sum identity is off by 0.1 with
    # variance 0.21 + 3·0.16; Q's identity holds. The metric is the largest, plus β = 1e-3 inside the root.
    first = 0.1 / math.sqrt(0.24 + 0.21 + 0.16 + 1e-3)
    third = 0.1 / math.sqrt(0.21 + 3 * 0.16 + 1e-3)
    assert frequentist(F, COMBINATION.constraints, FIELDS)[0] == pytest.approx(max(first, third), rel=1e-12)


def _profits(prices: np.ndarray, forecasts: np.ndarray) -> np.ndarray:
    """The arbitrageur's log-score profit in each of the four worlds at ``prices``."""
    return np.array([
        np.where(w == 1, np.log(prices / forecasts), np.log((1 - prices) / (1 - forecasts))).sum()
        for w in COMBINATION.worlds
    ])  # fmt: skip


def _profit(prices: np.ndarray, forecasts: np.ndarray) -> float:
    return float(_profits(prices, forecasts).min())


def _dual_grid(forecasts: np.ndarray, step: int = 60) -> float:
    """min over distributions λ on the worlds of Σ KL(q_i(λ) ‖ p_i): an upper bound found by brute force."""
    best = np.inf
    W = COMBINATION.worlds.astype(float)
    for a, b, c in itertools.product(range(step + 1), repeat=3):
        if a + b + c > step:
            continue
        lam = np.array([a, b, c, step - a - b - c]) / step
        q = np.clip(lam @ W, 1e-12, 1 - 1e-12)
        kl = q * np.log(q / forecasts) + (1 - q) * np.log((1 - q) / (1 - forecasts))
        best = min(best, float(kl.sum()))
    return best


@pytest.mark.parametrize("seed", range(6))
def test_arbitrage_lies_between_a_brute_force_primal_and_dual(seed):
    rng = np.random.default_rng(seed)
    F = clip_forecasts(rng.uniform(0.05, 0.95, size=(1, 6)))
    exact = arbitrage(F, COMBINATION.worlds)
    V = float(exact.violation[0])
    # Primal: the best guaranteed profit a generic optimiser finds (max t with every world's profit ≥ t,
    # over prices in logits) from several starts is at most V, and close to it.
    found = -np.inf
    for start in rng.uniform(-1, 1, size=(4, 6)):
        res = minimize(
            lambda x: -x[-1], np.append(start, -1.0), method="SLSQP",
            constraints={"type": "ineq", "fun": lambda x: _profits(1 / (1 + np.exp(-x[:-1])), F[0]) - x[-1]},
            options={"maxiter": 500, "ftol": 1e-12},
        )  # fmt: skip
        found = max(found, _profit(1 / (1 + np.exp(-res.x[:-1])), F[0]))
    assert found <= V + 1e-9
    assert found >= V - 2e-3
    # The certificate: at the returned prices every world pays at least V.
    assert _profit(exact.prices[0], F[0]) >= V - 1e-9
    # Dual: a grid over the world distributions bounds V from above (weak duality), closely.
    upper = _dual_grid(F[0])
    assert upper + 1e-9 >= V
    assert upper - V < 5e-3


def test_coherent_forecasts_have_no_violation():
    rng = np.random.default_rng(3)
    F = np.clip(COMBINATION.coherent_sample(50, rng), 1e-3, 1 - 1e-3)
    keep = COMBINATION.condition_holds(F, tol=1e-12)
    assert keep.sum() > 40
    assert np.all(arbitrage(F[keep], COMBINATION.worlds).violation <= 1e-9)
    assert np.all(frequentist(F[keep], COMBINATION.constraints, FIELDS) <= 1e-9)
