"""Joint log-score repair: the KL projection of the forecasts onto the tuples' coherent sets (binary checks).

Checked by brute force over every joint world of small graphs (the log loss never rises, and falls by at
least the KL divergence moved), against the per-tuple log repair (the arbitrage prices) on disjoint tuples,
and against an independent formulation with Clarabel's exponential cone.
"""

from __future__ import annotations

import numpy as np
import pytest

from consistency.checks import get_check
from consistency.metrics.arbitrage import clip_forecasts
from consistency.repair import repair_graph, repair_tuples
from consistency.repair.conflicts import ConflictingTuples
from tests.repair.test_repair_graph import BINARY, CONDITIONAL, build


def log_losses(truth: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Per joint world (rows of truth: 1 / 0 / -1 per question), the log loss summed over resolving questions."""
    resolved, true = truth >= 0, truth == 1
    return (-np.where(true, np.log(q), np.log1p(-q)) * resolved).sum(axis=1)


def kl_projection_by_clarabel(blocks, p: np.ndarray) -> np.ndarray:
    """min Σ KL(q_i ‖ p_i) over q in every tuple's hull, with the exponential cone: t ≥ u log(u / v) exactly
    when (-t, u, v) is in Clarabel's exponential cone."""
    import clarabel
    from scipy import sparse

    M = len(p)
    n_lam = sum(len(idx) * len(check.worlds) for check, idx in blocks)
    n = M + n_lam + 2 * M  # q, the worlds' weights, t (for q) and t' (for 1 - q)
    eq_rows, eq_b = [], []
    col = M
    for check, idx in blocks:
        W = check.worlds.astype(float)
        k = len(W)
        for row in idx:
            for f, question in enumerate(row):  # q - Σ λ_w W[w, f] = 0
                r = np.zeros(n)
                r[question] += 1.0
                r[col : col + k] -= W[:, f]
                eq_rows.append(r)
                eq_b.append(0.0)
            r = np.zeros(n)
            r[col : col + k] = 1.0
            eq_rows.append(r)
            eq_b.append(1.0)
            col += k
    nonneg = np.zeros((n_lam, n))
    nonneg[np.arange(n_lam), M + np.arange(n_lam)] = -1.0
    exp_rows, exp_b = [], []
    t0 = M + n_lam
    for i in range(M):
        for t, sign, const, level in ((t0 + i, -1.0, 0.0, p[i]), (t0 + M + i, 1.0, 1.0, 1.0 - p[i])):
            a = np.zeros((3, n))
            a[0, t] = 1.0  # s0 = -t
            a[1, i] = sign  # s1 = q or 1 - q
            exp_rows.append(a)
            exp_b.extend([0.0, const, level])
    A = sparse.csc_matrix(np.vstack([np.array(eq_rows), nonneg, *exp_rows]))
    b = np.concatenate([eq_b, np.zeros(n_lam), exp_b])
    c = np.zeros(n)
    c[t0:] = 1.0
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = 1e-12
    cones = [clarabel.ZeroConeT(len(eq_rows)), clarabel.NonnegativeConeT(n_lam)] + [clarabel.ExponentialConeT()] * (
        2 * M
    )
    solution = clarabel.DefaultSolver(sparse.csc_matrix((n, n)), c, A, b, cones, settings).solve()
    assert str(solution.status) in ("Solved", "AlmostSolved"), solution.status
    return np.asarray(solution.x)[:M]


@pytest.mark.parametrize("seed", range(5))
def test_joint_log_repair_never_raises_the_log_loss_in_any_joint_world(seed):
    blocks, truth = build(BINARY)
    p = np.random.default_rng(seed).random(truth.shape[1])
    p[:2] = [0.0, 1.0]  # exact 0 and 1, clipped as the log score clips them
    result = repair_graph(blocks, p, "log")
    assert result.status == "Solved"
    pc = clip_forecasts(p)
    gain = log_losses(truth, pc) - log_losses(truth, result.repaired)
    kl = (
        result.repaired * np.log(result.repaired / pc)
        + (1 - result.repaired) * np.log((1 - result.repaired) / (1 - pc))
    ).sum()
    assert result.moved == pytest.approx(kl, abs=1e-12) and result.guaranteed == pytest.approx(kl, abs=1e-12)
    assert np.all(gain >= result.guaranteed - 1e-9), (gain.min(), result.guaranteed)
    assert result.guaranteed > 0
    for (check, idx), part in zip(blocks, result.per_block, strict=True):
        np.testing.assert_array_equal(part.repaired, result.repaired[idx])
        assert check.condition_holds(part.repaired, tol=1e-8).all()


@pytest.mark.parametrize("seed", range(3))
def test_joint_log_repair_is_the_kl_projection(seed):
    blocks, truth = build(BINARY)
    p = clip_forecasts(np.random.default_rng(10 + seed).random(truth.shape[1]))
    result = repair_graph(blocks, p, "log")
    np.testing.assert_allclose(result.repaired, kl_projection_by_clarabel(blocks, p), atol=1e-7)


def test_disjoint_tuples_get_the_per_tuple_log_repair():
    rng = np.random.default_rng(11)
    blocks, offset, probs = [], 0, []
    for name in ("NEGATION", "PARAPHRASE", "CONSEQUENCE", "AND", "OR", "ANDOR", "BUT", "MONOTONE"):
        check = get_check(name)
        idx = offset + np.arange(6 * check.n_fields).reshape(6, check.n_fields)
        offset += idx.size
        blocks.append((check, idx))
        rounded = rng.random(idx.size).round(1)  # exact 0 and 1 among them
        probs.append(rounded)
    p = np.concatenate(probs)
    result = repair_graph(blocks, p, "log")
    for (check, idx), part in zip(blocks, result.per_block, strict=True):
        alone = repair_tuples(check, p[idx], "log")
        np.testing.assert_allclose(part.repaired, alone.repaired, atol=1e-8)
        np.testing.assert_allclose(part.moved, alone.moved, atol=1e-9)  # each tuple's KL moved: its arbitrage profit


def test_joint_log_repair_names_conflicting_tuples():
    from tests.repair.test_repair_conflicts import FIVE, blocks_of

    blocks, where = blocks_of(FIVE)
    with pytest.raises(ConflictingTuples) as caught:
        repair_graph(blocks, np.array([0.3, 0.4, 0.6, 0.5]), "log")
    assert sorted(caught.value.tuples) == sorted(where) and caught.value.certain


def test_joint_log_repair_takes_conditional_checks():
    """Refused before: now the graph's arbitrage prices (tests/repair/test_repair_log_conditional.py)."""
    blocks, truth = build(CONDITIONAL)
    result = repair_graph(blocks, np.full(truth.shape[1], 0.5), "log")
    assert result.status in ("Solved", "AlmostSolved") and result.guaranteed >= -1e-9


def test_cc_repair_joint_log_writes_a_coherent_run(tmp_path):
    import json

    from typer.testing import CliRunner

    from consistency.cli import app
    from consistency.repair.sources import read_graph
    from tests.support.repair_fixtures import write_tuples

    source = write_tuples(tmp_path / "paper", forecasts=True)
    done = CliRunner().invoke(app, ["repair", str(source), "--score", "log", "--joint", "--out", str(tmp_path / "out")])
    assert done.exit_code == 0, done.output
    assert "guaranteed gain (nats)" in done.output and "every world consistent with all its tuples" in done.output
    report = json.loads((tmp_path / "out" / "repair.json").read_text())
    assert report["joint"] and report["score"] == "log" and report["solver_status"] == "Solved"
    assert report["total"]["guaranteed"] == pytest.approx(report["total"]["moved"]) and report["total"]["moved"] > 0
    repaired = read_graph(tmp_path / "out")
    for c in repaired.checks:
        assert repair_tuples(c.check, c.probs).moved.max() <= 1e-16  # coherent, one value per question
    assert all(max(f) - min(f) <= 1e-12 for f in repaired.forecasts)
