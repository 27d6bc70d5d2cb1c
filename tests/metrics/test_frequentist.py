"""The frequentist metric, derived by a generic delta method, equals appendix E's formulas."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from consistency.checks import get_check
from consistency.metrics import FrequentistParams, frequentist

B = 1e-3


def v(x):
    return x * (1 - x)


def appendix_e(name: str, F: np.ndarray) -> np.ndarray:
    """Appendix E written out by hand, one formula per check (β = 1e-3)."""
    c = F.T
    if name == "NEGATION":
        p, n = c
        return np.abs(p + n - 1) / np.sqrt(v(p) + v(n) + B)
    if name == "PARAPHRASE":
        p, q = c
        return np.abs(p - q) / np.sqrt(v(p) + v(q) + B)
    if name == "CONSEQUENCE":
        p, q = c
        return (p > q) * np.abs(p - q) / np.sqrt(v(p) + v(q) + B)
    if name == "ANDOR":
        p, q, a, o = c
        return np.abs(p + q - o - a) / np.sqrt(v(p) + v(q) + v(o) + v(a) + B)
    if name == "BUT":
        p, qnp, o = c
        return np.abs(o - p - qnp) / np.sqrt(v(o) + v(p) + v(qnp) + B)
    if name == "COND":
        a, b, cc = c
        return np.abs(a * b - cc) / np.sqrt(a * b * (a * (1 - b) + b * (1 - a)) + v(cc) + B)
    if name == "CONDCOND":
        a, b, cc, d = c
        cyc = b * cc * (1 - a) + a * cc * (1 - b) + a * b * (1 - cc)
        return np.abs(a * b * cc - d) / np.sqrt(a * b * cc * cyc + v(d) + B)
    if name == "EXPEVIDENCE":
        a, d, b, cc = c  # fields P, Q, P_given_Q, P_given_not_Q
        var = v(a) + d**2 * v(b) + (1 - d) ** 2 * v(cc) + (b - cc) ** 2 * v(d)
        return np.abs(b * d + cc * (1 - d) - a) / np.sqrt(var + B)
    if name == "AND":
        p, q, pq = c
        lhs = (p + q - 1 > pq) * (p + q - 1 - pq) / np.sqrt(v(p) + v(q) + v(pq) + B)
        r = np.minimum(p, q)
        rhs = (r < pq) * (pq - r) / np.sqrt(v(pq) + v(r) + B)
        return np.maximum(lhs, rhs)
    if name == "OR":
        p, q, o = c
        s = np.maximum(p, q)
        lhs = (s > o) * (s - o) / np.sqrt(v(s) + v(o) + B)
        rhs = (p + q < o) * (o - p - q) / np.sqrt(v(o) + v(p) + v(q) + B)
        return np.maximum(lhs, rhs)
    raise AssertionError(name)


NAMES = ["NEGATION", "PARAPHRASE", "CONSEQUENCE", "AND", "OR", "ANDOR", "BUT", "COND", "CONDCOND", "EXPEVIDENCE"]


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_equals_appendix_e(name, data):
    check = get_check(name)
    F = data.draw(arrays(float, (20, check.n_fields), elements=st.floats(0.0, 1.0)))
    got = frequentist(F, check.constraints, check.field_names)
    np.testing.assert_allclose(got, appendix_e(name, F), atol=1e-12)


def test_threshold_and_paper_example():
    assert FrequentistParams().threshold == pytest.approx(0.129)
    neg = get_check("neg")
    # (0.5, 0.59) sits just under the threshold, as the paper says.
    value = frequentist(np.array([[0.5, 0.59]]), neg.constraints, neg.field_names)[0]
    assert value == pytest.approx(0.128, abs=5e-4)
    assert value < FrequentistParams().threshold


@pytest.mark.parametrize("name", NAMES)
def test_zero_for_coherent_forecasts(name):
    check = get_check(name)
    F = check.coherent_sample(500, np.random.default_rng(4))
    assert np.all(frequentist(F, check.constraints, check.field_names) <= 1e-9)
