"""``consistency.llm.structured``: a structured call keeps only what it needs of ``instructor`` and
still sends, re-asks included, exactly what instructor's ``create_with_completion`` sends, in every
structured-output mode a model spec can choose; and gives back the same validated answer."""

from __future__ import annotations

import asyncio
import json

import instructor
import openai
import pytest
from pydantic import BaseModel, Field

from consistency.fake_openai import Reply, ScriptedServer, sequence
from consistency.llm import LLM, LLMSettings
from consistency.llm.chat import chat_create
from consistency.llm.structured import ValidationFailed, ask_structured, plan


class Answer(BaseModel):
    """A probability with the reasons for it."""

    reasoning: str
    prob: float = Field(ge=0.0, le=1.0)


MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Rain tomorrow? ☔"}]
MODES = {
    "tools": instructor.Mode.TOOLS,
    "json_schema": instructor.Mode.JSON_SCHEMA,
    "json": instructor.Mode.JSON,
    "md_json": instructor.Mode.MD_JSON,
}
# an answer out of range (re-asked), then a valid one
REPLIES = (Reply.json({"reasoning": "odd", "prob": 1.5}), Reply.json({"reasoning": "clouds", "prob": 0.25}))


def _replies(srv: ScriptedServer) -> None:
    srv.rule = sequence(*REPLIES)
    srv.reset()


@pytest.mark.parametrize("mode", list(MODES))
def test_requests_and_reasks_on_the_wire_are_instructors(mode):
    async def both(base_url: str, srv: ScriptedServer):
        async with openai.AsyncOpenAI(base_url=base_url, api_key="sk-test", max_retries=0) as client:
            _replies(srv)
            reference = instructor.from_openai(client, mode=MODES[mode])
            theirs, _ = await reference.chat.completions.create_with_completion(
                model="m", messages=MESSAGES, response_model=Answer, max_retries=2, temperature=0.0
            )
            sent_by_instructor = [r.body for r in srv.requests]
            _replies(srv)
            completions: list = []
            kwargs = {"model": "m", "messages": MESSAGES, "temperature": 0.0}
            ours = await ask_structured(
                chat_create(client, lambda: None), plan(Answer, MODES[mode]), 2, kwargs, completions
            )
            sent_by_us = [r.body for r in srv.requests]
        return theirs, ours, sent_by_instructor, sent_by_us, completions

    with ScriptedServer() as srv:
        theirs, ours, sent_by_instructor, sent_by_us, completions = asyncio.run(both(srv.base_url, srv))
    assert len(sent_by_us) == 2 and len(completions) == 2  # the first answer was re-asked
    assert [json.dumps(b) for b in sent_by_us] == [json.dumps(b) for b in sent_by_instructor]
    assert ours.model_dump() == theirs.model_dump() == {"reasoning": "clouds", "prob": 0.25}
    assert MESSAGES == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Rain tomorrow? ☔"}]


def test_answers_that_never_validate_fail_after_the_reasks_with_the_last_error():
    async def go(srv: ScriptedServer):
        async with openai.AsyncOpenAI(base_url=srv.base_url, api_key="sk-test", max_retries=0) as client:
            completions: list = []
            with pytest.raises(ValidationFailed) as failed:
                await ask_structured(
                    chat_create(client, lambda: None),
                    plan(Answer, instructor.Mode.TOOLS),
                    1,
                    {"model": "m", "messages": MESSAGES},
                    completions,
                )
        return failed.value, completions

    with ScriptedServer(sequence(then=lambda r: REPLIES[0])) as srv:
        failure, completions = asyncio.run(go(srv))
        assert srv.count == 2
    assert failure.attempts == 2 and len(completions) == 2 and failure.completion is completions[-1]
    assert "less than or equal to 1" in str(failure.error)


def test_the_llm_layer_counts_and_bills_every_reask(tmp_path):
    async def go(spec: str):
        async with LLM(LLMSettings(cache=False, max_reasks=2)) as llm:
            return await llm.structured(spec, MESSAGES, Answer), llm.stats

    with ScriptedServer(sequence(*REPLIES)) as srv:
        result, stats = asyncio.run(go(srv.model_spec()))
        billed = srv.billed
    assert result.ok and isinstance(result.value, Answer) and type(result.value) is Answer
    assert result.value.prob == 0.25 and result.attempts == 2 and stats.calls == 2
    assert result.usage.prompt_tokens == stats.prompt_tokens == billed["prompt_tokens"]
    assert result.usage.completion_tokens == stats.completion_tokens == billed["completion_tokens"]
