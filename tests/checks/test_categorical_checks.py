"""Checks over multiple-choice and numeric questions (issue 35, item 4): declarations, worlds, the arbitrage metric
against hand computations and brute-force optimisation (dual over λ and primal over prices), the frequentist metric."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from consistency.checks import (
    CDF_THRESHOLDS,
    MC_BINARY,
    MONOTONE,
    NUMERIC_PARAPHRASE,
    Check,
    CheckDeclarationError,
    all_checks,
    get_check,
    partition_check,
)
from consistency.metrics.categorical import CategoricalPlan, categorical_arbitrage, clip_distribution
from consistency.metrics.closed_forms import closed_form
from consistency.metrics.scoring import ScoreParams, score_forecasts
from consistency.repair.categorical import repair_categorical

NEW = ["PARTITION2", "PARTITION3", "PARTITION4", "PARTITION7", "MC_BINARY", "CDF_THRESHOLDS1", "CDF_THRESHOLDS",
       "CDF_THRESHOLDS5", "NUMERIC_PARAPHRASE"]  # fmt: skip


def _forecasts(check: Check, n: int, rng: np.random.Generator, alpha: float = 1.0) -> np.ndarray:
    """Independent random forecasts in the check's columns: uniform yes/no, Dirichlet distributions."""
    parts = []
    for name in check.fields:
        m = check.categorical.get(name)
        parts.append(rng.random((n, 1)) if m is None else rng.dirichlet(np.full(m, alpha), n))
    return np.hstack(parts)


def _violation(check: Check, probs: np.ndarray, **kw):
    return score_forecasts(check, probs, **kw)


# ------------------------------------------------------------------------------------------ declarations
def test_names_fields_and_worlds():
    p4 = get_check("PARTITION4")
    assert p4 is get_check("part4") is get_check("Partition4Checker.jsonl") is partition_check(4)
    assert p4.field_names == ("P_1", "P_2", "P_3", "P_4") and p4.columns == p4.field_names
    assert p4.worlds.tolist() == np.eye(4, dtype=int).tolist()
    assert [str(c) for c in p4.constraints] == ["P_1 + P_2 + P_3 + P_4 = 1"]
    assert MC_BINARY.columns == ("X[0]", "X[1]", "P") and MC_BINARY.worlds.tolist() == [[0, 1], [1, 0]]
    assert MC_BINARY.question_types == {"X": "multiple_choice", "P": "binary"}
    assert [str(c) for c in MC_BINARY.constraints] == ["X[0] = P"]
    assert CDF_THRESHOLDS is get_check("cdf") is get_check("CDF_THRESHOLDS3")
    assert CDF_THRESHOLDS.question_types["X"] == "numeric"
    assert CDF_THRESHOLDS.worlds.tolist() == [[0, 0, 0, 0], [1, 1, 0, 0], [2, 1, 1, 0], [3, 1, 1, 1]]
    assert [str(c) for c in CDF_THRESHOLDS.constraints] == [
        "T_1 = X[1] + X[2] + X[3]",
        "T_2 = X[2] + X[3]",
        "T_3 = X[3]",
    ]
    assert NUMERIC_PARAPHRASE.n_columns == 404 and len(NUMERIC_PARAPHRASE.worlds) == 202
    assert [str(c) for c in NUMERIC_PARAPHRASE.constraints] == ["X = para_X (each CDF point)"]
    # No bundled tuples yet: found by name, not run by default.
    assert not {c.name for c in all_checks()} & {"PARTITION4", "MC_BINARY", "CDF_THRESHOLDS", "NUMERIC_PARAPHRASE"}
    with pytest.raises(KeyError, match="2 to 10"):
        get_check("PARTITION11")
    with pytest.raises(KeyError, match="1 to 8"):
        get_check("CDF_THRESHOLDS9")


def test_threshold_questions_form_a_monotone_chain():
    """Restricted to T_3, T_2, T_1 (highest threshold first) the worlds are MONOTONE's."""
    rows = {tuple(r) for r in CDF_THRESHOLDS.worlds[:, [3, 2, 1]].tolist()}
    assert rows == {tuple(r) for r in MONOTONE.worlds.tolist()}


