"""Tuples that contradict each other: the joint repair names an irreducible conflicting set instead of a number.

Each set found is checked with an independent linear program (scipy's HiGHS over the hulls of the checks'
worlds): the set has no coherent forecasts, and every proper subset has some.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from consistency.checks import get_check
from consistency.checks.check import NONE
from consistency.cli import app
from consistency.repair import repair_graph, repair_tuples
from consistency.repair.conflicts import ConflictingTuples
from consistency.repair.runs import ConflictingForecasts, repair_run
from tests.support.repair_fixtures import write_forecast_lines

runner = CliRunner()

# BUT(a, b, c), PARA(a, c), NEG(b, d), PARA(d, a), CONS(c, b): a + b = c and a = c give b = 0, so d = 1 = a = c,
# and c <= b fails. Any four of them can hold.
FIVE = [
    ("BUT", (0, 1, 2)),
    ("PARAPHRASE", (0, 2)),
    ("NEGATION", (1, 3)),
    ("PARAPHRASE", (3, 0)),
    ("CONSEQUENCE", (2, 1)),
]
BINARY_CHECKS = ["NEGATION", "PARAPHRASE", "CONSEQUENCE", "AND", "OR", "ANDOR", "BUT", "MONOTONE"]


def blocks_of(tuples):
    """Blocks of (check, idx) in first-seen order, and each tuple's (block, row)."""
    rows: dict[str, list] = {}
    where = []
    for name, idx in tuples:
        where.append((list(rows).index(name) if name in rows else len(rows), len(rows.get(name, []))))
        rows.setdefault(name, []).append(list(idx))
    return [(get_check(name), np.array(r)) for name, r in rows.items()], where


def coherent_exists(tuples, M: int) -> bool:
    """Independent test (HiGHS): forecasts over M questions with every tuple in the hull of its check's worlds."""
    from scipy.optimize import linprog

    n_lam = sum(len(get_check(name).worlds) for name, _ in tuples)
    A, b = [], []
    col = M
    for name, idx in tuples:
        W = get_check(name).worlds.astype(float)
        assert not (W == NONE).any()
        k = len(W)
        for f, q in enumerate(idx):  # q[idx_f] - Σ λ_w W[w, f] = 0
            row = np.zeros(M + n_lam)
            row[q] += 1.0
            row[col : col + k] -= W[:, f]
            A.append(row)
            b.append(0.0)
        row = np.zeros(M + n_lam)
        row[col : col + k] = 1.0
        A.append(row)
        b.append(1.0)
        col += k
    bounds = [(0, 1)] * M + [(0, None)] * n_lam
    result = linprog(np.zeros(M + n_lam), A_eq=np.array(A), b_eq=np.array(b), bounds=bounds, method="highs")
    assert result.status in (0, 2), result.message
    return result.status == 0


def assert_irreducible(tuples, M: int) -> None:
    assert not coherent_exists(tuples, M)
    for size in range(1, len(tuples)):
        for subset in itertools.combinations(tuples, size):
            assert coherent_exists(list(subset), M), subset


def random_conflicts(count: int) -> list[tuple[list, int]]:
    """Random graphs of binary checks over 7 questions (texts reused in several roles) that HiGHS finds infeasible."""
    found = []
    for seed in itertools.count():
        rng = np.random.default_rng(seed)
        tuples = []
        for _ in range(9):
            name = BINARY_CHECKS[rng.integers(len(BINARY_CHECKS))]
            tuples.append((name, tuple(int(q) for q in rng.choice(7, size=get_check(name).n_fields, replace=False))))
        if not coherent_exists(tuples, 7):
            found.append((tuples, seed))
        if len(found) == count or seed > 500:
            return found


def test_the_five_tuple_contradiction_raises_with_all_five():
    blocks, where = blocks_of(FIVE)
    with pytest.raises(ConflictingTuples) as caught:
        repair_graph(blocks, np.array([0.3, 0.4, 0.6, 0.5]))
    assert caught.value.certain and caught.value.status == "PrimalInfeasible"
    assert sorted(caught.value.tuples) == sorted(where)
    assert_irreducible(FIVE, 4)


