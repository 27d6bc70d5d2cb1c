"""Consistency gates refuse a limit that could never fail (NaN, infinity, a negative number) before any
question is asked: ``--max-violation``, ``--fail-on-error``, ``assert_consistent`` and its pytest fixture,
and :func:`~consistency.evaluation.gate.over_limit` (:mod:`consistency.evaluation.gate`)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from consistency import Forecast, Forecaster
from consistency.cli import app
from consistency.errors import InputError
from consistency.evaluation import evaluate
from consistency.evaluation.gate import InconsistentForecaster, LimitError, assert_consistent, checked_limit, over_limit

runner = CliRunner()
BAD = [math.nan, math.inf, -math.inf, -0.5]


class Counting(Forecaster):
    """Always 0.9 (NEGATION violated), counting the questions it is asked."""

    def __init__(self) -> None:
        self.asked = 0

    async def forecast(self, question):
        self.asked += 1
        return Forecast(prob=0.9)


pytestmark = pytest.mark.usefixtures("in_tmp_dir")


@pytest.mark.parametrize("limit", BAD)
def test_a_limit_that_could_never_fail_is_refused_with_its_name(limit):
    with pytest.raises(LimitError, match=r"^max_violation must be ") as caught:
        checked_limit("max_violation", limit)
    assert isinstance(caught.value, InputError)
    assert checked_limit("max_violation", 0) == 0.0 and checked_limit("x", 0.05) == 0.05
    with pytest.raises(LimitError, match="must be a number"):
        checked_limit("max_violation", "abc")  # type: ignore[arg-type]


@pytest.mark.parametrize("limit", BAD)
def test_assert_consistent_refuses_it_before_asking_anything(tmp_path, limit):
    forecaster = Counting()
    with pytest.raises(LimitError, match="max_violation must be"):
        assert_consistent(forecaster, checks=["neg"], n=2, max_violation=limit, out=tmp_path / "gate")
    assert forecaster.asked == 0 and not (tmp_path / "gate").exists()
    with pytest.raises(InputError, match="n must be a whole number"):
        assert_consistent(forecaster, checks=["neg"], n=0, out=tmp_path / "gate")


def test_the_gate_still_fails_an_inconsistent_forecaster_and_over_limit_counts_a_nan_mean_as_over(
    tmp_path, monkeypatch
):
    with pytest.raises(InconsistentForecaster, match="mean arbitrage violation"):
        assert_consistent(Counting(), checks=["neg"], n=2, max_violation=0.05, out=tmp_path / "a")
    report = evaluate(Counting(), checks=["neg"], limit=2, out=tmp_path / "b").report
    mean = report.aggregate()["default"]["avg_violation"]
    assert over_limit(report, mean) == [] and over_limit(report, mean * 0.99) == [("overall", mean)]
    with pytest.raises(LimitError):
        over_limit(report, math.nan)
    nan_stats = {"default": SimpleNamespace(num_samples=2, avg_violation=math.nan)}
    monkeypatch.setattr(type(report.files[0]), "stats", lambda self: nan_stats)
    assert over_limit(report, 10.0, per_check=True)[0][0] == "NEGATION"  # NaN is within no limit


@pytest.mark.parametrize("flag", ["--max-violation", "--fail-on-error"])
@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_the_cli_refuses_it_before_the_run(tmp_path, flag, value):
    args = ["evaluate", "-f", "constant", "-F", "p=0.9", "-c", "neg", "-n", "2", "-o", "run", flag, value]
    done = runner.invoke(app, args)
    assert done.exit_code == 2, done.output
    text = " ".join(done.output.split())  # typer's range check or the gate's own: either names the flag
    assert (f"'{flag}'" in text or f"{flag} must be" in text) and not (tmp_path / "run").exists()


pytest_plugins = ["pytester"]


def test_the_pytest_fixture_refuses_it_too(pytester, tmp_path, monkeypatch):
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))
    pytester.makepyfile(
        test_gate="""
import math
from types import SimpleNamespace
from consistency.forecasters.simple import ConstantForecaster

def test_nan(assert_consistent):
    assert_consistent(ConstantForecaster(0.9), checks=["neg"], n=2, max_violation=math.nan)
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*LimitError: max_violation must be a finite number, got nan*"])
