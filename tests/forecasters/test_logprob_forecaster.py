"""The logprob forecaster: P(Yes) / (P(Yes) + P(No)) of the first answer token, over real HTTP.

The scripted server returns ``logprobs`` in OpenAI's shape when asked, with a distribution its rule
decides (:func:`~consistency.fake_openai.rules.yes_no_chances`: each answer spread over three spellings),
so these tests go through the openai client, the cache, the transcript and the run directory.
"""

from __future__ import annotations

import asyncio
import json
import math

import pytest
from openai.types.chat import ChatCompletion
from typer.testing import CliRunner

from consistency.cli import app
from consistency.fake_openai import Reply, ScriptedServer, probability_for, probability_rule, sequence
from consistency.forecasters import BasicForecaster, ForecasterSpecError, LogprobForecaster, load_forecaster
from consistency.forecasters.logprob import answer_word, yes_no_mass
from consistency.llm import LLM, FatalError, LLMSettings
from consistency.llm.logprobs import NextToken, TokenChance
from consistency.models import ForecastingQuestion

Q = ForecastingQuestion(id="q1", title="Will the Artemis III crew land on the Moon before 2029?", body="Per NASA.")


pytestmark = pytest.mark.usefixtures("in_tmp_dir")


def test_the_scripted_server_answers_logprobs_in_openais_shape_only_when_asked():
    import urllib.request

    def post(srv: ScriptedServer, **extra) -> dict:
        body = {"model": "m", "messages": [{"role": "user", "content": "Will it rain?"}], **extra}
        request = urllib.request.Request(
            f"{srv.base_url}/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    with ScriptedServer(probability_rule()) as srv:
        plain = post(srv)
        asked = post(srv, logprobs=True, top_logprobs=4, max_tokens=1)
    assert plain["choices"][0]["logprobs"] is None and "Probability" in plain["choices"][0]["message"]["content"]
    completion = ChatCompletion.model_validate(asked)  # the openai client's own type accepts it
    first = completion.choices[0].logprobs.content[0]
    assert completion.choices[0].message.content == first.token and completion.choices[0].finish_reason == "length"
    assert len(first.top_logprobs) == 4 and first.top_logprobs[0].token == first.token
    assert [t.logprob for t in first.top_logprobs] == sorted((t.logprob for t in first.top_logprobs), reverse=True)
    assert all(bytes(t.bytes) == t.token.encode() for t in first.top_logprobs)
    assert completion.usage.completion_tokens == 1


def test_the_forecast_is_the_yes_share_of_every_spelling_through_the_llm_layer(tmp_path):
    with ScriptedServer(probability_rule()) as srv:
        forecaster = load_forecaster(f"logprob:{srv.model_spec()}")
        out = forecaster.forecast_sync(Q)
        request = srv.requests[0]
    expected = probability_for(request.last_user_text)  # what the rule's distribution says
    assert out.prob == pytest.approx(expected, abs=1e-9)
    assert request.body["logprobs"] is True and request.body["top_logprobs"] == 20 and request.body["max_tokens"] == 1
    assert not request.wants_json and "Artemis III" in request.last_user_text and "Yes or No" in request.last_user_text
    # the spellings matter: "Yes" alone against "No" alone is not the same number unless p = 0.5
    p_yes, p_no = out.metadata["p_yes"], out.metadata["p_no"]
    assert p_yes == pytest.approx(0.8 * expected) and p_no == pytest.approx(0.8 * (1 - expected))
    assert out.metadata["token"] in ("Yes", "No")


@pytest.mark.parametrize(
    ("token", "word"),
    [
        *[("Yes", "yes"), (" Yes", "yes"), ("YES", "yes"), ("\u2581yes", "yes"), ("No.", "no"), (" no", "no")],
        *[("Yesterday", None), ("Not", None), ("The", None), ("", None)],
    ],
)
def test_answer_words_are_recognised_in_every_spelling_and_nothing_else(token, word):
    assert answer_word(token) == word


def test_masses_sum_spellings():
    listed = [("Yes", 0.4), (" yes", 0.1), ("No", 0.2), ("A", 0.3)]
    top = NextToken(token="Yes", top=[TokenChance(token=t, logprob=math.log(p)) for t, p in listed])
    yes, no = yes_no_mass(top)
    assert yes == pytest.approx(0.5) and no == pytest.approx(0.2)


def test_neither_answer_among_the_top_tokens_is_a_failed_forecast_with_the_reason():
    rule = sequence(Reply.next_token({"The": 0.5, "A": 0.3, "In": 0.2}))
    with ScriptedServer(rule) as srv:
        forecaster = LogprobForecaster(srv.model_spec())

        async def go():
            async with forecaster.session():
                return await forecaster.forecast_safely(Q)

        outcome = asyncio.run(go())
    assert outcome.forecast is None and not outcome.raised
    assert "neither Yes nor No is among the model's 3 most likely first tokens ('The', 'A', 'In'" in outcome.error


def test_only_one_answer_listed_gives_certainty():
    with ScriptedServer(sequence(Reply.next_token({"No": 0.7, "The": 0.3}))) as srv:
        assert LogprobForecaster(srv.model_spec()).forecast_sync(Q).prob == 0.0


def test_an_endpoint_without_logprobs_stops_the_run_with_one_sentence():
    with ScriptedServer(probability_rule(), logprobs=False) as srv:
        forecaster = LogprobForecaster(srv.model_spec())
        questions = [ForecastingQuestion(title=f"Will event {i} happen?") for i in range(20)]
        with pytest.raises(FatalError, match=r"returned no logprobs for model 'scripted'.*use basic:MODEL"):
            asyncio.run(forecaster.forecast_many(questions, concurrency=1))
        assert srv.count == 1  # stopped at the first answer, not after every question


def test_answers_come_back_from_the_cache_and_into_the_transcript(tmp_path):
    messages = LogprobForecaster("local").request(Q)

    async def twice(srv):
        async with LLM(LLMSettings(), transcript=tmp_path / "calls.jsonl") as llm:
            return [await llm.next_token(srv.model_spec(), messages, top_logprobs=5) for _ in range(2)]

    with ScriptedServer(probability_rule()) as srv:
        first, second = asyncio.run(twice(srv))
        assert srv.count == 1
    assert not first.cache_hit and second.cache_hit and first.value == second.value
    assert len(first.value.top) == 5 and first.raw == first.value.token
    lines = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert lines[0]["response_model"] == "NextToken" and lines[0]["params"]["logprobs"] is True
    assert lines[0]["parsed"]["top"][0]["token"] == first.value.token and lines[0]["usage"]["completion_tokens"] == 1


def test_specs_name_the_logprob_forecaster_and_the_bundled_model_defaults_to_it():
    assert type(load_forecaster("local")) is LogprobForecaster
    assert type(load_forecaster("basic:local")) is BasicForecaster  # the number-writing prompt, kept
    assert load_forecaster("logprob:gpt-4o-mini").model == "gpt-4o-mini"
    assert load_forecaster("logprob:http://host:8000/v1::name").label == "logprob_name"
    assert type(load_forecaster("gpt-4o-mini")) is BasicForecaster  # a hosted model keeps the basic default
    assert load_forecaster("logprob", ["top_logprobs=5"]).top_logprobs == 5
    with pytest.raises(ForecasterSpecError, match="top_logprobs must be a whole number from 1 to 100"):
        load_forecaster("logprob", ["top_logprobs=0"])
    with pytest.raises(ForecasterSpecError, match="no option 'reasoning'"):
        load_forecaster("local", ["reasoning=true"])


def test_cc_evaluate_with_logprobs_writes_the_forecasts_the_rule_decides(tmp_path):
    with ScriptedServer(probability_rule()) as srv:
        spec = f"logprob:{srv.model_spec()}"
        res = CliRunner().invoke(app, ["evaluate", "-f", spec, "--checks", "neg", "--limit", "2", "-o", "run"])
        sent = {r.last_user_text: r for r in srv.requests}
    assert res.exit_code == 0, res.output
    records = [json.loads(line) for line in (tmp_path / "run" / "forecasts.jsonl").read_text().splitlines()]
    calls = [json.loads(line) for line in (tmp_path / "run" / "llm_calls.jsonl").read_text().splitlines()]
    assert len(records) == len(sent) == len(calls) > 0
    by_prompt = {c["messages"][-1]["content"]: c for c in calls}
    for text in sent:
        assert by_prompt[text]["parsed"]["token"] in ("Yes", "No")
    assert sorted(r["forecast"]["prob"] for r in records) == pytest.approx(sorted(probability_for(t) for t in sent))
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["forecaster"]["forecaster_class"] == "LogprobForecaster"


def test_logprobs_travel_through_the_batch_api_too(tmp_path):
    with ScriptedServer(probability_rule()) as srv:
        spec = f"logprob:{srv.model_spec()}"
        argv = ["evaluate", "-f", spec, "-c", "neg", "-n", "2", "--batch", "--batch-poll", "0.2", "-o", "run"]
        res = CliRunner().invoke(app, argv)
        sent = [r.last_user_text for r in srv.requests]
        assert srv.batches.batches_created >= 1  # the requests went as lines of a batch file
    assert res.exit_code == 0, res.output
    records = [json.loads(line) for line in (tmp_path / "run" / "forecasts.jsonl").read_text().splitlines()]
    assert sorted(r["forecast"]["prob"] for r in records) == pytest.approx(sorted(probability_for(t) for t in sent))


def test_a_run_recorded_with_local_as_basic_resumes_with_basic():
    """`local` meant the basic forecaster before it meant logprob: a run begun then keeps its forecaster."""
    from consistency.forecasters.loading import load_recorded

    assert type(load_recorded("local", {}, "BasicForecaster")) is BasicForecaster
    assert load_recorded("local", {"reasoning": "true"}, "BasicForecaster").reasoning is True
    assert type(load_recorded("local", {}, "LogprobForecaster")) is LogprobForecaster
    assert type(load_recorded("local", None, None)) is LogprobForecaster
    assert type(load_recorded("basic:local", {}, "LogprobForecaster")) is BasicForecaster  # a spec that says