@pytest.mark.parametrize("case", range(3))
def test_a_random_infeasible_graph_names_an_irreducible_conflicting_subset(case):
    graphs = random_conflicts(3)
    assert len(graphs) == 3
    tuples, seed = graphs[case]
    blocks, where = blocks_of(tuples)
    p = np.random.default_rng(seed).random(7)
    with pytest.raises(ConflictingTuples) as caught:
        repair_graph(blocks, p)
    named = [tuples[where.index(t)] for t in caught.value.tuples]
    assert caught.value.certain and 2 <= len(named) <= len(tuples)
    assert_irreducible(named, 7)
    # --skip-conflicts: the rest is repaired, the same as the joint repair of the rest alone.
    result = repair_graph(blocks, p, skip_conflicts=True)
    assert set(caught.value.tuples) <= set(result.left_out)
    kept = [t for t, w in zip(tuples, where, strict=True) if w not in result.left_out]
    assert coherent_exists(kept, 7) and not coherent_exists(tuples, 7)
    alone_blocks, _ = blocks_of(kept)
    alone = repair_graph(alone_blocks, p)
    np.testing.assert_allclose(result.repaired, alone.repaired, atol=1e-9)
    for (check, idx), part in zip(blocks, result.per_block, strict=True):
        rows = [r for r in range(len(idx)) if (blocks.index((check, idx)), r) not in result.left_out]
        assert repair_tuples(check, part.repaired[rows]).moved.max(initial=0.0) <= 1e-16
    assert result.status.startswith("Solved")


def test_a_feasible_graph_has_nothing_left_out():
    blocks, _ = blocks_of(FIVE[:4])
    result = repair_graph(blocks, np.array([0.3, 0.4, 0.6, 0.5]), skip_conflicts=True)
    assert result.left_out == [] and result.status == "Solved"


FIVE_TITLES = ["Will A happen?", "Will B happen?", "Will C happen?", "Will D happen?"]


def _write_five(root):
    rng = np.random.default_rng(0)
    lines = [(name, [FIVE_TITLES[q] for q in idx], list(rng.uniform(0.1, 0.9, len(idx)))) for name, idx in FIVE]
    lines += [("NEGATION", ["Will E happen?", "Will E not happen?"], [0.7, 0.6])]  # unrelated, repairable
    return write_forecast_lines(root, lines)


def test_cli_stops_on_a_conflict_names_the_tuples_and_writes_nothing(tmp_path):
    source = _write_five(tmp_path / "five")
    out = tmp_path / "out"
    done = runner.invoke(app, ["repair", str(source), "--out", str(out)])
    assert done.exit_code == 1, done.output
    assert "5 tuples contradict each other" in done.output and "--skip-conflicts" in done.output
    for title in FIVE_TITLES:
        assert title in done.output
    assert "ButChecker.jsonl:1" in done.output and "Will E happen?" not in done.output
    assert "guaranteed" not in done.output
    assert not out.exists() and not list(tmp_path.glob(".out*"))
    with pytest.raises(ConflictingForecasts) as caught:
        repair_run(source, out=out)
    assert len(caught.value.described) == 5 and caught.value.certain
    assert {t.check for t in caught.value.described} == {"BUT", "PARAPHRASE", "NEGATION", "CONSEQUENCE"}


def test_cli_skip_conflicts_repairs_the_rest_and_lists_what_it_left_out(tmp_path):
    source = _write_five(tmp_path / "five")
    out = tmp_path / "out"
    done = runner.invoke(app, ["repair", str(source), "--out", str(out), "--skip-conflicts"])
    assert done.exit_code == 0, done.output
    assert "5 tuple(s) left out" in done.output and "consistent with all its other tuples" in done.output
    report = json.loads((out / "repair.json").read_text())
    assert len(report["left_out"]) == 5 and {t["conflict"] for t in report["left_out"]} == {0}
    assert report["solver_status"] == "Solved"
    neg = [json.loads(line) for line in (out / "NegChecker.jsonl").read_text().splitlines()]
    probs = [line["line"]["not_P"]["forecast"]["prob"] + line["line"]["P"]["forecast"]["prob"] for line in neg]
    assert probs[-1] == pytest.approx(1.0, abs=1e-9)  # the unrelated tuple is repaired


