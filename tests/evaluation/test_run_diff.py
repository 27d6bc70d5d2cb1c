"""The ``cc diff`` gate never passes on nothing: a check of A that B shares no tuples of, or too few
to test, fails ``--fail-if-worse`` with a sentence saying why (:mod:`consistency.evaluation.diff`)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from consistency import Forecaster
from consistency.cli import app
from consistency.evaluation import evaluate
from consistency.evaluation.diff import DiffInputError, diff_runs, fewest_to_reject
from consistency.forecasters.simple import ConstantForecaster
from consistency.metrics.paired import sign_test, wilcoxon_test

runner = CliRunner()


class Broken(Forecaster):
    """Every question fails (each its own way, so the run is not stopped as hopeless): no tuple is scored."""

    async def forecast(self, question):
        raise RuntimeError(f"no answer to {question.title}")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("gate")
    checks = ["neg", "para"]
    out = {
        "A": evaluate(ConstantForecaster(0.5), checks=checks, limit=10, out=root / "A").run_dir,
        "same": evaluate(ConstantForecaster(0.5), checks=checks, limit=10, out=root / "same").run_dir,
        "failed": evaluate(Broken(), checks=checks, limit=10, out=root / "failed").run_dir,
        "other": evaluate(ConstantForecaster(0.5), checks=checks, limit=10, seed=7, out=root / "other").run_dir,
    }
    empty = root / "empty"
    empty.mkdir()
    for name in ("NegChecker.jsonl", "ParaphraseChecker.jsonl"):
        (empty / name).write_text("")
    out["empty"] = empty
    return out


def test_the_floor_is_the_fewest_pairs_either_test_can_reject_with():
    for level in (0.05, 0.05 / 3, 0.01, 0.001):
        n = fewest_to_reject(level)
        # n pairs all worse: both tests' p is 2 / 2^n, below the level; with n - 1 pairs it cannot be
        assert sign_test(0, n) < level <= sign_test(0, n - 1)
        assert wilcoxon_test(np.arange(1.0, n + 1)) < level <= wilcoxon_test(np.arange(1.0, n))
    assert fewest_to_reject(0.05) == 6


@pytest.mark.parametrize("b", ["failed", "empty", "other"])
def test_a_gate_with_nothing_or_too_little_to_compare_fails_with_a_sentence(runs, b):
    result = diff_runs(runs["A"], runs[b])
    assert result.worse() == []  # nothing significant: the old gate passed
    reasons = result.failures()
    assert len(reasons) == 2 and [r.split(":")[0] for r in reasons] == ["NEGATION", "PARAPHRASE"]
    done = runner.invoke(app, ["diff", str(runs["A"]), str(runs[b]), "--fail-if-worse"])
    assert done.exit_code == 1, done.output
    text = " ".join(done.output.split())
    assert "not comparable: NEGATION: " in text
    if b == "other":  # another sample of the benchmark: a few tuples shared, fewer than the floor
        assert "fewer than 7 (the fewest with which the wilcoxon test could call B worse at level 0.025)" in text
    else:
        assert "B shares none of A's 10 tuples" in text
    plain = runner.invoke(app, ["diff", str(runs["A"]), str(runs[b])])  # no gate asked: a note
    assert plain.exit_code == 0 and "note: too few to test: NEGATION: " in " ".join(plain.output.split())


def test_identical_runs_pass_and_min_shared_sets_the_floor(runs):
    assert diff_runs(runs["A"], runs["same"]).failures() == []
    assert runner.invoke(app, ["diff", str(runs["A"]), str(runs["same"]), "--fail-if-worse"]).exit_code == 0
    shared = diff_runs(runs["A"], runs["other"]).groups["NEGATION"].n
    assert 0 < shared < 7
    low = runner.invoke(app, ["diff", str(runs["A"]), str(runs["other"]), "--fail-if-worse", "--min-shared", "1"])
    assert low.exit_code == 0, low.output
    high = runner.invoke(app, ["diff", str(runs["A"]), str(runs["same"]), "--fail-if-worse", "--min-shared", "11"])
    assert high.exit_code == 1 and "fewer than 11 (the minimum asked for" in " ".join(high.output.split())
    data = json.loads(runner.invoke(app, ["diff", str(runs["A"]), str(runs["failed"]), "--json"]).stdout)
    assert data["min_shared"] == 7 and len(data["not_comparable"]) == 2
    assert runner.invoke(app, ["diff", str(runs["A"]), str(runs["same"]), "--min-shared", "0"]).exit_code == 2


def test_a_reference_with_nothing_scored_fails_the_gate(runs):
    assert diff_runs(runs["failed"], runs["A"]).failures() == [
        f"A ({runs['failed']}) has no scored tuples: there is nothing to compare B with"
    ]


@pytest.mark.parametrize("level", [math.nan, math.inf, 0.0, 1.0, -0.1])
def test_a_level_that_could_never_or_always_reject_is_refused(runs, level):
    with pytest.raises(DiffInputError, match="level must be between 0 and 1"):
        diff_runs(runs["A"], runs["same"], level=level)
    done = runner.invoke(app, ["diff", str(runs["A"]), str(runs["same"]), "--fail-if-worse", "--level", str(level)])
    assert done.exit_code == 2 and "Invalid value for '--level'" in " ".join(done.output.split())
    with pytest.raises(DiffInputError, match="min_shared must be at least 1"):
        diff_runs(runs["A"], runs["same"], min_shared=0)


def test_checks_are_compared_in_file_name_order_as_before_the_store(tmp_path):
    """The order sets the bootstrap's draws: a reader listing checks otherwise changed every interval."""
    run = evaluate(ConstantForecaster(0.5), checks=["para", "neg", "cond"], limit=3, out=tmp_path / "r").run_dir
    result = diff_runs(run, run)
    assert list(result.groups) == ["COND", "NEGATION", "PARAPHRASE"]  # CondChecker < NegChecker < ParaphraseChecker