def test_resolution_propagates_from_the_outcome():
    assert CDF_THRESHOLDS.resolve({"X": 2}) == {"X": 2, "T_1": True, "T_2": True, "T_3": False}
    assert CDF_THRESHOLDS.resolve({"T_2": False}) == {"X": None, "T_1": None, "T_2": False, "T_3": False}
    assert get_check("PARTITION3").resolve({"X": 1}) == {"P_1": False, "P_2": True, "P_3": False}
    assert get_check("PARTITION3").resolve({"P_1": True}) == {"P_1": True, "P_2": False, "P_3": False}
    assert MC_BINARY.resolve({"P": False}) == {"X": 1, "P": False}
    assert NUMERIC_PARAPHRASE.resolve({"X": 17}) == {"X": 17, "para_X": 17}


def test_declaration_errors():
    with pytest.raises(CheckDeclarationError, match="at least 2 outcomes"):
        Check("C1", {"X": "X"}, outcomes={"X": 1}, condition="X[0] == 1")
    with pytest.raises(CheckDeclarationError, match="uses categorical X as an event"):
        Check("C2", {"X": "X", "P": "X and Q"}, outcomes={"X": 3})
    with pytest.raises(CheckDeclarationError, match="outcomes 0 to 2, field P names 3"):
        Check("C3", {"X": "X", "P": "X == 3"}, outcomes={"X": 3})
    with pytest.raises(CheckDeclarationError, match="compares Q, which outcomes= does not declare"):
        Check("C4", {"X": "X", "P": "Q == 0"}, outcomes={"X": 3})
    with pytest.raises(CheckDeclarationError, match="is conditional"):
        Check("C5", {"X": "X", "P": "X == 0 given Q"}, outcomes={"X": 3}, condition="X[0] == P")
    with pytest.raises(CheckDeclarationError, match="name its outcomes"):
        Check("C6", {"X": "X", "P": "X == 0"}, outcomes={"X": 2}, condition="X == P")
    with pytest.raises(CheckDeclarationError, match="does not follow"):
        Check("C7", {"X": "X", "P": "X == 0"}, outcomes={"X": 2}, condition="X[1] == P")


# ------------------------------------------------------------------------------------------ hand computations
def test_partition_by_hand():
    p4 = get_check("PARTITION4")
    # Symmetric: every price 1/4, V = 4 KL(1/4 ‖ 0.3).
    kl = 0.25 * math.log(0.25 / 0.3) + 0.75 * math.log(0.75 / 0.7)
    scores = _violation(p4, [[0.3, 0.3, 0.3, 0.3], [0.1, 0.2, 0.3, 0.4]])
    assert scores.arbitrage.violation == pytest.approx([4 * kl, 0.0], abs=1e-15)
    assert scores.arbitrage.prices[0] == pytest.approx([0.25] * 4, abs=1e-15)
    # Frequentist: |ΣF - 1| / sqrt(Σ F(1 - F) + β).
    assert scores.frequentist == pytest.approx([0.2 / math.sqrt(4 * 0.21 + 1e-3), 0.0], abs=1e-15)
    # PARTITION2 is NEGATION.
    rng = np.random.default_rng(0)
    F = rng.random((1000, 2))
    assert np.abs(_violation("PARTITION2", F).arbitrage.violation - closed_form("NEGATION", F)).max() < 1e-13


def test_partition_closed_form_is_the_root_of_one_equation():
    """V = max over x > 0 of log x - Σ log(1 - F_i + F_i x), checked on a fine grid for k = 3."""
    F = np.array([0.5, 0.4, 0.3])
    x = np.exp(np.linspace(-3, 3, 600_001))
    values = np.log(x) - np.log(1 - F[:, None] + F[:, None] * x).sum(axis=0)
    v = _violation("PARTITION3", F[None]).arbitrage.violation[0]
    assert v == pytest.approx(values.max(), abs=1e-11) and v > 0


