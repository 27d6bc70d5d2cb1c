"""MONOTONE's declaration and the metrics derived from it, against hand computations and brute force over worlds."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from consistency.checks import MONOTONE, PAPER_CHECKS, all_checks, chain_fields, get_check, monotone_check
from consistency.checks.builtin import BUILTIN_CHECKS
from consistency.metrics import arbitrage, frequentist
from consistency.metrics.arbitrage import clip_forecasts


def test_declaration_worlds_condition_and_names():
    assert MONOTONE.field_names == ("P_1", "P_2", "P_3")
    # worlds FFF, FFT, FTT, TTT (in the solver's order: the assumption forbids every other row)
    assert {tuple(w) for w in MONOTONE.worlds.tolist()} == {(0, 0, 0), (0, 0, 1), (0, 1, 1), (1, 1, 1)}
    assert [str(c) for c in MONOTONE.constraints] == ["P_1 ≤ P_2", "P_2 ≤ P_3"]
    assert MONOTONE.class_name == "MonotoneChecker"
    for name in ("MONOTONE", "monotone", "mono", "MonotoneChecker", "MonotoneChecker.jsonl"):
        assert get_check(name) is MONOTONE
    assert chain_fields(MONOTONE) == ("P_1", "P_2", "P_3")
    assert all(chain_fields(c) is None for c in PAPER_CHECKS)
    # builtin but not one of the paper's ten, which keep their order
    assert [c.name for c in PAPER_CHECKS] == [c.name for c in all_checks()][:10]
    assert BUILTIN_CHECKS[-1] is MONOTONE and MONOTONE not in PAPER_CHECKS


@pytest.fixture
def registry(monkeypatch):
    """Checks registered by a test are forgotten after it (other tests enumerate the registry)."""
    import consistency.checks as checks

    monkeypatch.setattr(checks, "_CHECKS", dict(checks._CHECKS))
    monkeypatch.setattr(checks, "_NAMES", dict(checks._NAMES))


def test_longer_chains_come_from_the_factory_by_name(registry):
    m5 = get_check("MONOTONE5")
    assert m5 is get_check("mono5") is get_check("Monotone5Checker") is monotone_check(5)
    assert m5.field_names == tuple(f"P_{i}" for i in range(1, 6))
    assert len(m5.worlds) == 6 and len(m5.constraints) == 4
    assert m5 in all_checks()
    with pytest.raises(KeyError, match="3 to 8"):
        get_check("MONOTONE2")
    with pytest.raises(KeyError, match="unknown check"):
        get_check("monotonous")


def test_resolution_propagates_both_ways():
    assert MONOTONE.resolve({"P_1": True}) == {"P_1": True, "P_2": True, "P_3": True}
    assert MONOTONE.resolve({"P_1": False}) == {"P_1": False, "P_2": None, "P_3": None}
    assert MONOTONE.resolve({"P_3": False}) == {"P_1": False, "P_2": False, "P_3": False}
    assert MONOTONE.resolve({"P_2": True}) == {"P_1": None, "P_2": True, "P_3": True}
    with pytest.raises(ValueError, match="impossible"):
        MONOTONE.resolve({"P_1": True, "P_3": False})


def _pava(F: np.ndarray) -> float:
    """Hand computation: V = min over nondecreasing q of Σ KL(q_i ‖ F_i), by pooling adjacent violators. A pooled
    block of m forecasts prices at G/(G + G'), G and G' the geometric means of F and 1 - F, and costs -m log(G + G')."""
    blocks: list[list[float]] = []
    for f in F:
        blocks.append([f])
        while len(blocks) > 1 and _price(blocks[-2]) > _price(blocks[-1]):
            blocks[-2:] = [blocks[-2] + blocks[-1]]
    return sum(_cost(b) for b in blocks)


def _geo(b):
    b = np.asarray(b)
    return np.exp(np.log(b).mean()), np.exp(np.log1p(-b).mean())


def _price(b) -> float:
    g, h = _geo(b)
    return g / (g + h)


def _cost(b) -> float:
    g, h = _geo(b)
    return -len(b) * np.log(g + h)


def _brute(F: np.ndarray, worlds: np.ndarray) -> float:
    """Brute force over worlds: max over prices p of the worst profit over the possible worlds (epigraph form)."""
    T, Fl = worlds == 1, worlds == 0

    def profits(p):
        return (T * np.log(p / F) + Fl * np.log((1 - p) / (1 - F))).sum(axis=1)

    best = 0.0
    for start in (F, np.full_like(F, 0.5), np.sort(F)):
        x0 = np.append(np.clip(start, 0.02, 0.98), 0.0)
        cons = {"type": "ineq", "fun": lambda x: profits(x[:-1]) - x[-1]}
        res = minimize(lambda x: -x[-1], x0, constraints=[cons], bounds=[(1e-6, 1 - 1e-6)] * len(F) + [(None, None)],
                       method="SLSQP", options={"ftol": 1e-14, "maxiter": 500})  # fmt: skip
        best = max(best, profits(res.x[:-1]).min())
    return best


HAND = [
    # only P_1 > P_2: P_1 and P_2 pool to one price, P_3 keeps its forecast
    ((0.6, 0.4, 0.9), -2 * np.log(2 * np.sqrt(0.24))),
    # all three reversed: one pool of three
    ((0.9, 0.5, 0.2), -3 * np.log((0.9 * 0.5 * 0.2) ** (1 / 3) + (0.1 * 0.5 * 0.8) ** (1 / 3))),
    # only P_2 > P_3
    ((0.1, 0.7, 0.3), -2 * np.log(np.sqrt(0.7 * 0.3) + np.sqrt(0.3 * 0.7))),
    # coherent: nothing to gain
    ((0.2, 0.5, 0.5), 0.0),
]


@pytest.mark.parametrize(("probs", "expected"), HAND)
def test_arbitrage_equals_hand_computations(probs, expected):
    F = np.array([probs])
    result = arbitrage(F, MONOTONE.worlds)
    assert result.violation[0] == pytest.approx(expected, abs=1e-9)
    assert result.violation[0] == pytest.approx(_pava(np.array(probs)), abs=1e-9)
    assert result.gap[0] <= 1e-9
    assert np.all(np.diff(result.prices[0]) >= -1e-9)  # the arbitrageur's prices are a monotone chain


@pytest.mark.parametrize("k", [3, 4, 5])
def test_arbitrage_equals_pava_and_brute_force_over_worlds(k):
    check = monotone_check(k)
    rng = np.random.default_rng(k)
    F = np.vstack([rng.uniform(0.02, 0.98, (40, k)), np.sort(rng.uniform(0.02, 0.98, (5, k)), axis=1)])
    result = arbitrage(F, check.worlds)
    expected = np.array([_pava(row) for row in clip_forecasts(F)])
    assert np.allclose(result.violation, expected, atol=1e-9, rtol=0)
    assert np.all(result.violation[-5:] <= 1e-12)  # sorted forecasts are coherent
    for row in range(0, 45, 9):  # the slow oracle on a few
        assert result.violation[row] == pytest.approx(_brute(F[row], check.worlds), abs=1e-6)


def test_fast_face_path_agrees_with_the_active_set_solver():
    rng = np.random.default_rng(7)
    F = rng.uniform(0, 1, (2000, 3))
    F[:100] = rng.choice([0.0, 1.0, 1e-9, 0.5], (100, 3))  # clipped and extreme forecasts
    weights = rng.uniform(0.5, 4.0, F.shape)
    for w in (None, weights):
        fast = arbitrage(F, MONOTONE.worlds, w)
        slow = arbitrage(F, MONOTONE.worlds, w, faces=False)
        assert np.allclose(fast.violation, slow.violation, atol=1e-9, rtol=1e-9)
        assert np.all(fast.gap <= 1e-9) and np.all(slow.gap <= 1e-9)


def test_frequentist_equals_the_hand_formula():
    F = np.array([[0.6, 0.4, 0.9], [0.2, 0.9, 0.3], [0.1, 0.2, 0.3], [0.7, 0.5, 0.1]])
    got = frequentist(F, MONOTONE.constraints, MONOTONE.field_names)
    beta = 1e-3

    def z(a, b):  # one-sided: only a > b counts
        return max(a - b, 0.0) / np.sqrt(a * (1 - a) + b * (1 - b) + beta)

    expected = [max(z(a, b), z(b, c)) for a, b, c in F]
    assert np.allclose(got, expected, atol=1e-12)
    assert got[2] == 0.0


def test_coherent_samples_pass_both_metrics():
    rng = np.random.default_rng(3)
    for k in (3, 4, 6):
        check = monotone_check(k)
        sample = check.coherent_sample(500, rng)
        assert np.all(np.diff(sample, axis=1) >= -1e-12)
        assert np.all(arbitrage(sample, check.worlds).violation <= 1e-9)
        assert np.all(frequentist(sample, check.constraints, check.field_names) <= 1e-9)
