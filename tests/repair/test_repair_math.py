"""Per-tuple repair (consistency.repair.repair_tuples): its guarantees, on every registered check."""

from __future__ import annotations

import numpy as np
import pytest

from consistency.checks import Check, all_checks
from consistency.checks.check import NONE, TRUE
from consistency.metrics import arbitrage
from consistency.repair import guaranteed_improvement, repair_tuples

# A chain of three nested events (what MONOTONE declares for three horizons), declared here so the
# repair is tested on a k + 1-world simplex whatever the registry holds.
CHAIN3 = Check(
    "CHAIN3_TEST",
    {"P": "P", "Q": "Q", "R": "R"},
    assume="(P implies Q) and (Q implies R)",
    condition="P <= Q <= R",
)
CHECKS = [*all_checks(), CHAIN3]
IDS = [c.name for c in CHECKS]


def incoherent(check: Check, n: int, seed: int) -> np.ndarray:
    """Uniform forecasts, plus LLM-style rounded ones with exact 0 and 1."""
    rng = np.random.default_rng(seed)
    rounded = np.round(rng.random((n // 4, check.n_fields)) * 1.2 - 0.1, 1).clip(0, 1)
    return np.vstack([rng.random((n - len(rounded), check.n_fields)), rounded])


def improvements(check: Check, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Brier loss improvement in every world, on the fields resolving there (shape (N, k)), computed directly."""
    out = np.empty((len(p), len(check.worlds)))
    for w, world in enumerate(check.worlds):
        res = world != NONE
        o = (world == TRUE).astype(float)
        out[:, w] = (((p - o) ** 2 - (q - o) ** 2) * res).sum(axis=1)
    return out


@pytest.mark.parametrize("check", CHECKS, ids=IDS)
def test_brier_repair_improves_in_every_world_by_the_distance_moved(check):
    p = incoherent(check, 3000, seed=1)
    result = repair_tuples(check, p, "brier")
    q = result.repaired
    assert q.shape == p.shape and np.all((q >= 0) & (q <= 1))
    gain = improvements(check, p, q)
    resolving = (check.worlds != NONE).astype(float)
    moved_there = ((p - q) ** 2) @ resolving.T
    assert np.all(gain >= moved_there - 1e-9)
    assert np.all(gain >= -1e-12)
    np.testing.assert_allclose(result.moved, ((p - q) ** 2).sum(axis=1), atol=1e-15)
    np.testing.assert_allclose(result.guaranteed, gain.min(axis=1), atol=1e-12)
    assert check.condition_holds(q, tol=1e-9).all()
    # Tuples that break the check's condition move.
    incoherent_rows = ~check.condition_holds(p, tol=1e-6)
    assert incoherent_rows.mean() > 0.2
    assert np.all(result.moved[incoherent_rows] > 0)


@pytest.mark.parametrize("check", CHECKS, ids=IDS)
def test_log_repair_is_the_arbitrage_prices(check):
    p = incoherent(check, 2000, seed=2)
    result = repair_tuples(check, p, "log")
    arb = arbitrage(p, check.worlds)
    np.testing.assert_allclose(result.repaired, arb.prices, atol=1e-9, rtol=0)
    np.testing.assert_allclose(result.moved, arb.violation, atol=1e-12, rtol=0)
    # The log loss improves in every world by at least the arbitrage profit V.
    assert np.all(result.guaranteed >= result.moved - 1e-9)
    assert np.all(result.guaranteed >= -1e-12)


@pytest.mark.parametrize("score", ["brier", "log"])
@pytest.mark.parametrize("check", CHECKS, ids=IDS)
def test_coherent_forecasts_are_returned_unchanged(check, score):
    p = check.coherent_sample(500, np.random.default_rng(3))
    result = repair_tuples(check, p, score)
    np.testing.assert_allclose(result.repaired, p, atol=1e-9, rtol=0)
    assert np.all(result.moved <= 1e-12)
    assert np.all(np.abs(result.guaranteed) <= 1e-9)


def qp_projection(p: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Brute force: the projection of p onto the hull of V's rows, as a QP over the weights (Clarabel)."""
    import clarabel
    from scipy import sparse

    k = len(V)
    P = sparse.csc_matrix(V @ V.T)
    A = sparse.csc_matrix(np.vstack([np.ones((1, k)), -np.eye(k)]))
    b = np.concatenate([[1.0], np.zeros(k)])
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = 1e-12
    cones = [clarabel.ZeroConeT(1), clarabel.NonnegativeConeT(k)]
    sol = clarabel.DefaultSolver(P, -(V @ p), A, b, cones, settings).solve()
    return np.asarray(sol.x) @ V


@pytest.mark.parametrize("check", CHECKS, ids=IDS)
def test_brier_repair_equals_a_brute_force_projection(check):
    """Binary checks: the QP's projection. Conditional ones: q is the projection onto H(q) (the fixed point)."""
    p = incoherent(check, 40, seed=4)
    q = repair_tuples(check, p, "brier").repaired
    for row_p, row_q in zip(p, q, strict=True):
        V = np.where(check.worlds == NONE, row_q, check.worlds).astype(float)
        np.testing.assert_allclose(qp_projection(row_p, V), row_q, atol=1e-6)


def test_guaranteed_improvement_by_hand():
    from consistency.checks import get_check

    neg = get_check("NEGATION")
    p = np.array([[0.7, 0.5]])
    q = repair_tuples(neg, p).repaired
    np.testing.assert_allclose(q, [[0.6, 0.4]])
    # World P true: (0.3² + 0.5²) - (0.4² + 0.4²) = 0.02; P false: (0.7² + 0.5²) - (0.6² + 0.6²) = 0.02.
    np.testing.assert_allclose(guaranteed_improvement(neg, p, q, "brier"), [0.02])
    np.testing.assert_allclose(repair_tuples(neg, p).moved, [0.02])
    # Log: the guarantee is the smaller of the two worlds' log gains at the arbitrage prices.
    log_q = repair_tuples(neg, p, "log").repaired
    gain_true = np.log(log_q[0, 0] / 0.7) + np.log((1 - log_q[0, 1]) / 0.5)
    gain_false = np.log((1 - log_q[0, 0]) / 0.3) + np.log(log_q[0, 1] / 0.5)
    np.testing.assert_allclose(guaranteed_improvement(neg, p, log_q, "log"), [min(gain_true, gain_false)])


def test_conditional_repair_by_hand():
    """COND with P = 0.5, Q|P = 0.5, P∧Q = 0.5: the fixed point, and P∧Q = P·(Q|P) after repair."""
    from consistency.checks import get_check

    cond = get_check("COND")
    q = repair_tuples(cond, np.array([[0.5, 0.5, 0.5]])).repaired[0]
    assert q[0] * q[1] == pytest.approx(q[2], abs=1e-12)
    V = np.where(cond.worlds == NONE, q[1], cond.worlds).astype(float)
    np.testing.assert_allclose(qp_projection(np.array([0.5, 0.5, 0.5]), V), q, atol=1e-7)


@pytest.mark.parametrize("bad", [np.array([[0.2, 1.2]]), np.array([[np.nan, 0.1]]), np.array([0.2, 0.8])])
def test_bad_forecasts_are_refused(bad):
    from consistency.checks import get_check

    with pytest.raises(ValueError, match="NEGATION"):
        repair_tuples(get_check("NEGATION"), bad)


def test_unknown_score_is_refused():
    from consistency.checks import get_check

    with pytest.raises(ValueError, match="score must be one of brier, log"):
        repair_tuples(get_check("NEGATION"), np.array([[0.2, 0.3]]), "spherical")  # type: ignore[arg-type]