def test_mc_binary_and_numeric_paraphrase_by_hand():
    # X's options (0.5, 0.3, 0.2), P = "the outcome is the first option" at 0.7: PARAPHRASE of 0.5 and 0.7.
    scores = _violation(MC_BINARY, [[0.5, 0.5, 0.7]])
    expected = -2 * math.log(math.sqrt(0.5 * 0.7) + math.sqrt(0.5 * 0.3))
    assert scores.arbitrage.violation[0] == pytest.approx(expected, abs=1e-15)
    assert scores.frequentist[0] == pytest.approx(0.2 / math.sqrt(0.25 + 0.21 + 1e-3), abs=1e-15)
    # Uniform on the range against uniform on its upper half (closed bounds: both tails empty).
    eps, unit = 1e-3, 1e-3 / 201
    p = np.r_[0.0, np.full(200, 1 / 200), 0.0]
    q = np.r_[0.0, np.zeros(100), np.full(100, 1 / 100), 0.0]
    p_c = (1 / 200) * (1 - 2 * unit)  # clipped: the two empty bins get ε/201, the others shrink
    q_c = (1 / 100) * (1 - 102 * unit)
    bc = 2 * unit + 100 * math.sqrt(p_c * unit) + 100 * math.sqrt(p_c * q_c)
    scores = _violation(NUMERIC_PARAPHRASE, np.r_[p, q][None])
    assert scores.arbitrage.violation[0] == pytest.approx(-2 * math.log(bc), abs=1e-14)
    # Without clipping, BC = 1/sqrt(2) and V = log 2; ε moves at most ε of mass, but empty bins weigh by sqrt.
    tiny = _violation(NUMERIC_PARAPHRASE, np.r_[p, q][None], params=ScoreParams(epsilon=1e-12))
    assert tiny.arbitrage.violation[0] == pytest.approx(math.log(2), abs=1e-5)
    # Frequentist: the CDFs differ most at the middle, 0.5 against 0 (then 1/200 steps): the weighted KS.
    cp, cq = np.cumsum(p)[:-1], np.cumsum(q)[:-1]
    ks = (np.abs(cp - cq) / np.sqrt(cp * (1 - cp) + cq * (1 - cq) + eps)).max()
    assert scores.frequentist[0] == pytest.approx(ks, abs=1e-15)
    assert ks == pytest.approx(0.5 / math.sqrt(0.25 + eps))
    assert scores.largest_cdf_gap[0] == pytest.approx(0.5)  # the plain KS distance, reported beside V
    assert scores.violation_data(0)["default"]["largest_cdf_gap"] == pytest.approx(0.5)


def test_cdf_thresholds_by_hand():
    """One threshold: PARAPHRASE between P(X > t) and the threshold question; frequentist per threshold."""
    scores = _violation("CDF_THRESHOLDS1", [[0.6, 0.4, 0.3]])
    assert scores.arbitrage.violation[0] == pytest.approx(-2 * math.log(math.sqrt(0.4 * 0.3) + math.sqrt(0.6 * 0.7)))
    F = np.array([[0.1, 0.2, 0.3, 0.4, 0.9, 0.5, 0.6]])  # P(X > t_j) = 0.9, 0.7, 0.4 against 0.9, 0.5, 0.6
    z = [abs(0.7 - 0.5) / math.sqrt(0.7 * 0.3 + 0.25 + 1e-3), abs(0.4 - 0.6) / math.sqrt(0.24 + 0.24 + 1e-3)]
    assert _violation(CDF_THRESHOLDS, F).frequentist[0] == pytest.approx(max(z), abs=1e-15)


# ------------------------------------------------------------------------------------------ brute force
def _dual_brute(check: Check, row: np.ndarray, epsilon: float = 1e-3, starts: int = 3) -> float:
    """min over λ on the worlds of Σ_i KL(q_i(λ) ‖ F_i), by BFGS on a softmax parametrisation from several starts."""
    plan = CategoricalPlan(check) if check.categorical else None
    if plan is None:  # yes/no fields only: outcome columns (true, false)
        F = np.clip(row, epsilon, 1 - epsilon)
        B = np.concatenate([(check.worlds == 1), (check.worlds == 0)], axis=1).astype(float)
        L = np.log(np.concatenate([F, 1 - F]))
    else:
        B, L = plan.B, np.log(plan.internal(row[None], epsilon)[0])
    K = len(B)

    def value_and_grad(z):
        lam = np.exp(z - z.max())
        lam /= lam.sum()
        t = lam @ B
        g = B @ (np.log(t) - L)  # ∂D/∂λ (each field's mass is 1)
        d = lam @ g
        return d, lam * (g - d)

    best = np.inf
    rng = np.random.default_rng(1)
    for start in range(starts):
        z0 = np.zeros(K) if start == 0 else rng.normal(size=K)
        res = minimize(value_and_grad, z0, jac=True, method="BFGS", options={"gtol": 1e-13, "maxiter": 10_000})
        best = min(best, res.fun)
    return best


