"""The LLM layer against the scripted OpenAI-compatible server: real HTTP, real openai + instructor."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from consistency.fake_openai import (
    Fault,
    Reply,
    ScriptedServer,
    faults_then,
    probability_for,
    probability_rule,
    together,
)
from consistency.llm import LLM, LLMSettings, parse_model_spec
from consistency.llm.fatal import FatalError
from consistency.llm.limits import RateLimiter
from consistency.llm.specs import ModelSpecError

SECRET = "sk-test-SECRETVALUE1234567890"


class Answer(BaseModel):
    reasoning: str
    prob: float = Field(ge=0.0, le=1.0)


def question(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"Will event number {i} happen before 2030?"}]


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CC_API_KEY", SECRET)
    monkeypatch.chdir(tmp_path)


def run(coro):
    return asyncio.run(coro)


def settings(**kw) -> LLMSettings:
    base = {"timeout": 2.0, "max_backoff": 0.2}
    return LLMSettings(**(base | kw))


async def ask_all(spec: str, n: int, llm: LLM):
    return await asyncio.gather(*(llm.structured(spec, question(i), Answer) for i in range(n)))


def test_structured_answers_are_validated_objects():
    with ScriptedServer(probability_rule()) as srv:

        async def go():
            async with LLM(settings()) as llm:
                results = await ask_all(srv.model_spec(), 5, llm)
                return results, llm.stats

        results, stats = run(go())
    for i, r in enumerate(results):
        assert r.ok and isinstance(r.value, Answer)
        assert r.value.prob == pytest.approx(probability_for(question(i)[0]["content"]))
    assert stats.calls == 5 and stats.cache_hits == 0 and stats.failures == 0
    assert all(req.body["temperature"] == 0.0 for req in srv.requests)


@pytest.mark.parametrize(
    "fault",
    [
        Fault.rate_limit(retry_after=0.3),
        Fault.server_error(500),
        Fault.server_error(503),
        Fault.malformed(),
        Fault.drop(),
    ],
    ids=["429", "500", "503", "malformed", "dropped"],
)
def test_transient_faults_are_retried(fault):
    with ScriptedServer(faults_then(probability_rule(), fault, fault)) as srv:

        async def go():
            async with LLM(settings()) as llm:
                start = time.perf_counter()
                result = await llm.structured(srv.model_spec(), question(1), Answer)
                return result, llm.stats, time.perf_counter() - start

        result, stats, elapsed = run(go())
    assert result.ok, result.error
    assert stats.calls == srv.count == 3  # each HTTP request counted once
    if fault.kind != "malformed":  # a malformed body is re-asked by instructor, not retried by us
        assert result.attempts == 3 and stats.retries == 2
    if fault.status == 429:
        assert elapsed >= 0.2  # Retry-After honoured (capped by max_backoff)


def test_hanging_server_times_out_and_retries():
    with ScriptedServer(faults_then(probability_rule(), Fault.hang(60))) as srv:

        async def go():  # 2 s: a loaded machine must not time out the second, normal answer too
            async with LLM(settings(timeout=2.0)) as llm:
                return await llm.structured(srv.model_spec(), question(2), Answer), llm.stats

        result, stats = run(go())
    assert result.ok and result.attempts == 2 and stats.calls == 2


def test_exhausted_retries_become_a_recorded_failure():
    # fewer 500s in a row than stop an endpoint that never answered (fatal.SERVER_ERRORS_AFTER)
    with ScriptedServer(lambda req: Fault.server_error(500)) as srv:

        async def go():
            async with LLM(settings(max_attempts=3)) as llm:
                return await llm.structured(srv.model_spec(), question(3), Answer), llm.stats

        result, stats = run(go())
    assert not result.ok and "HTTP 500" in result.error
    assert result.attempts == 3 and stats.calls == srv.count == 3 and stats.failures == 1


def test_schema_violations_are_reasked_then_recorded_with_raw_text():
    with ScriptedServer(lambda req: Reply.json({"reasoning": "no idea", "prob": "very likely"})) as srv:

        async def go():
            async with LLM(settings(max_reasks=2)) as llm:
                return await llm.structured(srv.model_spec(), question(4), Answer), llm.stats

        result, stats = run(go())
    assert not result.ok
    assert "validation" in result.error
    assert "very likely" in result.raw
    assert srv.count == 3  # first answer + 2 re-asks
    assert stats.calls == 3 and stats.prompt_tokens > 0


def test_cache_makes_the_second_run_free_and_returns_equal_objects():
    with ScriptedServer(probability_rule()) as srv:

        async def go():
            async with LLM(settings()) as llm:
                return await ask_all(srv.model_spec(), 8, llm), llm.stats

        first, _ = run(go())
        before = srv.count
        second, s2 = run(go())
    assert before == 8 and srv.count == 8  # zero network calls the second time
    assert s2.calls == 0 and s2.cache_hits == 8
    assert [r.value.model_dump() for r in first] == [r.value.model_dump() for r in second]
    assert all(r.cache_hit for r in second)


def test_cache_key_ignores_settings_but_not_parameters():
    with ScriptedServer(probability_rule()) as srv:

        async def go(**kw):
            async with LLM(settings(**kw.pop("s", {}))) as llm:
                await llm.structured(srv.model_spec(), question(1), Answer, **kw)

        run(go())
        run(go(s={"max_connections": 3, "timeout": 5.0, "max_attempts": 2}))
        assert srv.count == 1
        run(go(temperature=0.7))
        assert srv.count == 2


def test_no_cache_bypasses_the_cache():
    with ScriptedServer(probability_rule()) as srv:

        async def go():
            async with LLM(settings(cache=False)) as llm:
                await llm.structured(srv.model_spec(), question(1), Answer)

        run(go())
        run(go())
    assert srv.count == 2


def test_cost_limit_stops_new_calls(tmp_path, monkeypatch):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"scripted": {"input": 1000.0, "output": 1000.0}}))
    monkeypatch.setenv("CC_PRICES", str(prices))
    from consistency.llm.accounting import price_table

    price_table.cache_clear()
    try:
        with ScriptedServer(probability_rule()) as srv:

            async def go():  # a concurrent burst: calls queued behind the limit must not be made
                async with LLM(settings(max_connections=2, cost_limit=0.05)) as llm:
                    results = await asyncio.gather(
                        *(llm.structured(srv.model_spec(), question(i), Answer) for i in range(20))
                    )
                    return results, llm

            results, llm = run(go())
    finally:
        price_table.cache_clear()
    made = [r for r in results if r.ok]
    refused = [r for r in results if not r.ok]
    assert made and refused and llm.cost_limit_reached
    assert all("cost limit" in r.error for r in refused)
    assert srv.count == len(made) < 20
    assert llm.stats.cost >= 0.05
    assert llm.stats.cost - 0.05 < 2 * max(r.usage.cost for r in made)  # at most the calls already in flight


def test_concurrency_is_bounded_per_model():
    """16 calls with --max-connections 4: the first 4 are held until all 4 have arrived (so 4 at once were
    sent), and the server never had more than 4 in flight. Counted by the server, not timed."""
    with ScriptedServer(together(probability_rule(), 4), latency=0.05) as srv:

        async def go():
            async with LLM(settings(max_connections=4, timeout=60)) as llm:
                return await ask_all(srv.model_spec(), 16, llm)

        results = run(go())
        assert srv.max_in_flight == 4 and srv.count == 16
    assert all(r.ok for r in results)


def test_transcript_records_every_call_without_secrets(tmp_path):
    transcript = tmp_path / "run" / "llm_calls.jsonl"
    with ScriptedServer(faults_then(probability_rule(), Fault.rate_limit(0.05))) as srv:

        async def go():
            async with LLM(settings(), transcript=transcript) as llm:
                await ask_all(srv.model_spec(), 3, llm)
                await ask_all(srv.model_spec(), 3, llm)  # cache hits are recorded too

        run(go())
    lines = [json.loads(x) for x in transcript.read_text().splitlines()]
    assert len(lines) == 6
    assert sum(x["cache_hit"] for x in lines) == 3
    first = lines[0]
    for key in ("model", "messages", "response", "parsed", "usage", "latency_s", "cache_hit", "attempts", "error"):
        assert key in first
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_missing_key_is_one_clear_sentence(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    async def go():
        async with LLM(settings()) as llm:
            return await llm.structured("gpt-4o-mini", question(1), Answer)

    with pytest.raises(FatalError) as stopped:  # no call could ever succeed: the caller is stopped
        run(go())
    assert str(stopped.value).startswith("OPENAI_API_KEY is not set")
    assert str(stopped.value).count(".") <= 2


def test_model_specs():
    s = parse_model_spec("gpt-4o")
    assert (s.provider, s.model, s.key_variable) == ("openai", "gpt-4o", "OPENAI_API_KEY")
    assert parse_model_spec("openai/gpt-4o-mini").model == "gpt-4o-mini"
    r = parse_model_spec("openrouter/anthropic/claude-3.5-sonnet")
    assert (r.provider, r.model, r.key_variable) == ("openrouter", "anthropic/claude-3.5-sonnet", "OPENROUTER_API_KEY")
    c = parse_model_spec("http://127.0.0.1:8000/v1::qwen")
    assert (c.provider, c.base_url, c.model) == ("custom", "http://127.0.0.1:8000/v1", "qwen")
    assert parse_model_spec("local").provider == "local"
    assert parse_model_spec("gpt-4o?mode=json_schema").mode.name == "JSON_SCHEMA"
    for bad in ["", "http://x::", "openrouter/x", "foo:bar", "gpt-4o?mode=nope"]:
        with pytest.raises(ModelSpecError):
            parse_model_spec(bad)
    assert parse_model_spec("gpt-4o").identity() != parse_model_spec("http://h/v1::gpt-4o").identity()


def test_rate_limiter_waits_without_blocking():
    async def go():
        limiter = RateLimiter(per_minute=600)  # 10 per second, bucket of 600
        limiter.level = 1
        start = time.perf_counter()
        ticker = asyncio.create_task(asyncio.sleep(0.05))
        await limiter.acquire()
        await limiter.acquire()  # must wait ~0.1 s for a refill
        assert ticker.done()  # the loop kept running while we waited
        return time.perf_counter() - start

    assert run(go()) >= 0.08  # it waited for the refill (a loaded machine only makes this longer)


def test_env_file_supplies_keys(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    Path(".env").write_text('OPENROUTER_API_KEY="sk-or-from-dotenv-123456"\n')
    from consistency.llm.secrets import api_key

    assert api_key("OPENROUTER_API_KEY", "x") == "sk-or-from-dotenv-123456"


def test_two_processes_share_the_cache(tmp_path):
    """Concurrent writers in separate processes (SQLite WAL); a third run then makes no call."""
    import subprocess
    import sys

    script = tmp_path / "worker.py"
    script.write_text(
        "import asyncio, sys\n"
        "from pydantic import BaseModel, Field\n"
        "from consistency.llm import LLM, LLMSettings\n"
        "class Answer(BaseModel):\n    reasoning: str\n    prob: float = Field(ge=0.0, le=1.0)\n"
        "async def main(spec, lo, hi):\n"
        "    async with LLM(LLMSettings(max_connections=8)) as llm:\n"
        "        ask = lambda i: [{'role': 'user', 'content': f'Will event {i} happen?'}]\n"
        "        rs = await asyncio.gather(*(llm.structured(spec, ask(i), Answer) for i in range(lo, hi)))\n"
        "        assert all(r.ok for r in rs), [r.error for r in rs if not r.ok][:1]\n"
        "asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))\n"
    )
    with ScriptedServer(probability_rule(), latency=0.01) as srv:
        env = {**__import__("os").environ}
        workers = [
            subprocess.Popen([sys.executable, str(script), srv.model_spec(), str(lo), str(lo + 60)], env=env)
            for lo in (0, 30)  # overlapping ranges: both processes write some of the same keys
        ]
        assert [w.wait(timeout=120) for w in workers] == [0, 0]
        made = srv.count

        async def again():
            async with LLM(settings()) as llm:
                results = await asyncio.gather(
                    *(
                        llm.structured(
                            srv.model_spec(), [{"role": "user", "content": f"Will event {i} happen?"}], Answer
                        )
                        for i in range(90)
                    )
                )
                return results, llm.stats

        results, stats = run(again())
    assert 90 <= made <= 120
    assert all(r.ok and r.cache_hit for r in results) and stats.calls == 0


def test_stale_cache_entry_is_asked_again():
    """A cached answer that no longer validates (validators changed, schema did not) is a miss."""
    from pydantic import field_validator

    class Strict(Answer):
        @field_validator("prob")
        @classmethod
        def _not_too_sure(cls, v: float) -> float:
            if v > 0.5:
                raise ValueError("too sure")
            return v

    with ScriptedServer(probability_rule()) as srv:
        text = next(
            f"Will event number {i} happen before 2030?"
            for i in range(100)
            if probability_for(f"Will event number {i} happen before 2030?") > 0.5
        )

        async def go(model):
            async with LLM(settings(max_reasks=0)) as llm:
                return await llm.structured(srv.model_spec(), [{"role": "user", "content": text}], model)

        Strict.__name__ = Answer.__name__  # same schema title: same cache key
        assert Strict.model_json_schema() == Answer.model_json_schema()
        first = run(go(Answer))
        second = run(go(Strict))
    assert first.ok and not second.ok and not second.cache_hit
    assert srv.count == 2


def _cut_below(room: int, text: bool = False):
    """A model that runs out of tokens unless the request allows at least ``room``."""

    def rule(request):
        cut = (request.body.get("max_tokens") or 0) < room
        if text:
            return Reply.text("Weighing the evid", finish_reason="length") if cut else Reply.text("Probability: 0.3")
        answer = {"reasoning": "cut" if cut else "complete", "prob": 0.3}
        return Reply.json(answer, finish_reason="length" if cut else None)

    return rule


@pytest.mark.parametrize("mode", ["", "?mode=json_schema"], ids=["tools", "json_schema"])
def test_an_answer_cut_at_the_token_limit_is_asked_once_more_with_room(tmp_path, mode):
    with ScriptedServer(_cut_below(1000)) as srv:

        async def go():
            async with LLM(settings(cache=False), transcript=tmp_path / "t.jsonl") as llm:
                return await llm.structured(srv.model_spec() + mode, question(1), Answer)

        result = run(go())
        assert [r.body.get("max_tokens") for r in srv.requests] == [None, 1024]
        billed = srv.billed
    assert result.ok and result.value.reasoning == "complete"
    line = json.loads((tmp_path / "t.jsonl").read_text())
    assert line["attempts"] == 2  # both answers, the cut one included, are on record and billed
    assert line["usage"]["completion_tokens"] == billed["completion_tokens"]


@pytest.mark.parametrize("text", [False, True], ids=["structured", "text"])
def test_an_answer_still_cut_is_a_failure_saying_so(text):
    with ScriptedServer(_cut_below(10**6, text)) as srv:

        async def go():
            async with LLM(settings(cache=False, max_answer_tokens=3000)) as llm:
                ask = llm.text(srv.model_spec(), question(1), max_tokens=2000) if text else None
                ask = ask or llm.structured(srv.model_spec(), question(1), Answer, max_tokens=2000)
                return await ask, llm.stats.failures

        result, failures = run(go())
        assert [r.body.get("max_tokens") for r in srv.requests] == [2000, 3000]
    assert not result.ok and result.error == "answer truncated at 3000 tokens" and failures == 1
    assert result.raw  # the partial answer is kept for the record


@pytest.mark.parametrize(
    ("fault", "at_once"),
    [
        (Fault.drop(), True),
        (Fault.malformed(), True),
        (Fault.hang(60), True),
        (Fault.server_error(500), False),
        (Fault.rate_limit(retry_after=0.3), False),
    ],
    ids=["dropped", "malformed", "timed out", "500", "429"],
)
def test_a_request_lost_in_transit_is_retried_at_once_and_a_busy_server_backed_off(fault, at_once, monkeypatch):
    """The first retry of an attempt that timed out (the timeout was the wait), whose connection dropped or
    whose body was unreadable goes at once; a 429 or 5xx (the server says it is busy) and every later retry
    back off: waiting there only lengthens a run whose last questions hit a fault."""
    waits: list[float] = []
    pause = LLM._pause
    monkeypatch.setattr(LLM, "_pause", lambda self, exc, attempt: waits.append(pause(self, exc, attempt)) or waits[-1])
    with ScriptedServer(faults_then(probability_rule(), fault, fault)) as srv:

        async def go():
            async with LLM(settings(timeout=1.0 if fault.kind == "hang" else 2.0, max_backoff=5.0)) as llm:
                return await llm.structured(srv.model_spec(), question(3), Answer)

        result = run(go())
    assert result.ok, result.error
    assert len(waits) == 2 and (waits[0] == 0.0) is at_once
    assert waits[1] > 0  # the second retry backs off whatever the fault
    if fault.status == 429:
        assert waits == [0.3, 0.3]  # the server's Retry-After, each time


def raised(outer: Exception, inner: Exception) -> Exception:
    """``outer`` as raised from ``inner`` (how openai wraps the HTTP library's errors)."""
    try:
        try:
            raise inner
        except Exception as exc:
            raise outer from exc
    except Exception as exc:
        return exc


def test_only_a_connection_that_was_made_counts_as_lost_in_transit():
    import httpx2
    import openai

    from consistency.llm.errors import lost_in_transit

    request = httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions")

    assert lost_in_transit(raised(openai.APITimeoutError(request=request), httpx2.ReadTimeout("slow")))
    assert lost_in_transit(raised(openai.APIConnectionError(request=request), httpx2.RemoteProtocolError("closed")))
    assert lost_in_transit(json.JSONDecodeError("Expecting value", "{", 1))
    # never reached: down, refusing or unroutable, so back off
    assert not lost_in_transit(raised(openai.APIConnectionError(request=request), httpx2.ConnectError("refused")))
    assert not lost_in_transit(raised(openai.APITimeoutError(request=request), httpx2.ConnectTimeout("no route")))


def test_a_first_connect_timeout_is_not_counted_as_an_unreachable_endpoint_until_a_retry_times_out_too():
    """64 requests starting at once on a loaded machine can each see its first connection time out
    although the server is up (the process was too busy to notice it complete): the run must not be
    declared unreachable for that; retries that time out too, or refused connections, still are."""
    import httpx2
    import openai

    from consistency.llm.fatal import FATAL_AFTER, Breaker

    spec = parse_model_spec("http://127.0.0.1:9/v1::scripted")
    request = httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions")

    timed_out = raised(openai.APITimeoutError(request=request), httpx2.ConnectTimeout("timed out"))
    refused = raised(openai.APIConnectionError(request=request), httpx2.ConnectError("refused"))
    breaker = Breaker()
    for _ in range(10 * FATAL_AFTER):
        breaker.failure(timed_out, spec, attempt=1)
    assert breaker.reason is None
    for _ in range(FATAL_AFTER):
        breaker.failure(timed_out, spec, attempt=2)
    assert breaker.reason is not None and "cannot connect" in breaker.reason
    breaker = Breaker()
    for _ in range(FATAL_AFTER):
        breaker.failure(refused, spec, attempt=1)
    assert breaker.reason is not None  # a refusal is no accident of load: it counts at once
    breaker = Breaker()
    for _ in range(FATAL_AFTER):
        breaker.failure(timed_out, spec)  # attempt unknown (or a call's last): counted as before
    assert breaker.reason is not None
