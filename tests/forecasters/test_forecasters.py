"""Forecasters: the user-facing API, every built-in against the scripted server, failure capture."""

from __future__ import annotations

import asyncio
import math
import textwrap

import numpy as np
import pytest

from consistency.fake_openai import Fault, ScriptedServer, faults_then, probability_for, probability_rule
from consistency.forecasters import (
    BasicForecaster,
    CoTForecaster,
    CrowdForecaster,
    Forecaster,
    ForecasterSpecError,
    load_forecaster,
    pool,
)
from consistency.models import Forecast, ForecastingQuestion

Q = ForecastingQuestion(id="q1", title="Will the Artemis III crew land on the Moon before 2029?", body="Per NASA.")


pytestmark = pytest.mark.usefixtures("in_tmp_dir")


class Raises(Forecaster):
    async def forecast(self, question):
        raise RuntimeError("boom")


class Returns(Forecaster):
    def __init__(self, value):
        self.value = value

    async def forecast(self, question):
        return self.value


class Sleeps(Forecaster):
    async def forecast(self, question):
        await asyncio.sleep(5)
        return Forecast(prob=0.5)


def outcome(forecaster, **kw):
    return asyncio.run(forecaster.forecast_safely(Q, **kw))


@pytest.mark.parametrize(
    ("forecaster", "reason"),
    [
        (Raises(), "RuntimeError: boom"),
        (Returns(1.5), "invalid forecast"),
        (Returns(float("nan")), "invalid forecast"),
        (Returns({"prob": -0.1}), "invalid forecast"),
        (Returns("0.4"), "invalid forecast"),
    ],
)
def test_a_failing_forecaster_yields_a_recorded_failure(forecaster, reason):
    o = outcome(forecaster)
    assert o.forecast is None and reason in o.error


def test_a_slow_forecaster_times_out_into_a_failure():
    o = outcome(Sleeps(), timeout=0.05)
    assert o.forecast is None and o.error == "timed out after 0.05 s"


def test_plain_numbers_and_forecasts_are_accepted():
    assert outcome(Returns(0.25)).forecast.prob == 0.25
    assert outcome(Returns(Forecast(prob=0.7, metadata={"x": 1}))).forecast.metadata == {"x": 1}


