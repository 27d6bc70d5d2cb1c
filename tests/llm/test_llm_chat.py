"""``consistency.llm.chat``: chat completions through the openai client without its parameter
transform must put on the wire exactly what ``chat.completions.create`` puts there, and give back
the same ``ChatCompletion``; batch mode must leave the collector's GC setting as it found it."""

from __future__ import annotations

import asyncio
import gc
import json

import openai
import pytest

from consistency.fake_openai import ScriptedServer
from consistency.fake_openai.server import Request, Response, json_response
from consistency.llm import LLM, LLMSettings
from consistency.llm.chat import chat_create

COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "Answer", "arguments": '{"prob":0.25}'}}
                ],
            },
        }
    ],
    "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
}

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "Answer",
            "description": "A probability, with an ünïcode description",
            "parameters": {
                "type": "object",
                "properties": {"prob": {"type": "number", "minimum": 0, "maximum": 1}},
                "required": ["prob"],
            },
        },
    }
]


def _capture(srv: ScriptedServer) -> list[Request]:
    seen: list[Request] = []

    async def handler(request: Request) -> Response:
        seen.append(request)
        return json_response(200, COMPLETION)

    srv.route("POST", "/wire/v1/chat/completions", handler)
    return seen


CASES = {
    "tools": dict(
        model="m",
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Rain tomorrow? ☔"}],
        tools=TOOLS,
        tool_choice={"type": "function", "function": {"name": "Answer"}},
        temperature=0.0,
        max_tokens=300,
    ),
    "options": dict(
        model="m",
        messages=[{"role": "user", "content": "hi"}],
        extra_body={"seed": 7, "top_k": 3},
        extra_query={"api-version": "2024-10-21"},
        extra_headers={"X-Team": "forecasting"},
        timeout=20.0,
    ),
    "not given": dict(model="m", messages=[{"role": "user", "content": "hi"}], temperature=openai.NOT_GIVEN),
    "json schema": dict(
        model="m",
        messages=[{"role": "user", "content": "hi"}],
        response_format={"type": "json_schema", "json_schema": {"name": "A", "schema": {"type": "object"}}},
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_wire_request_and_the_answer_are_those_of_openais_create(case):
    async def both(base_url: str):
        async with openai.AsyncOpenAI(base_url=base_url, api_key="sk-test-key", max_retries=0) as client:
            theirs = await client.chat.completions.create(**CASES[case])
            ours = await chat_create(client, lambda: None)(**CASES[case])
        return theirs, ours

    with ScriptedServer() as srv:
        seen = _capture(srv)
        theirs, ours = asyncio.run(both(f"http://{srv.host}:{srv.port}/wire/v1"))
    sent_by_create, sent_by_ours = seen
    assert sent_by_ours.path == sent_by_create.path == "/wire/v1/chat/completions"
    assert sent_by_ours.query == sent_by_create.query
    assert sent_by_ours.headers == sent_by_create.headers  # auth, content type and length, extra headers
    assert bytes(sent_by_ours.body) == bytes(sent_by_create.body)
    assert ours == theirs and ours.choices[0].message.tool_calls[0].function.arguments == '{"prob":0.25}'
    if case == "options":
        assert sent_by_ours.query == {"api-version": "2024-10-21"} and sent_by_ours.headers["x-team"] == "forecasting"
        assert json.loads(bytes(sent_by_ours.body))["seed"] == 7
    if case == "not given":
        assert "temperature" not in json.loads(bytes(sent_by_ours.body))


def test_requests_openai_must_transform_take_openais_own_path():
    """Messages that are not a list of dicts (a generator, a model object) are left to ``create``."""

    async def go(base_url: str):
        counted = []
        async with openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0) as client:
            create = chat_create(client, lambda: counted.append(1))
            answer = await create(model="m", messages=({"role": "user", "content": x} for x in ["a", "b"]))
        return answer, counted

    with ScriptedServer() as srv:
        seen = _capture(srv)
        answer, counted = asyncio.run(go(f"http://{srv.host}:{srv.port}/wire/v1"))
    assert counted == [1] and answer.id == "chatcmpl-1"
    assert json.loads(bytes(seen[0].body))["messages"] == [
        {"role": "user", "content": "a"},
        {"role": "user", "content": "b"},
    ]


def test_batch_mode_relaxes_the_garbage_collector_only_while_its_llm_is_open(tmp_path):
    before = gc.get_threshold()

    async def go(spec: str):
        async with LLM(LLMSettings(batch=True, cache=False), batches=tmp_path / "b.jsonl") as llm:
            await llm.endpoint(spec)
            async with LLM(LLMSettings(batch=True, cache=False), batches=tmp_path / "c.jsonl") as inner:
                await inner.endpoint(spec)
            during = gc.get_threshold()  # the outer LLM still waits on batches
        return during

    with ScriptedServer() as srv:
        during = asyncio.run(go(srv.model_spec()))
    assert during[0] >= 50_000 and during[1:] == before[1:]
    assert gc.get_threshold() == before


def test_a_parameter_create_does_not_take_is_refused_as_create_refuses_it():
    async def both() -> list[str]:
        async with openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="k", max_retries=0) as client:
            refusals = []
            for create in (client.chat.completions.create, chat_create(client, lambda: None)):
                with pytest.raises(TypeError) as refused:
                    await create(model="m", messages=[], api_key="x")
                refusals.append(str(refused.value).rpartition("() ")[2])
        return refusals

    theirs, ours = asyncio.run(both())
    assert ours == theirs == "got an unexpected keyword argument 'api_key'"


def test_the_parameters_create_takes_are_those_of_openais_create():
    """Read from the request's parameter types (without importing openai's resources), they must be
    exactly the keyword arguments of the installed client's ``create``."""
    import inspect

    from openai.resources.chat.completions import AsyncCompletions

    from consistency.llm.chat import parameters

    assert parameters() == set(inspect.signature(AsyncCompletions.create).parameters) - {"self"}