def test_cli_names_a_random_conflict_from_files(tmp_path):
    tuples, _ = random_conflicts(1)[0]
    titles = [f"Will event {q} happen?" for q in range(7)]
    lines = [(name, [titles[q] for q in idx], [0.5] * len(idx)) for name, idx in tuples]
    source = write_forecast_lines(tmp_path / "random", lines)
    done = runner.invoke(app, ["repair", str(source), "--out", str(tmp_path / "out")])
    assert done.exit_code == 1, done.output
    assert "tuples contradict each other" in done.output and not (tmp_path / "out").exists()
    with pytest.raises(ConflictingForecasts) as caught:
        repair_run(source, out=tmp_path / "out")
    index = {t: q for q, t in enumerate(titles)}
    named = [(t.check, tuple(index[title] for title in t.questions.values())) for t in caught.value.described]
    assert_irreducible(named, 7)


def all_worlds_exist(tuples, M: int) -> bool:
    """Brute force: some resolution (1 / 0 / -1) of every question matches a world of every tuple's check."""
    for values in itertools.product((1, 0, -1), repeat=M):
        v = np.array(values)
        if all((get_check(name).worlds == v[list(idx)]).all(axis=1).any() for name, idx in tuples):
            return True
    return False


# PARA(a, b) and NEG(a, b): coherent only at a = b = 1/2, a point between the worlds but no world.
NO_WORLD = [("PARAPHRASE", (0, 1)), ("NEGATION", (0, 1)), ("AND", (0, 2, 3))]


def test_coherent_forecasts_without_any_joint_world_are_a_conflict_too():
    blocks, where = blocks_of(NO_WORLD)
    p = np.array([0.3, 0.4, 0.8, 0.1])
    assert coherent_exists(NO_WORLD, 4)  # the QP is feasible: the old code printed a guarantee about no world
    with pytest.raises(ConflictingTuples) as caught:
        repair_graph(blocks, p)
    assert caught.value.kind == "no_world" and caught.value.certain
    named = [NO_WORLD[where.index(t)] for t in caught.value.tuples]
    assert sorted(named) == sorted(NO_WORLD[:2])
    assert not all_worlds_exist(named, 4) and all(all_worlds_exist([t], 4) for t in named)
    result = repair_graph(blocks, p, skip_conflicts=True)
    assert result.worlds == "found" and sorted(result.left_out) == sorted(caught.value.tuples)
    for score in ("log",):
        with pytest.raises(ConflictingTuples):
            repair_graph(blocks, p, score)


@pytest.mark.parametrize("seed", range(40))
def test_the_world_search_agrees_with_brute_force(seed):
    from consistency.repair.worlds import WorldSearch

    names = ["NEGATION", "PARAPHRASE", "CONSEQUENCE", "AND", "OR", "ANDOR", "BUT", "COND", "CONDCOND", "EXPEVIDENCE"]
    rng = np.random.default_rng(seed)
    tuples = []
    for _ in range(rng.integers(2, 7)):
        name = names[rng.integers(len(names))]
        tuples.append((name, tuple(int(q) for q in rng.choice(6, size=get_check(name).n_fields, replace=False))))
    blocks, _ = blocks_of(tuples)
    found, world = WorldSearch(blocks, 6).find()
    assert found == ("found" if all_worlds_exist(tuples, 6) else "none")
    if world is not None:
        for name, idx in tuples:
            assert (get_check(name).worlds == world[list(idx)]).all(axis=1).any()


def test_cli_names_tuples_that_no_world_satisfies(tmp_path):
    titles = ["Will A happen?", "Will B happen?", "Will C happen?", "Will D happen?"]
    lines = [(name, [titles[q] for q in idx], [0.6] * len(idx)) for name, idx in NO_WORLD]
    source = write_forecast_lines(tmp_path / "noworld", lines)
    done = runner.invoke(app, ["repair", str(source), "--out", str(tmp_path / "out")])
    assert done.exit_code == 1, done.output
    assert "no world resolves them all as their checks allow" in done.output and "guaranteed" not in done.output
    assert not (tmp_path / "out").exists()