def test_config_comes_from_the_constructor_and_secrets_are_scrubbed(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-abcdefghijklmnopqrstuvwxyz123456")
    f = Returns("sk-abcdefghijklmnopqrstuvwxyz123456")
    assert f.config() == {"value": "[redacted]"}
    crowd = CrowdForecaster([Returns(0.2), "constant"], method="median")
    assert crowd.config()["members"][0]["forecaster_class"] == "Returns"
    assert crowd.config()["method"] == "median"


def test_options_are_typed_from_the_signature():
    assert load_forecaster("constant", ["p=0.25"]).p == 0.25
    assert load_forecaster("uniform", {"seed": "7"}).seed == 7
    crowd = load_forecaster("crowd", ["members=constant; uniform", "method=logit", "quorum=2"])
    assert [type(m).__name__ for m in crowd.members] == ["ConstantForecaster", "UniformForecaster"]
    assert crowd.quorum == 2
    basic = load_forecaster("gpt-4o", ["temperature=0.3"])
    assert isinstance(basic, BasicForecaster) and basic.params == {"temperature": 0.3}
    cot = load_forecaster("cot:gpt-4o", ["extractor=gpt-4o-mini"])
    assert isinstance(cot, CoTForecaster) and (cot.model, cot.extractor) == ("gpt-4o", "gpt-4o-mini")


@pytest.mark.parametrize(
    ("spec", "options", "message"),
    [
        ("constant", ["q=1"], "has no option 'q'; its options: p"),
        ("constant", ["p=abc"], "option p='abc'"),
        ("constant", ["p=1.5"], "p must be a probability"),
        ("constant", ["p"], "not key=value"),
        ("basci", [], "did you mean 'basic'"),
        ("replay", [], "needs option(s) source"),
        ("nope.py::X", [], "no such file"),
        ("no_such_pkg.mod:Thing", [], "cannot import no_such_pkg.mod"),
    ],
)
def test_bad_specs_and_options_get_one_clear_error(spec, options, message):
    with pytest.raises(ForecasterSpecError, match=None) as info:
        load_forecaster(spec, options)
    assert message in str(info.value)


def test_a_users_forecaster_loads_from_a_file_and_a_module(tmp_path, monkeypatch):
    path = tmp_path / "mine.py"
    path.write_text(
        textwrap.dedent(
            """
            from consistency import Forecaster, Forecast

            class Hedger(Forecaster):
                def __init__(self, lean: float = 0.1, label: str = "x"):
                    self.lean = lean

                async def forecast(self, question):
                    return Forecast(prob=0.5 + self.lean)
            """
        )
    )
    f = load_forecaster(f"{path}::Hedger", ["lean=0.2"])
    assert f.forecast_sync("Will it?").prob == pytest.approx(0.7)
    assert f.config() == {"lean": 0.2, "label": "x"}
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_forecaster("mine:Hedger").forecast_sync("Will it?").prob == pytest.approx(0.6)
    with pytest.raises(ForecasterSpecError, match="defines no 'Nope'"):
        load_forecaster(f"{path}::Nope")


def test_uniform_is_a_function_of_seed_and_question():
    a = load_forecaster("uniform", {"seed": "1"})
    values = [a.forecast_sync(ForecastingQuestion(id=str(i), title="T?")).prob for i in range(50)]
    assert values == [a.forecast_sync(ForecastingQuestion(id=str(i), title="T?")).prob for i in range(50)]
    assert min(values) >= 0 and max(values) <= 1 and np.std(values) > 0.2
    assert (
        load_forecaster("uniform", {"seed": "2"}).forecast_sync(ForecastingQuestion(id="0", title="T?")).prob
        != values[0]
    )


def test_pooling_methods():
    probs = np.array([[0.2, 0.4, 0.9]])
    assert pool(probs, "mean")[0] == pytest.approx(0.5)
    assert pool(probs, "median")[0] == pytest.approx(0.4)
    z = np.mean(np.log(probs / (1 - probs)))
    assert pool(probs, "logit")[0] == pytest.approx(1 / (1 + math.exp(-z)))
    assert pool(np.array([[0.7, 0.7]]), "extremized", alpha=2)[0] == pytest.approx(0.49 / (0.49 + 0.09))
    assert pool(np.array([[0.5, 0.5]]), "extremized")[0] == pytest.approx(0.5)


def test_basic_forecaster_over_http():
    with ScriptedServer(probability_rule()) as srv:
        f = BasicForecaster(srv.model_spec())
        out = f.forecast_sync(Q)
        assert srv.count == 1
    assert 0.02 <= out.prob <= 0.98 and out.metadata["reasoning"]
    assert "Artemis III" in srv.requests[0].last_user_text


def test_basic_forecaster_without_reasoning_asks_for_the_probability_alone():
    """What the bundled model gets by default: a shorter prompt and a schema without free text."""
    with ScriptedServer(probability_rule()) as srv:
        out = BasicForecaster(srv.model_spec(), reasoning=False).forecast_sync(Q)
    request = srv.requests[0]
    assert set(request.schema["properties"]) == {"prob"}
    assert "Artemis III" in request.last_user_text and "justification" not in request.last_user_text
    assert 0.0 <= out.prob <= 1.0 and not out.metadata


def test_reasoning_is_off_by_default_only_for_the_bundled_model():
    assert BasicForecaster("local").reasoning is False
    assert BasicForecaster("gpt-4o-mini").reasoning is True
    assert BasicForecaster("http://127.0.0.1:9/v1::m").reasoning is True
    assert load_forecaster("basic:local", ["reasoning=true"]).reasoning is True
    assert load_forecaster("basic:gpt-4o-mini", ["reasoning=false"]).reasoning is False


def test_cot_keeps_the_reasoning_and_extracts_the_probability():
    with ScriptedServer(probability_rule()) as srv:
        out = CoTForecaster(srv.model_spec()).forecast_sync(Q)
        first, second = srv.requests
    assert not first.wants_json and second.wants_json
    assert out.metadata["reasoning"].endswith(f"Probability: {probability_for(first.last_user_text):.2f}")
    assert "Probability:" in second.last_user_text  # the extractor sees the reasoning
    assert out.metadata["reasoning_summary"]


def test_crowd_pools_members_and_survives_a_failing_one():
    with ScriptedServer(probability_rule()) as srv:
        crowd = CrowdForecaster([BasicForecaster(srv.model_spec()), "constant", Raises()], method="mean")
        out = crowd.forecast_sync(Q)
    basic = next(m["prob"] for m in out.metadata["members"] if m["name"].startswith("basic"))
    assert out.prob == pytest.approx((basic + 0.5) / 2)
    assert any("RuntimeError" in f for f in out.metadata["failed"])
    with pytest.raises(Exception, match="only 0 of 1"):
        CrowdForecaster([Raises()]).forecast_sync(Q)


def test_a_model_that_keeps_failing_becomes_a_failure_with_its_reason():
    rule = faults_then(probability_rule(), *[Fault.server_error(500)] * 10)
    with ScriptedServer(rule) as srv:
        f = BasicForecaster(srv.model_spec())

        async def go():
            from consistency.llm import LLMSettings

            async with f.session(LLMSettings(max_attempts=2, max_backoff=0.05, timeout=2)):
                return await f.forecast_safely(Q)

        o = asyncio.run(go())
    assert o.forecast is None and "500" in o.error


def test_cc_ask_answers_through_the_shared_llm_options():
    from typer.testing import CliRunner

    from consistency.cli import app

    with ScriptedServer(probability_rule()) as srv:
        res = CliRunner().invoke(app, ["ask", "Will it rain in 2030?", "-m", srv.model_spec(), "--json", "--no-cache"])
        sent = srv.requests[0].last_user_text
    assert res.exit_code == 0, res.output
    import json

    answer = json.loads(res.stdout)
    assert answer["ok"] and answer["prob"] == probability_for(sent) and answer["cache_hit"] is False


def test_cc_ask_sends_what_the_basic_forecaster_sends():
    """`--no-reasoning` is the bundled model's default prompt: probability only, no justification field."""
    import json

    from typer.testing import CliRunner

    from consistency.cli import app
    from consistency.forecasters.llm import BasicForecaster, ProbabilityAnswer

    assert BasicForecaster("local").request(ForecastingQuestion(title="Will X?"))[1] is ProbabilityAnswer
    with ScriptedServer(probability_rule()) as srv:
        answers = {}
        for flag in ("--reasoning", "--no-reasoning"):
            res = CliRunner().invoke(
                app, ["ask", "Will it rain in 2030?", "-m", srv.model_spec(), "--json", "--no-cache", flag]
            )
            assert res.exit_code == 0, res.output
            answers[flag] = json.loads(res.stdout)
        schemas = [json.dumps(r.body.get("response_format") or r.body.get("tools")) for r in srv.requests]
    assert answers["--reasoning"]["reasoning"] and answers["--no-reasoning"]["reasoning"] is None
    assert "reasoning" in schemas[0] and "reasoning" not in schemas[1]