def _primal_brute(check: Check, row: np.ndarray, epsilon: float = 1e-3) -> float:
    """max over the arbitrageur's prices of the worst profit over the worlds: the epigraph form (maximise s with
    profit_ω ≥ s in every world) by SLSQP, prices as logits (yes/no) and log-softmax (categorical)."""
    plan = CategoricalPlan(check) if check.categorical else None
    if plan is None:
        F_true = np.clip(row, epsilon, 1 - epsilon)
        B = np.concatenate([(check.worlds == 1), (check.worlds == 0)], axis=1).astype(float)
        L = np.log(np.concatenate([F_true, 1 - F_true]))
        groups = [("binary", [i, i + check.n_fields]) for i in range(check.n_fields)]
    else:
        B, L = plan.B, np.log(plan.internal(row[None], epsilon)[0])
        groups = []
        for i, name in enumerate(check.fields):
            cols = list(np.flatnonzero(plan.field_of == i))
            groups.append(("categorical" if name in check.categorical else "binary", cols))

    def log_prices(z):
        out = np.empty(len(L))
        at = 0
        for kind, cols in groups:
            if kind == "binary":  # one logit: log σ(z), log σ(-z)
                out[cols[0]], out[cols[1]] = -np.logaddexp(0, -z[at]), -np.logaddexp(0, z[at])
                at += 1
            else:
                v = z[at : at + len(cols)]
                out[cols] = v - np.logaddexp.reduce(v)
                at += len(cols)
        return out

    def constraints(v):
        return B @ (log_prices(v[:-1]) - L) - v[-1]

    z0 = []
    for kind, cols in groups:
        z0.extend([L[cols[0]] - L[cols[1]]] if kind == "binary" else list(L[cols]))
    bounds = [(-60, 60)] * len(z0) + [(None, None)]
    # Any prices give a guaranteed profit no larger than the optimum, so the best of several starts is still a
    # lower bound: SLSQP alone, from one start, wandered off (to -179) on one CPU's BLAS kernel and not another's.
    best = -np.inf
    for start in (np.asarray(z0), np.zeros(len(z0)), 0.5 * np.asarray(z0)):
        v0 = np.r_[start, min(constraints(np.r_[start, 0.0]).min(), 0.0)]  # a feasible start: s at the worst world
        res = minimize(
            lambda v: -v[-1], v0, jac=lambda v: np.r_[np.zeros(len(v) - 1), -1.0], method="SLSQP", bounds=bounds,
            constraints=[{"type": "ineq", "fun": constraints}], options={"ftol": 1e-16, "maxiter": 5000},
        )  # fmt: skip
        best = max(best, float(min(constraints(res.x).min() + res.x[-1], res.x[-1])))
    return best


@pytest.mark.parametrize("name", ["PARTITION3", "PARTITION4", "MC_BINARY", "CDF_THRESHOLDS1", "CDF_THRESHOLDS",
                                  "CDF_THRESHOLDS5"])  # fmt: skip
def test_arbitrage_agrees_with_brute_force(name):
    check = get_check(name)
    rng = np.random.default_rng(7)
    F = _forecasts(check, 12, rng, alpha=2.0)
    F[0] = check.coherent_sample(1, rng)[0]  # coherent: 0
    result = _violation(check, F).arbitrage
    assert result.violation[0] < 1e-14
    for row, v, gap in zip(F, result.violation, result.gap, strict=True):
        assert gap < 1e-12
        assert abs(_dual_brute(check, row) - v) < 1e-9
        assert abs(_primal_brute(check, row) - v) < 1e-9


def test_numeric_paraphrase_agrees_with_brute_force():
    rng = np.random.default_rng(3)
    F = _forecasts(NUMERIC_PARAPHRASE, 20, rng, alpha=3.0)
    result = _violation(NUMERIC_PARAPHRASE, F).arbitrage
    for row, v in zip(F, result.violation, strict=True):
        p, q = row[:202], row[202:]
        assert v == pytest.approx(-2 * np.log(np.sqrt(p * q).sum()), abs=1e-13)  # Bhattacharyya, no clipping here
    assert abs(_dual_brute(NUMERIC_PARAPHRASE, F[0], starts=1) - result.violation[0]) < 1e-9  # 202 worlds
    # The primal over 404 prices and 202 worlds: on a coarser grid (the same declaration with 12 bins).
    small = Check(
        "NUMPARA12", {"X": "X", "para_X": "X"}, outcomes={"X": 12}, kinds={"X": "numeric"}, condition="X == para_X"
    )
    G = _forecasts(small, 2, rng, alpha=2.0)
    for row, v in zip(G, _violation(small, G).arbitrage.violation, strict=True):
        assert abs(_primal_brute(small, row) - v) < 1e-9
        assert abs(_dual_brute(small, row) - v) < 1e-9


