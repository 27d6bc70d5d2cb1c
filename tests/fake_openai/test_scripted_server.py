"""The scripted OpenAI-compatible server, driven over real HTTP by the real ``openai`` and ``instructor`` clients.

No mocks: every test starts a :class:`ScriptedServer` on 127.0.0.1 and talks to it as an application would, so
these tests also pin down how the client libraries report each fault (exception classes, headers).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import math
import re
import signal
import subprocess
import sys
import time
import urllib.request
from typing import Literal

import pytest

pytest.importorskip("h11")
openai = pytest.importorskip("openai")
instructor = pytest.importorskip("instructor")

from instructor.core import InstructorRetryException  # noqa: E402
from pydantic import BaseModel, Field  # noqa: E402

from consistency.fake_openai import (  # noqa: E402
    Fault,
    Reply,
    ScriptedRequest,
    ScriptedServer,
    every_nth,
    faults_then,
    probability_for,
    probability_rule,
    schema_rule,
    sequence,
    together,
)

QUESTION = "Will the Eiffel Tower still stand on 2030-01-01?"


class F(BaseModel):
    prob: float = Field(ge=0, le=1)
    reasoning: str


def client(srv: ScriptedServer, **options) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=srv.base_url, api_key="test-key", max_retries=0, **options)


def ask(text: str = QUESTION) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You are a forecaster."}, {"role": "user", "content": text}]


def http_call(srv: ScriptedServer, requests: list[tuple[str, str, bytes | None]]) -> list[tuple[int, dict]]:
    """Several raw requests on one keep-alive connection (stdlib client), as (status, JSON body) pairs."""
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    out = []
    try:
        for method, path, body in requests:
            conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            out.append((response.status, json.loads(response.read())))
    finally:
        conn.close()
    return out


# ---- the happy path ---------------------------------------------------------------------------


def test_chat_completion_is_a_standard_object_with_a_forecast_sentence():
    async def run(srv):
        async with client(srv) as c:
            return await c.chat.completions.create(model="my-model", messages=ask())

    with ScriptedServer() as srv:
        completion = asyncio.run(run(srv))
    assert completion.object == "chat.completion" and completion.id and completion.created > 0
    assert completion.model == "my-model"
    choice = completion.choices[0]
    assert choice.finish_reason == "stop" and choice.message.tool_calls is None
    assert choice.message.content.endswith(f"Probability: {probability_for(QUESTION):.2f}")
    usage = completion.usage
    assert usage.prompt_tokens >= 1 and usage.completion_tokens >= 1
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    p = probability_for(QUESTION)
    assert 0.02 <= p <= 0.98 and p == round(p, 2)


def test_health_models_and_http_errors_on_one_keep_alive_connection():
    stream = json.dumps({"model": "m", "messages": ask(), "stream": True}).encode()
    with ScriptedServer() as srv:
        results = http_call(
            srv,
            [
                ("GET", "/health", None),
                ("GET", "/v1/models", None),
                ("POST", "/v1/nowhere", b"{}"),
                ("POST", "/v1/chat/completions", b"{not json"),
                ("POST", "/v1/chat/completions", stream),
                ("GET", "/v1/chat/completions", None),
                ("POST", "/v1/chat/completions", json.dumps({"model": "m", "messages": ask()}).encode()),
            ],
        )
        assert srv.count == 1  # only the valid chat completion reached the rule
    statuses = [status for status, _ in results]
    assert statuses == [200, 200, 404, 400, 400, 405, 200]
    assert results[0][1] == {"status": "ok"}
    assert [m["id"] for m in results[1][1]["data"]] == ["scripted"]
    for _, body in results[2:6]:
        assert set(body["error"]) >= {"message", "type", "code"}


def test_openai_client_sees_404_and_stream_refusal_as_status_errors():
    async def run(srv):
        async with client(srv) as c:
            with pytest.raises(openai.BadRequestError) as refused:
                await c.chat.completions.create(model="m", messages=ask(), stream=True)
            assert refused.value.code == "unsupported_parameter"
            assert [m.id async for m in c.models.list()] == ["scripted"]
            with pytest.raises(openai.NotFoundError):
                await c.post("/nowhere", body={}, cast_to=object)

    with ScriptedServer() as srv:
        asyncio.run(run(srv))


def test_instructor_tools_mode_returns_the_predicted_probability():
    async def run(srv):
        async with client(srv) as c:
            structured = instructor.from_openai(c, mode=instructor.Mode.TOOLS)
            return await structured.chat.completions.create(model="scripted", response_model=F, messages=ask())

    with ScriptedServer() as srv:
        answer = asyncio.run(run(srv))
        (request,) = srv.requests
    assert isinstance(answer, F) and answer.prob == probability_for(QUESTION)
    assert answer.reasoning.endswith(f"Probability: {answer.prob:.2f}")
    assert request.tool_name == "F" and set(request.schema["properties"]) == {"prob", "reasoning"}
    assert request.last_user_text == QUESTION and request.response_format is None


@pytest.mark.parametrize("mode_name", ["JSON_SCHEMA", "JSON"])
def test_instructor_json_modes_return_the_predicted_probability(mode_name):
    mode = getattr(instructor.Mode, mode_name, None)
    if mode is None:
        pytest.skip(f"instructor {instructor.__version__} has no Mode.{mode_name}")

    async def run(srv):
        async with client(srv) as c:
            try:
                structured = instructor.from_openai(c, mode=mode)
            except Exception as exc:  # instructor refuses modes it does not register for OpenAI
                pytest.skip(f"instructor rejects Mode.{mode_name} with openai {openai.__version__}: {exc}")
            return await structured.chat.completions.create(model="scripted", response_model=F, messages=ask())

    with ScriptedServer() as srv:
        answer = asyncio.run(run(srv))
        (request,) = srv.requests
    assert answer.prob == probability_for(QUESTION)
    assert request.tool_name is None and request.wants_json
    if mode_name == "JSON_SCHEMA":
        assert request.response_format["type"] == "json_schema" and "prob" in request.schema["properties"]
    else:  # json_object carries no schema: the rule falls back to a forecast object
        assert request.response_format == {"type": "json_object"} and request.schema is None


class Source(BaseModel):
    url: str
    weight: int = Field(ge=3, le=7)


class Report(BaseModel):
    verdict: Literal["yes", "no", "unsure"]
    probability: float = Field(gt=0, lt=1)
    confidence_pct: int = Field(ge=10, le=20)
    sources: list[Source] = Field(min_length=1, max_length=2)
    main_source: Source
    note: str | None = None
    flag: bool


def test_schema_rule_satisfies_nested_pydantic_schemas_deterministically():
    async def run(srv, text):
        async with client(srv) as c:
            structured = instructor.from_openai(c, mode=instructor.Mode.TOOLS)
            return await structured.chat.completions.create(
                model="scripted", response_model=Report, messages=ask(text), max_retries=0
            )

    with ScriptedServer(schema_rule(overrides={"flag": True})) as srv:
        # compare dumps: instructor attaches the raw response as a private attribute
        first, again, other = (asyncio.run(run(srv, t)).model_dump() for t in ("q1", "q1", "q2"))
        assert "$defs" in srv.requests[0].schema  # the nested model arrives as a $ref
    assert first == again and first != other
    assert first["probability"] == probability_for("q1") and first["flag"] is True
    assert first["note"] is not None  # optional fields get their first non-null option


def test_reply_text_when_tools_were_offered_is_plain_content():
    async def run(srv):
        tool = {"type": "function", "function": {"name": "F", "parameters": F.model_json_schema()}}
        async with client(srv) as c:
            return await c.chat.completions.create(model="m", messages=ask(), tools=[tool])

    with ScriptedServer(lambda request: Reply.text("I refuse to use tools.")) as srv:
        completion = asyncio.run(run(srv))
    message = completion.choices[0].message
    assert message.content == "I refuse to use tools." and message.tool_calls is None
    assert completion.choices[0].finish_reason == "stop"


async def _async_rule(request: ScriptedRequest) -> Reply:
    await asyncio.sleep(0)
    return Reply.json({"prob": "very likely", "reasoning": "schema-violating on purpose"})


def test_async_rule_and_schema_violating_answer_fail_validation_in_instructor():
    async def run(srv):
        async with client(srv) as c:
            structured = instructor.from_openai(c, mode=instructor.Mode.TOOLS)
            with pytest.raises(InstructorRetryException):
                await structured.chat.completions.create(model="m", response_model=F, messages=ask(), max_retries=1)

    with ScriptedServer(_async_rule) as srv:
        asyncio.run(run(srv))
        # instructor re-asks once, appending the error, so the second request has new messages
        assert [r.attempt for r in srv.requests] == [0, 0]


# ---- faults -----------------------------------------------------------------------------------


def test_rate_limit_raises_rate_limit_error_with_retry_after_headers():
    async def run(srv):
        async with client(srv) as c:
            with pytest.raises(openai.RateLimitError) as caught:
                await c.chat.completions.create(model="m", messages=ask())
        return caught.value

    with ScriptedServer(lambda request: Fault.rate_limit(retry_after=0.25)) as srv:
        error = asyncio.run(run(srv))
    assert error.status_code == 429 and error.code == "rate_limit_exceeded"
    assert error.response.headers["retry-after"] == "0.25"
    assert error.response.headers["retry-after-ms"] == "250"


@pytest.mark.parametrize("status", [500, 503])
def test_server_error_raises_internal_server_error(status):
    async def run(srv):
        async with client(srv) as c:
            with pytest.raises(openai.InternalServerError) as caught:
                await c.chat.completions.create(model="m", messages=ask())
        return caught.value

    with ScriptedServer(lambda request: Fault.server_error(status)) as srv:
        assert asyncio.run(run(srv)).status_code == status


def test_hang_times_out_while_other_requests_are_served():
    """While "slow" hangs (an hour), "fast" is answered: the server held both at once. No clock is read:
    stopping the server does not wait for the hang, or the test would take an hour."""

    def rule(request):
        return Fault.hang(3600) if request.last_user_text == "slow" else probability_rule()(request)

    async def run(srv):
        async with client(srv, timeout=30) as c:
            slow = asyncio.ensure_future(c.chat.completions.create(model="m", messages=ask("slow"), timeout=3))
            while srv.count < 1 and not slow.done():  # "slow" has arrived and hangs
                await asyncio.sleep(0.01)
            fast = await c.chat.completions.create(model="m", messages=ask("fast"))
            in_flight = srv.max_in_flight
            return await asyncio.gather(slow, return_exceptions=True), fast, in_flight

    with ScriptedServer(rule) as srv:
        (slow,), fast, in_flight = asyncio.run(run(srv))
    assert in_flight == 2
    assert isinstance(slow, openai.APITimeoutError)
    assert fast.choices[0].message.content.endswith(f"{probability_for('fast'):.2f}")


def test_hang_then_answers_normally():
    async def run(srv):
        async with client(srv) as c:
            return await c.chat.completions.create(model="m", messages=ask())

    with ScriptedServer(sequence(Fault.hang(0.1, then=Reply.text("late")))) as srv:
        start = time.perf_counter()
        completion = asyncio.run(run(srv))
    assert completion.choices[0].message.content == "late" and time.perf_counter() - start >= 0.1


def test_malformed_body_raises_json_decode_error_from_the_client():
    async def run(srv):
        async with client(srv) as c:
            # openai 3.3 parses the 200 body without wrapping the failure: a bare json.JSONDecodeError
            with pytest.raises(json.JSONDecodeError):
                await c.chat.completions.create(model="m", messages=ask())

    with ScriptedServer(lambda request: Fault.malformed()) as srv:
        asyncio.run(run(srv))


def test_dropped_connection_raises_api_connection_error():
    async def run(srv):
        async with client(srv) as c:
            with pytest.raises(openai.APIConnectionError) as caught:
                await c.chat.completions.create(model="m", messages=ask())
            assert not isinstance(caught.value, openai.APITimeoutError)
            # the client recovers on a fresh connection
            return await c.chat.completions.create(model="m", messages=ask("next"))

    with ScriptedServer(sequence(Fault.drop())) as srv:
        assert asyncio.run(run(srv)).choices[0].message.content


def test_faults_then_fails_first_attempts_per_message_list_and_records_attempts():
    rule = faults_then(probability_rule(), Fault.server_error(502), Fault.rate_limit(0.01))

    async def run(srv):
        async with client(srv) as c:
            with pytest.raises(openai.InternalServerError):
                await c.chat.completions.create(model="m", messages=ask())
            with pytest.raises(openai.RateLimitError):
                await c.chat.completions.create(model="m", messages=ask())
            third = await c.chat.completions.create(model="m", messages=ask())
            # the client's own retries get through the faults, honouring retry-after-ms
            async with client(srv).with_options(max_retries=2) as retrying:
                srv.rule = faults_then(probability_rule(), Fault.rate_limit(0.01), Fault.rate_limit(0.01))
                other = await retrying.chat.completions.create(model="m", messages=ask("other"))
        return third, other

    with ScriptedServer(rule) as srv:
        third, other = asyncio.run(run(srv))
        requests = srv.requests
        srv.reset()
        assert srv.count == 0 and srv.requests == []
    assert third.choices[0].message.content.endswith(f"{probability_for(QUESTION):.2f}")
    assert other.choices[0].message.content.endswith(f"{probability_for('other'):.2f}")
    assert [(r.index, r.attempt, r.last_user_text) for r in requests] == [
        (0, 0, QUESTION),
        (1, 1, QUESTION),
        (2, 2, QUESTION),
        (3, 0, "other"),
        (4, 1, "other"),
        (5, 2, "other"),
    ]


def test_every_nth_and_sequence_follow_global_arrival_order():
    async def run(srv, n):
        out = []
        async with client(srv) as c:
            for i in range(n):
                try:
                    completion = await c.chat.completions.create(model="m", messages=ask(f"q{i}"))
                    out.append(completion.choices[0].message.content)
                except openai.APIStatusError as exc:
                    out.append(exc.status_code)
        return out

    text = schema_rule(text=lambda question: question.upper())
    with ScriptedServer(every_nth(text, 3, Fault.server_error())) as srv:
        assert asyncio.run(run(srv, 6)) == ["Q0", "Q1", 500, "Q3", "Q4", 500]
    with ScriptedServer(sequence(Reply.text("first"), Fault.rate_limit(), then=text)) as srv:
        assert asyncio.run(run(srv, 3)) == ["first", 429, "Q2"]
        srv.reset()  # the arrival index restarts too
        assert asyncio.run(run(srv, 1)) == ["first"]


# ---- concurrency, embeddings, ways to run -----------------------------------------------------


def test_64_requests_are_served_at_once():
    """Each of 64 requests is held until all 64 have arrived (``together``): they are all answered only
    if the server serves them concurrently; its record of requests in flight says 64 too."""

    async def run(srv):
        async with client(srv) as c:
            return await asyncio.gather(
                *(c.chat.completions.create(model="m", messages=ask(f"q{i}")) for i in range(64))
            )

    with ScriptedServer(together(probability_rule(), 64), latency=0.2) as srv:
        answers = asyncio.run(run(srv))
        assert srv.count == 64 and srv.max_in_flight == 64
    assert [a.choices[0].message.content[-4:] for a in answers] == [
        f"{probability_for(f'q{i}'):.2f}" for i in range(64)
    ]


def test_embeddings_are_deterministic_unit_vectors_in_both_encodings():
    async def run(srv):
        async with client(srv) as c:
            first = await c.embeddings.create(model="emb", input=["alpha", "beta"])  # openai asks for base64
            again = await c.embeddings.create(model="emb", input="alpha", encoding_format="float")
            return first, again

    with ScriptedServer() as srv:
        first, again = asyncio.run(run(srv))
        [(_, raw)] = http_call(srv, [("POST", "/v1/embeddings", json.dumps({"model": "e", "input": "alpha"}).encode())])
    alpha, beta = (d.embedding for d in first.data)
    assert len(alpha) == len(beta) == 64 and alpha != beta
    assert alpha == again.data[0].embedding == raw["data"][0]["embedding"]
    assert math.isclose(math.sqrt(sum(v * v for v in alpha)), 1.0, rel_tol=1e-5)
    assert first.usage.prompt_tokens >= 2 and first.model == "emb"


def test_async_with_runs_on_the_current_loop_and_model_spec():
    async def run():
        async with ScriptedServer() as srv:
            assert srv.base_url == f"http://127.0.0.1:{srv.port}/v1"
            assert srv.model_spec() == f"{srv.base_url}::scripted" and srv.model_spec("x").endswith("::x")
            async with client(srv) as c:
                completion = await c.chat.completions.create(model="m", messages=ask())
            return completion.choices[0].message.content

    assert asyncio.run(run()).endswith(f"{probability_for(QUESTION):.2f}")


def test_module_entry_point_serves_until_interrupted():
    process = subprocess.Popen(
        [sys.executable, "-m", "consistency.fake_openai", "--port", "0", "--latency", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/v1", line).group(0)
        with urllib.request.urlopen(url.removesuffix("/v1") + "/health", timeout=5) as response:
            assert json.loads(response.read()) == {"status": "ok"}
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0
    finally:
        process.kill()
        process.wait()
