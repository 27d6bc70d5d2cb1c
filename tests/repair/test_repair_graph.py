"""Joint repair (consistency.repair.repair_graph) over tuples that share questions, checked by brute force.

The graphs are built from four base events A, B, C, D: every tuple instantiates a check's fields as
formulas over them, and two fields are the same question when they resolve alike in all 16
assignments of the base events. Every assignment is then a joint world consistent with every tuple.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from consistency.checks import get_check
from consistency.checks.logic import parse
from consistency.repair import repair_graph, repair_tuples

EVENTS = ("A", "B", "C", "D")
ASSIGNMENTS = [dict(zip(EVENTS, v, strict=True)) for v in itertools.product((True, False), repeat=len(EVENTS))]


def build(specs):
    """Blocks of (check, idx) for tuples given as (check name, base events); question outcomes per assignment."""
    keys: dict[tuple, int] = {}
    by_check: dict[str, list[list[int]]] = {}
    for name, events in specs:
        check = get_check(name)
        row = []
        for text in check.template_check.fields.values():  # CONSEQUENCE's Q is "P or Q"
            formula = parse(text)
            outcome = tuple(
                formula.evaluate({b: world[e] for b, e in zip(check.bases, events, strict=True)})
                for world in ASSIGNMENTS
            )
            row.append(keys.setdefault(outcome, len(keys)))
        by_check.setdefault(check.name, []).append(row)
    blocks = [(get_check(name), np.array(rows)) for name, rows in by_check.items()]
    outcomes = np.array(list(keys), dtype=object).reshape(len(keys), len(ASSIGNMENTS))
    truth = np.where(outcomes == None, -1, outcomes.astype(bool).astype(int)).astype(int)  # noqa: E711
    return blocks, truth.T  # truth: (assignments, M) of 1 / 0 / -1


BINARY = [
    ("NEGATION", "A"),
    ("NEGATION", "B"),
    ("AND", "AB"),
    ("OR", "BC"),
    ("ANDOR", "CD"),
    ("BUT", "AC"),
    ("PARAPHRASE", "D"),
    ("CONSEQUENCE", "AB"),
    ("AND", "BD"),
]
# NEGATION + AND + COND sharing A and A∧B, and more conditional checks over the same events.
CONDITIONAL = [*BINARY, ("COND", "AB"), ("EXPEVIDENCE", "BA"), ("CONDCOND", "ABC"), ("COND", "CD"), ("AND", "CD")]


def assert_joint_guarantee(truth, p, result):
    q = result.repaired
    assert q.shape == p.shape
    resolved = truth >= 0
    outcome = (truth == 1).astype(float)
    gain = (((p - outcome) ** 2 - (q - outcome) ** 2) * resolved).sum(axis=1)
    moved_there = (((p - q) ** 2) * resolved).sum(axis=1)
    assert np.all(gain >= moved_there - 1e-9), (gain - moved_there).min()
    assert result.guaranteed <= gain.min() + 1e-9
    assert result.guaranteed >= -1e-12
    np.testing.assert_allclose(result.moved, ((p - q) ** 2).sum(), atol=1e-12)


@pytest.mark.parametrize("specs", [BINARY, CONDITIONAL], ids=["binary", "conditional"])
@pytest.mark.parametrize("seed", range(6))
def test_joint_brier_improves_in_every_joint_world(specs, seed):
    blocks, truth = build(specs)
    p = np.random.default_rng(seed).random(truth.shape[1])
    result = repair_graph(blocks, p, "brier")
    assert result.status.startswith("Solved"), result.status
    assert_joint_guarantee(truth, p, result)
    for (check, idx), part in zip(blocks, result.per_block, strict=True):
        np.testing.assert_array_equal(part.repaired, result.repaired[idx])  # one value per question
        assert check.condition_holds(part.repaired, tol=1e-8).all()
    if specs is BINARY:  # all binary: the guarantee is the whole distance moved
        assert result.guaranteed == pytest.approx(result.moved, abs=1e-12)


@pytest.mark.parametrize("specs", [BINARY, CONDITIONAL], ids=["binary", "conditional"])
def test_jointly_coherent_forecasts_are_unchanged(specs):
    blocks, truth = build(specs)
    rng = np.random.default_rng(7)
    lam = rng.dirichlet(np.ones(len(ASSIGNMENTS)))
    p = (lam @ (truth == 1)) / (lam @ (truth >= 0))
    result = repair_graph(blocks, p, "brier")
    np.testing.assert_allclose(result.repaired, p, atol=1e-9)
    assert result.moved <= 1e-12


@pytest.mark.parametrize("names", [("NEGATION", "AND", "ANDOR"), ("COND", "EXPEVIDENCE", "CONDCOND", "OR")])
def test_disjoint_tuples_repair_as_each_tuple_alone(names):
    rng = np.random.default_rng(11)
    blocks, offset, probs = [], 0, []
    for name in names:
        check = get_check(name)
        idx = offset + np.arange(5 * check.n_fields).reshape(5, check.n_fields)
        offset += idx.size
        blocks.append((check, idx))
        probs.append(rng.random(idx.size))
    p = np.concatenate(probs)
    result = repair_graph(blocks, p)
    for (check, idx), part in zip(blocks, result.per_block, strict=True):
        alone = repair_tuples(check, p[idx])
        np.testing.assert_allclose(part.repaired, alone.repaired, atol=1e-8)
        np.testing.assert_allclose(part.guaranteed, alone.guaranteed, atol=1e-8)


def test_questions_outside_every_tuple_keep_their_forecast():
    neg = get_check("NEGATION")
    p = np.array([0.7, 0.5, 0.9, 0.1])
    result = repair_graph([(neg, np.array([[0, 1]]))], p)
    np.testing.assert_allclose(result.repaired, [0.6, 0.4, 0.9, 0.1], atol=1e-9)
    assert result.moved == pytest.approx(0.02, abs=1e-9)
    empty = repair_graph([(neg, np.zeros((0, 2), dtype=int))], p)
    np.testing.assert_array_equal(empty.repaired, p)
    assert empty.moved == 0 and empty.iterations == 0


def test_joint_log_is_refused_with_the_alternatives():
    # Joint log repair exists for yes/no checks, conditional ones included (tests/repair/test_repair_log_joint.py,
    # test_repair_log_conditional.py); multiple-choice and numeric fields are refused.
    blocks = [(get_check("MC_BINARY"), np.array([[0, 1, 2]]))]
    with pytest.raises(ValueError, match="joint log repair is not supported"):
        repair_graph(blocks, np.array([0.3, 0.7, 0.4]), "log")


@pytest.mark.parametrize(
    ("idx", "probs", "message"),
    [
        (np.array([[0, 1]]), np.array([0.2, 1.5]), "finite forecasts in"),
        (np.array([[0, 2]]), np.array([0.2, 0.5]), "outside 0..1"),
        (np.array([[0, 1, 1]]), np.array([0.2, 0.5]), "shape"),
        (np.array([[0.0, 1.0]]), np.array([0.2, 0.5]), "integer"),
    ],
)
def test_bad_graphs_are_refused(idx, probs, message):
    with pytest.raises(ValueError, match=message):
        repair_graph([(get_check("NEGATION"), idx)], probs)


@pytest.mark.parametrize("specs", [BINARY, CONDITIONAL], ids=["binary", "conditional"])
@pytest.mark.parametrize("seed", range(4))
def test_newton_inner_solver_agrees_with_clarabel(specs, seed, monkeypatch):
    blocks, truth = build(specs)
    p = np.random.default_rng(100 + seed).random(truth.shape[1])
    reference = repair_graph(blocks, p, "brier")
    monkeypatch.setenv("CC_REPAIR_SOLVER", "newton")
    result = repair_graph(blocks, p, "brier")
    assert result.status.startswith("Solved"), result.status
    np.testing.assert_allclose(result.repaired, reference.repaired, atol=1e-9)
    assert_joint_guarantee(truth, p, result)


def test_newton_solver_meets_the_kkt_conditions():
    from consistency.repair import qp
    from consistency.repair.active_set import solve_newton

    blocks, truth = build(BINARY)
    p = np.random.default_rng(3).random(truth.shape[1])
    M = len(p)
    parts = [qp.Block(check, idx, M, np.asarray(check.worlds)) for check, idx in blocks]
    system = qp.build(parts, M, None)
    result = solve_newton(system.A_eq, system.b_eq, system.A_in, system.b_in, p)
    assert result is not None and result.kkt <= 1e-11
    np.testing.assert_allclose(p - result.q, system.A_eq.T @ result.y + system.A_in.T @ result.z, atol=1e-9)
    assert (result.z >= 0).all()
    assert (system.A_in @ result.q <= system.b_in + 1e-11).all()
    x, _, _ = qp.solve_clarabel(system, p)
    np.testing.assert_allclose(result.q, x[:M], atol=1e-9)


def test_clarabel_takes_over_when_the_newton_solver_fails(monkeypatch, caplog):
    from consistency.repair import active_set

    blocks, truth = build(CONDITIONAL)
    p = np.random.default_rng(5).random(truth.shape[1])
    reference = repair_graph(blocks, p, "brier")
    monkeypatch.setenv("CC_REPAIR_SOLVER", "newton")
    monkeypatch.setattr(active_set, "_MAX_ROUNDS", 0)  # the solver gives up at once
    with caplog.at_level("WARNING", logger="consistency.repair.graph"):
        result = repair_graph(blocks, p, "brier")
    assert "Clarabel takes over" in caplog.text
    np.testing.assert_allclose(result.repaired, reference.repaired, atol=1e-12)
    assert_joint_guarantee(truth, p, result)