def test_mc_binary_equals_the_arbitrage_over_every_option():
    """Grouping X's options into (S, rest) loses nothing: the arbitrage over all m options is the same."""
    rng = np.random.default_rng(5)
    full = Check("MC4_BIN", {"X": "X", "P": "X == 0 or X == 2"}, outcomes={"X": 4})
    for _ in range(5):
        x, p = rng.dirichlet(np.ones(4)), rng.random()
        grouped = _violation(MC_BINARY, [[x[0] + x[2], x[1] + x[3], p]]).arbitrage.violation[0]
        assert _violation(full, np.r_[x, p][None]).arbitrage.violation[0] == pytest.approx(grouped, abs=1e-13)
        assert abs(_dual_brute(full, np.r_[x, p]) - grouped) < 1e-9


@pytest.mark.parametrize("name", NEW)
def test_coherent_forecasts_have_no_violation(name):
    check = get_check(name)
    F = check.coherent_sample(2000, np.random.default_rng(11))
    scores = _violation(check, F)
    assert scores.arbitrage.violation.max() < 1e-12 and scores.frequentist.max() < 1e-9
    assert check.condition_holds(F).all()


@pytest.mark.parametrize("name", ["PARTITION4", "PARTITION7", "CDF_THRESHOLDS", "CDF_THRESHOLDS5"])
def test_weighted_arbitrage_matches_the_general_solvers(name):
    """Weights as the ArbitrageForecaster uses them: PARTITION's root against the binary active-set solver,
    CDF_THRESHOLDS's Newton on μ against the generic Newton over λ."""
    check = get_check(name)
    rng = np.random.default_rng(2)
    F = _forecasts(check, 300, rng)
    w = rng.uniform(0.5, 3.0, (300, check.n_fields))
    fast = _violation(check, F, weights=w).arbitrage
    if check.categorical:
        from consistency.metrics import categorical as cat

        plan = cat.CategoricalPlan(check)
        Fi = plan.internal(F, 1e-3)
        lam, _ = cat._newton(plan, np.log(Fi), w[:, plan.field_of], w.sum(axis=1, keepdims=True), 1e-13, 200)
        t = plan.masses(lam)
        reference = plan.profits(t, np.log(Fi), w[:, plan.field_of]).min(axis=1)
    else:
        from consistency.metrics.arbitrage import _Problem, _solve, clip_forecasts

        reference = _solve(_Problem(check.worlds), clip_forecasts(F), w, 1e-13, 200, False)[0]
    assert np.abs(fast.violation - np.maximum(reference, 0)).max() < 1e-9
    assert fast.gap.max() < 1e-11


def test_extreme_and_degenerate_forecasts():
    rng = np.random.default_rng(4)
    for name in ["PARTITION4", "MC_BINARY", "CDF_THRESHOLDS", "NUMERIC_PARAPHRASE"]:
        check = get_check(name)
        F = _forecasts(check, 500, rng, alpha=0.05)  # many exact zeros after rounding
        F = np.round(F, 2)
        for f in check.categorical:  # keep distributions summing to 1 after rounding
            sl = check.column_slices[f]
            F[:, sl] /= F[:, sl].sum(axis=1, keepdims=True)
        result = _violation(check, F).arbitrage
        assert np.isfinite(result.violation).all() and (result.violation >= 0).all()
        assert result.gap.max() < 1e-9, name


def test_clipping_of_distributions():
    out = clip_distribution(np.array([[1.0, 0.0], [0.5, 0.5]]), 1e-3)
    assert out.tolist() == [[1 - 1e-3, 1e-3], [0.5, 0.5]]  # two outcomes: the yes/no rule
    three = clip_distribution(np.array([[0.6, 0.4, 0.0, 0.0]]), 1e-3)[0]
    assert three[2:] == pytest.approx([1e-3 / 3] * 2) and three.sum() == pytest.approx(1)
    assert three[0] / three[1] == pytest.approx(1.5)
    with pytest.raises(ValueError, match=r"tuple 1 sums to 1\.2"):
        categorical_arbitrage(MC_BINARY, [[0.5, 0.5, 0.2], [0.6, 0.6, 0.2]])
    with pytest.raises(ValueError, match=r"shape \(N, 3\)"):
        categorical_arbitrage(MC_BINARY, [[0.5, 0.5]])


