"""Joint log repair of graphs with conditional checks: the arbitrage prices of the whole graph (consistency.repair.
log_graph), checked by brute force over every joint world of small graphs, against each tuple's own arbitrage on
disjoint tuples, against the KL projection on binary graphs, and on tuples that no forecasts satisfy together.
"""

from __future__ import annotations

import numpy as np
import pytest

from consistency.checks import get_check
from consistency.metrics.arbitrage import clip_forecasts
from consistency.repair import log_graph, repair_graph, repair_tuples
from consistency.repair.augmented import _PAIR_STEP
from consistency.repair.conflicts import ConflictingTuples
from tests.repair.test_repair_graph import BINARY, CONDITIONAL, build
from tests.repair.test_repair_log_joint import log_losses


@pytest.mark.parametrize("seed", range(6))
def test_the_log_loss_falls_by_the_guarantee_in_every_joint_world(seed):
    blocks, truth = build(CONDITIONAL)
    rng = np.random.default_rng(seed)
    p = rng.random(truth.shape[1])
    if seed % 2:
        p[rng.choice(len(p), 3, replace=False)] = [0.0, 1.0, 0.5]  # clipped as the log score clips them
    result = repair_graph(blocks, p, "log")
    assert result.status in ("Solved", "AlmostSolved")
    pc = clip_forecasts(p)
    gain = log_losses(truth, pc) - log_losses(truth, result.repaired)
    assert np.all(gain >= result.guaranteed - 1e-9), (gain.min(), result.guaranteed)  # never raises the log loss
    assert result.guaranteed > 0
    # moved is the graph's arbitrage profit V, the most any prices can guarantee over the relaxation; the
    # guarantee of the prices returned (a certified lower bound) reaches it: they are the optimal prices.
    assert result.guaranteed <= result.moved + 1e-9
    assert result.guaranteed >= result.moved - 1e-9 * max(1.0, result.moved)
    for (check, idx), part in zip(blocks, result.per_block, strict=True):
        np.testing.assert_array_equal(part.repaired, result.repaired[idx])  # one value per question
        assert check.condition_holds(part.repaired, tol=1e-8).all()
        assert repair_tuples(check, part.repaired, "log").moved.max() <= 1e-12


@pytest.mark.parametrize("seed", range(3))
def test_disjoint_tuples_get_each_tuples_arbitrage_prices(seed):
    rng = np.random.default_rng(20 + seed)
    blocks, offset, probs = [], 0, []
    for name in ("COND", "CONDCOND", "EXPEVIDENCE", "AND", "NEGATION"):
        check = get_check(name)
        idx = offset + np.arange(5 * check.n_fields).reshape(5, check.n_fields)
        offset += idx.size
        blocks.append((check, idx))
        probs.append(rng.random(idx.size).round(1) if seed == 0 else rng.random(idx.size))
    p = np.concatenate(probs)
    result = repair_graph(blocks, p, "log")
    total = 0.0
    for (check, idx), part in zip(blocks, result.per_block, strict=True):
        alone = repair_tuples(check, p[idx], "log")
        np.testing.assert_allclose(part.moved, alone.moved, atol=1e-8)  # each tuple's arbitrage profit V
        np.testing.assert_allclose(part.guaranteed, alone.guaranteed, atol=1e-8)
        # The prices agree wherever the adversary resolves the field (elsewhere any price that keeps V will do;
        # the per-tuple repair keeps the forecast, the joint one the max-min price).
        # The joint solve stops once its Newton step is below _PAIR_STEP in mass units, and a price is a mass over
        # the resolving mass r: prices agree to that step over r (times 100 for the round's conditioning), not to
        # the last digits, which vary with the BLAS kernel (1.6e-6 at r = 0.36 on one, 1e-11 on another).
        solved = log_graph.solve([(check, idx - idx.min())], clip_forecasts(p[idx.min() : idx.max() + 1]))
        r = solved.resolves.reshape(idx.shape)
        resolves = r > 1e-6
        gap = np.abs(part.repaired - alone.repaired)[resolves]
        assert np.all(gap <= 1e-9 + 100 * _PAIR_STEP / r[resolves]), (gap.max(), r[resolves].min())
        total += alone.moved.sum()
    assert result.moved == pytest.approx(total, abs=1e-8)


