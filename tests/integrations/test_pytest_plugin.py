"""The pytest plugin: `assert_consistent` in a user's test suite (run with pytester in a fresh process)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

pytest_plugins = ["pytester"]

FORECASTERS = """
import re
from consistency import Forecast, Forecaster
from consistency.fake_openai import probability_for

NEGATED = re.compile(r"^Will \\u201c([^\\u201d]*)\\u201d resolve NO\\?$")
PARAPHRASED = re.compile(r"^Will the following question resolve YES: \\u201c([^\\u201d]*)\\u201d\\?$")


class Coherent(Forecaster):
    async def forecast(self, question):
        if m := NEGATED.match(question.title):
            return Forecast(prob=1 - probability_for(m.group(1)))
        if m := PARAPHRASED.match(question.title):
            return Forecast(prob=probability_for(m.group(1)))
        return Forecast(prob=probability_for(question.title))


class AlwaysYes(Forecaster):
    async def forecast(self, question):
        return Forecast(prob=0.9)
"""


@pytest.fixture
def suite(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))
    pytester.makepyfile(forecasters=FORECASTERS)
    return pytester


def test_a_consistent_forecaster_passes(suite):
    suite.makepyfile(
        test_gate="""
from forecasters import Coherent

def test_coherent(assert_consistent):
    report = assert_consistent(Coherent(), checks=["neg", "para"], n=6, max_violation=0.001, seed=1)
    assert [f.check.name for f in report.files] == ["NEGATION", "PARAPHRASE"]
    assert all(len(f.line_numbers) == 6 for f in report.files)
"""
    )
    result = suite.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_an_inconsistent_forecaster_fails_with_the_worst_tuples_and_both_answers(suite):
    suite.makepyfile(
        test_gate="""
from forecasters import AlwaysYes

def test_always_yes(assert_consistent):
    assert_consistent(AlwaysYes(), checks=["neg"], n=4, max_violation=0.05, top=2)
"""
    )
    result = suite.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "InconsistentForecaster" in text
    assert "mean arbitrage violation (mean over checks)" in text and "> max_violation 0.05" in text
    assert "worst tuples" in text
    # Under CI=true pytest repeats the whole message in the short summary; count one copy.
    failure = text.split("short test summary info")[0]
    assert failure.count("NEGATION violation") == 2  # top=2
    assert "P = 0.900" in text and "not_P = 0.900" in text and "resolve NO?" in text


def test_the_gate_on_multiple_choice_and_numeric_tuples(suite):
    """A forecaster over HTTP on the bundled typed benchmark: the coherent world passes, the incoherent one fails
    with its worst tuples, a distribution shown by its outcomes."""
    suite.makepyfile(
        test_gate="""
import pytest
from consistency.datasets import typed_benchmark_dir
from consistency.forecasters import BasicForecaster
from consistency.fake_openai import ScriptedServer
from consistency.fake_openai.rules import coherent_rule, incoherent_rule

CHECKS = ["partition4", "mc_binary", "cdf_thresholds", "numeric_paraphrase"]
TUPLES = typed_benchmark_dir() / "tuples"

@pytest.mark.parametrize("rule", [coherent_rule, incoherent_rule])
def test_typed(assert_consistent, rule):
    with ScriptedServer(rule()) as srv:
        report = assert_consistent(BasicForecaster(srv.model_spec()), checks=CHECKS, n=3, tuples=TUPLES,
                                   max_violation=1e-6, per_check=True, top=3)
    assert sorted(f.check.name for f in report.files) == sorted(c.upper() for c in CHECKS)
"""
    )
    result = suite.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    failure = result.stdout.str().split("short test summary info")[0]
    assert "test_typed[coherent_rule] PASSED" in result.stdout.str() or "1 passed" in result.stdout.str()
    for name in ("CDF_THRESHOLDS", "NUMERIC_PARAPHRASE"):
        assert f"mean arbitrage violation ({name})" in failure
    assert "worst tuples" in failure and "202 outcomes, the median in #" in failure


def test_the_sample_is_deterministic_and_the_response_cache_is_reused(tmp_path, monkeypatch):
    from consistency.evaluation.gate import assert_consistent
    from consistency.fake_openai import ScriptedServer
    from consistency.forecasters import BasicForecaster

    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))
    with ScriptedServer() as srv:
        first = assert_consistent(
            BasicForecaster(srv.model_spec()), ["neg"], n=3, max_violation=1.0, out=tmp_path / "a"
        )
        asked = srv.count
        again = assert_consistent(
            BasicForecaster(srv.model_spec()), ["neg"], n=3, max_violation=1.0, out=tmp_path / "b"
        )
        assert asked == 6 and srv.count == asked  # 3 tuples of 2 questions, then nothing asked again
    assert first.files[0].line_numbers == again.files[0].line_numbers
    np.testing.assert_array_equal(first.files[0].scores.probs, again.files[0].scores.probs)


def test_suites_that_do_not_use_it_do_not_load_the_framework(suite):
    suite.makepyfile(
        test_plain="""
import sys

def test_nothing_heavy_was_imported():
    assert "consistency.pytest_plugin" in sys.modules  # registered through the entry point
    heavy = [m for m in ("numpy", "consistency.evaluation", "consistency.forecasters", "openai") if m in sys.modules]
    assert not heavy, heavy
"""
    )
    result = suite.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_loading_the_plugin_costs_only_the_standard_library():
    code = (
        "import sys, time\n"
        "import pytest\n"
        "before = set(sys.modules)\n"
        "import consistency.pytest_plugin\n"
        "print(sorted(m for m in set(sys.modules) - before))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    added = eval(done.stdout)
    assert all(m.startswith("consistency") for m in added), added
    assert set(added) <= {"consistency", "consistency.names", "consistency.pytest_plugin"}, added
