"""Properties of the exact arbitrage metric, on every built-in check."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from consistency.checks import all_checks, get_check
from consistency.metrics import arbitrage, clip_forecasts
from consistency.metrics.closed_forms import closed_form

CHECKS = all_checks()
NAMES = [c.name for c in CHECKS]
probability = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
interior = st.floats(min_value=1e-4, max_value=1 - 1e-4, allow_nan=False)


def forecasts(check, elements=probability, rows=(1, 40)):
    return arrays(float, st.tuples(st.integers(*rows), st.just(check.n_fields)), elements=elements)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_violation_nonnegative_and_certified(name, data):
    check = get_check(name)
    F = data.draw(forecasts(check))
    result = arbitrage(F, check.worlds)
    assert np.all(result.violation >= 0)
    assert np.all(result.gap <= 1e-9)
    # The prices really guarantee V: profit in every possible world is at least V (checked
    # independently where float prices can represent 1 - p).
    ok = np.all((result.prices > 1e-9) & (result.prices < 1 - 1e-9), axis=1)
    profits = _profits(check.worlds, result.prices[ok], clip_forecasts(F[ok]))
    assert np.all(profits >= result.violation[ok, None] - 1e-6)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), size=st.integers(1, 50))
def test_coherent_forecasts_have_no_arbitrage(name, seed, size):
    check = get_check(name)
    F = check.coherent_sample(size, np.random.default_rng(seed))
    F = np.clip(F, 1e-3, 1 - 1e-3)  # clipping keeps them away from ε-moves, which break coherence
    keep = check.condition_holds(F, tol=1e-12)
    assert np.all(arbitrage(F[keep], check.worlds).violation <= 1e-9)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_broken_condition_means_positive_arbitrage(name, data):
    check = get_check(name)
    F = data.draw(forecasts(check, interior))
    env = {n: F[:, i] for i, n in enumerate(check.field_names)}
    broken = np.zeros(len(F), dtype=bool)
    for c in check.constraints:
        g, _ = c.residual(env)
        broken |= (np.abs(g) > 1e-3) if c.equality else (g > 1e-3)
    V = arbitrage(F, check.worlds).violation
    assert np.all(V[broken] > 0)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_reordering_fields_changes_nothing(name, data):
    check = get_check(name)
    F = data.draw(forecasts(check))
    perm = data.draw(st.permutations(range(check.n_fields)))
    w = data.draw(arrays(float, check.n_fields, elements=st.floats(0.2, 5.0)))
    base = arbitrage(F, check.worlds, w)
    moved = arbitrage(F[:, perm], check.worlds[:, perm], w[perm])
    np.testing.assert_allclose(moved.violation, base.violation, rtol=1e-9, atol=1e-9)
    # Optimal prices are unique when there is something to gain (V > 0); at V = 0 any
    # coherent prices are optimal and we return the forecasts themselves.
    unique = base.violation > 1e-6
    np.testing.assert_allclose(moved.prices[unique], base.prices[unique][:, perm], atol=1e-6)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=30, deadline=None)
@given(data=st.data(), scale=st.floats(0.1, 10.0))
def test_weights_scale_linearly(name, data, scale):
    check = get_check(name)
    F = data.draw(forecasts(check))
    w = data.draw(arrays(float, check.n_fields, elements=st.floats(0.2, 5.0)))
    scaled = arbitrage(F, check.worlds, scale * w)
    assert np.all(scaled.gap <= 1e-9 * scale)
    np.testing.assert_allclose(scaled.violation, scale * arbitrage(F, check.worlds, w).violation, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_integer_weight_equals_duplicated_market(name, data):
    """Weight 2 on a field pays like two markets on the same question."""
    check = get_check(name)
    F = data.draw(forecasts(check))
    i = data.draw(st.integers(0, check.n_fields - 1))
    w = np.ones(check.n_fields)
    w[i] = 2.0
    doubled = arbitrage(np.hstack([F, F[:, [i]]]), np.hstack([check.worlds, check.worlds[:, [i]]]))
    np.testing.assert_allclose(arbitrage(F, check.worlds, w).violation, doubled.violation, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", ["NEGATION", "PARAPHRASE", "COND"])
def test_matches_closed_forms(name):
    check = get_check(name)
    rng = np.random.default_rng(1)
    F = np.vstack(
        [rng.random((5000, check.n_fields)), rng.choice([0.0, 0.001, 0.5, 0.999, 1.0], (500, check.n_fields))]
    )
    np.testing.assert_allclose(arbitrage(F, check.worlds).violation, closed_form(name, F), atol=1e-10)


def test_paper_examples():
    neg = get_check("neg")
    V = arbitrage(np.array([[0.5, 0.6], [0.5, 0.51]]), neg.worlds).violation
    assert V[0] == pytest.approx(0.01, abs=1e-3) and V[1] == pytest.approx(1e-4, rel=0.1)
    # Appendix D.1: paraphrases at 0.7 and 0.4 give a guaranteed profit of about 0.095 at price 0.555.
    para = arbitrage(np.array([[0.7, 0.4]]), get_check("para").worlds)
    assert para.violation[0] == pytest.approx(0.095, abs=1e-3)
    assert para.prices[0] == pytest.approx([0.555, 0.555], abs=1e-3)


def test_epsilon_moves_only_exact_zero_and_one():
    neg = get_check("neg")
    exact = arbitrage(np.array([[1.0, 1.0]]), neg.worlds, epsilon=1e-3)
    assert exact.violation[0] == pytest.approx(closed_form("NEGATION", np.array([[0.999, 0.999]]))[0])
    assert exact.epsilon == 1e-3
    assert arbitrage(np.array([[1e-20, 1e-20]]), neg.worlds).violation[0] == pytest.approx(
        closed_form("NEGATION", np.array([[1e-12, 1e-12]]))[0]
    )
    tiny = arbitrage(np.array([[1e-6, 1e-6]]), neg.worlds, epsilon=1e-3)
    a = np.array([[1e-6, 1e-6]])
    assert tiny.violation[0] == pytest.approx(
        -2 * np.log(np.sqrt(a[0, 0] * (1 - a[0, 1])) + np.sqrt((1 - a[0, 0]) * a[0, 1]))
    )
    other = arbitrage(np.array([[0.0, 0.0]]), neg.worlds, epsilon=0.01)
    expected = -2 * np.log(np.sqrt(0.01 * 0.99) * 2)
    assert other.violation[0] == pytest.approx(expected, rel=1e-9)
    np.testing.assert_allclose(other.prices, [[0.5, 0.5]], atol=1e-9)


def test_scaled_divides_by_number_of_fields():
    check = get_check("condcond")
    F = np.random.default_rng(2).random((100, 4))
    r = arbitrage(F, check.worlds)
    np.testing.assert_allclose(r.scaled, r.violation / 4)


def test_rejects_bad_arguments():
    neg = get_check("neg")
    with pytest.raises(ValueError, match="finite and in"):
        arbitrage(np.array([[np.nan, 0.5]]), neg.worlds)
    with pytest.raises(ValueError, match="shape"):
        arbitrage(np.array([[0.5, 0.5, 0.5]]), neg.worlds)
    with pytest.raises(ValueError, match="positive"):
        arbitrage(np.array([[0.5, 0.5]]), neg.worlds, np.array([1.0, 0.0]))
    assert arbitrage(np.zeros((0, 2)), neg.worlds).violation.shape == (0,)


def _profits(worlds: np.ndarray, p: np.ndarray, F: np.ndarray) -> np.ndarray:
    t = (worlds == 1).astype(float)
    f = (worlds == 0).astype(float)
    return (np.log(p) - np.log(F)) @ t.T + (np.log1p(-p) - np.log1p(-F)) @ f.T


def test_blocks_of_tuples_give_the_same_results(monkeypatch):
    """Large inputs are solved in blocks (for speed); where the blocks split changes nothing."""
    import importlib

    module = importlib.import_module("consistency.metrics.arbitrage")
    rng = np.random.default_rng(12)
    for check in (get_check("ANDOR"), get_check("COND")):
        F = rng.random((1000, check.n_fields))
        w = rng.uniform(0.5, 2.0, size=F.shape)
        whole = arbitrage(F, check.worlds, w)
        monkeypatch.setattr(module, "_BLOCK", 97)
        split = arbitrage(F, check.worlds, w)
        monkeypatch.undo()
        assert split.violation.shape == (1000,) and split.prices.shape == F.shape
        np.testing.assert_allclose(split.violation, whole.violation, rtol=0, atol=1e-12)
        np.testing.assert_allclose(split.prices, whole.prices, rtol=0, atol=1e-9)
        assert split.gap.max() <= 1e-9