def test_on_binary_checks_it_is_the_kl_projection():
    blocks, truth = build(BINARY)
    p = clip_forecasts(np.random.default_rng(3).random(truth.shape[1]))
    solved = log_graph.solve(blocks, p)
    projection = repair_graph(blocks, p, "log")
    np.testing.assert_allclose(solved.q, projection.repaired, atol=1e-7)
    np.testing.assert_allclose(solved.resolves, 1.0, atol=1e-8)
    assert solved.value == pytest.approx(projection.moved, abs=1e-9)


# COND(a, x, y), PARAPHRASE(x, a), NEGATION(a, y): x = "Q given a" always resolves as a does, so a is true in
# every world, and then y = a and Q = 1 is true while NEGATION makes it false. Any two of them can hold; Brier's
# relaxation even has coherent forecasts (a = x, y = a² = 1 - a), but no distribution of worlds does.
THREE = [("COND", (0, 1, 2)), ("PARAPHRASE", (1, 0)), ("NEGATION", (0, 2))]


def test_tuples_whose_worlds_cannot_be_mixed_are_a_conflict():
    from tests.repair.test_repair_conflicts import blocks_of

    blocks, where = blocks_of(THREE)
    with pytest.raises(ConflictingTuples) as caught:
        repair_graph(blocks, np.array([0.3, 0.4, 0.6]), "log")
    assert sorted(caught.value.tuples) == sorted(where)
    for left in range(3):  # irreducible: any two of them repair
        rest, _ = blocks_of([t for i, t in enumerate(THREE) if i != left])
        assert repair_graph(rest, np.array([0.3, 0.4, 0.6]), "log").status in ("Solved", "AlmostSolved")


def test_skip_conflicts_repairs_the_rest_with_a_guarantee_over_them():
    from tests.repair.test_repair_conflicts import FIVE, blocks_of

    tuples = [*FIVE, ("COND", (4, 5, 6)), ("AND", (4, 7, 6))]
    blocks, where = blocks_of(tuples)
    p = np.array([0.3, 0.4, 0.6, 0.5, 0.7, 0.2, 0.5, 0.6])
    with pytest.raises(ConflictingTuples) as caught:
        repair_graph(blocks, p, "log")
    assert sorted(caught.value.tuples) == sorted(where[:5]) and caught.value.certain
    result = repair_graph(blocks, p, "log", skip_conflicts=True)
    assert result.left_out == sorted(where[:5])
    kept = [(c, i) for c, i in blocks if c.name in ("COND", "AND")]
    alone = repair_graph(kept, p, "log")
    np.testing.assert_allclose(result.repaired[4:], alone.repaired[4:], atol=1e-9)
    assert result.guaranteed == pytest.approx(alone.guaranteed, abs=1e-9) and result.guaranteed > 0


@pytest.mark.parametrize("seed", range(3))
def test_the_augmented_lagrangian_agrees_with_the_exponential_cone(seed):
    blocks, truth = build(CONDITIONAL)
    p = clip_forecasts(np.random.default_rng(30 + seed).random(truth.shape[1]))
    ours, reference = log_graph.solve_lifted(blocks, p), log_graph.solve_clarabel(blocks, p)
    assert ours.value == pytest.approx(reference.value, abs=1e-8)  # the same V from an independent formulation
    # Clarabel's prices (its dual solution) are ~3e-6 from coherent; ours are coherent to 1e-12 and guarantee V.
    np.testing.assert_allclose(ours.q, reference.q, atol=1e-5)
    assert ours.guaranteed >= reference.guaranteed - 1e-9
    assert ours.guaranteed == pytest.approx(ours.value, abs=1e-9)