# ------------------------------------------------------------------------------------------ repair
@pytest.mark.parametrize("score", ["brier", "log"])
@pytest.mark.parametrize("name", ["MC_BINARY", "CDF_THRESHOLDS", "CDF_THRESHOLDS5", "NUMERIC_PARAPHRASE"])
def test_repair_is_coherent_and_improves_every_world(name, score):
    check = get_check(name)
    F = _forecasts(check, 300, np.random.default_rng(9))
    result = repair_categorical(check, F, score)
    assert check.condition_holds(result.repaired, tol=1e-9).all()
    assert (result.guaranteed >= result.moved - 1e-10).all() and (result.moved > 0).all()
    if score == "log":
        assert result.moved == pytest.approx(_violation(check, F).arbitrage.violation, abs=1e-15)


def test_brier_repair_is_the_projection():
    """Against a brute-force projection onto the hull of the one-hot worlds (SLSQP over λ)."""
    rng = np.random.default_rng(6)
    for check in (CDF_THRESHOLDS, MC_BINARY):
        E = check.expanded_worlds.astype(float)
        F = _forecasts(check, 5, rng)
        repaired = repair_categorical(check, F).repaired
        for row, q in zip(F, repaired, strict=True):
            res = minimize(
                lambda lam, row=row, E=E: ((lam @ E - row) ** 2).sum(), np.full(len(E), 1 / len(E)), method="SLSQP",
                bounds=[(0, 1)] * len(E), constraints=[{"type": "eq", "fun": lambda lam: lam.sum() - 1}],
                options={"ftol": 1e-15, "maxiter": 1000},
            )  # fmt: skip
            assert np.abs(res.x @ E - q).max() < 1e-6
            assert ((q - row) ** 2).sum() <= res.fun + 1e-12
    # NUMERIC_PARAPHRASE: the average of the two distributions.
    F = _forecasts(NUMERIC_PARAPHRASE, 3, rng)
    repaired = repair_categorical(NUMERIC_PARAPHRASE, F).repaired
    assert (
        repaired[:, :202] == pytest.approx((F[:, :202] + F[:, 202:]) / 2)
        and (repaired[:, 202:] == repaired[:, :202]).all()
    )


def test_joint_brier_repair_shares_columns_with_yes_no_questions():
    """MC_BINARY's P is also PARTITION3's first question: the joint repair is the projection onto both tuples'
    constraints (X[0] = P, X[0] + X[1] = 1, P_1 + P_2 + P_3 = 1; all in the interior here), by least squares."""
    from consistency.repair import repair_graph, repair_tuples

    p = np.array([0.5, 0.5, 0.7, 0.2, 0.3])  # X[0], X[1], P (= P_1), P_2, P_3
    blocks = [(MC_BINARY, np.array([[0, 1, 2]])), (get_check("PARTITION3"), np.array([[2, 3, 4]]))]
    result = repair_graph(blocks, p)
    A = np.array([[1.0, 0, -1, 0, 0], [1, 1, 0, 0, 0], [0, 0, 1, 1, 1]])
    b = np.array([0.0, 1, 1])
    hand = p - A.T @ np.linalg.solve(A @ A.T, A @ p - b)
    assert result.repaired == pytest.approx(hand, abs=1e-9) and result.moved == pytest.approx(((p - hand) ** 2).sum())
    assert result.guaranteed == pytest.approx(result.moved)
    # Per tuple, repair_tuples hands categorical checks to the categorical repair.
    one = repair_tuples(MC_BINARY, p[None, :3])
    assert one.repaired == pytest.approx(repair_categorical(MC_BINARY, p[None, :3]).repaired)
    assert one.repaired[0] == pytest.approx([(2 * 0.5 + 0.7) / 3, 1 - (2 * 0.5 + 0.7) / 3, (2 * 0.5 + 0.7) / 3])
    with pytest.raises(ValueError, match="joint log repair is not supported for checks with multiple-choice"):
        repair_graph(blocks, p, "log")
    with pytest.raises(ValueError, match="NUMERIC_PARAPHRASE has more"):
        repair_graph([(NUMERIC_PARAPHRASE, np.arange(404)[None])], np.full(404, 1 / 202))
