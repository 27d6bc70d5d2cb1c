"""``cc evaluate --dry-run`` / :func:`consistency.evaluation.estimate`: the calls, tokens and dollars a run would
cost, checked against what the real run then records, over real HTTP against the scripted server.

How the comparison stays honest: the estimate never sees the run it predicts. Calls and prompt tokens come from
the requests the forecaster builds (the server counts prompts at four characters a token, which is also the
estimate's rule for a model without a known tokenizer, so prompt tokens measure that the estimate counts the
same messages and schemas the run sends). Answer lengths cannot be known in advance: here they are learned from
a pilot run on *other* questions (``PARAPHRASE`` tuples, while the estimate and the run are on ``NEGATION`` and
``COND``), as a user would do with ``--limit 2``; the test checks that no answer of the estimated run was in the
cache, so the completion tokens are a prediction. Without a pilot, completion tokens are a stated assumption
and only calls and prompt tokens are held to the run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from consistency.evaluation import EstimateError, RunOptions, estimate, estimate_resume, evaluate, resume
from consistency.fake_openai import ScriptedServer, probability_rule
from consistency.forecasters import ArbitrageForecaster, Forecaster
from consistency.llm import LLMSettings
from consistency.models import Forecast

CC = Path(sys.executable).parent / "cc"
PRICES = {"scripted": {"input": 2.5, "output": 10.0}}  # USD per million tokens, as gpt-4o's
CHECKS, LIMIT = ["neg", "cond"], 4


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    from consistency.llm.accounting import price_table

    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(PRICES))
    monkeypatch.setenv("CC_PRICES", str(prices))
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))
    price_table.cache_clear()
    yield
    price_table.cache_clear()


@pytest.fixture
def server():
    with ScriptedServer(probability_rule()) as srv:
        yield srv


def spec_for(kind: str, server: ScriptedServer) -> tuple[str, dict[str, str] | None]:
    model = server.model_spec()
    return {
        "basic": (model, None),
        "cot": (f"cot:{model}", None),
        "arbitrage": (f"arbitrage:{model}", {"checks": "neg", "depth": "1"}),
    }[kind]


def within(estimated: float, real: float, share: float = 0.10) -> bool:
    return abs(estimated - real) <= share * real


@pytest.mark.parametrize("kind", ["basic", "cot", "arbitrage"])
def test_the_estimate_is_within_10_percent_of_the_run(kind, server, tmp_path):
    spec, options = spec_for(kind, server)
    evaluate(spec, checks=["para"], limit=3, forecaster_options=options, out=tmp_path / "pilot")
    server.reset()

    found = estimate(spec, checks=CHECKS, limit=LIMIT, forecaster_options=options)
    assert server.count == 0, "the estimate called the model"
    assert found.cache_hits == 0, "the estimated run's answers were already cached: not a prediction"
    assert all("cached answer(s) of this model" in how for m in found.models for how in m.answers.values())

    result = evaluate(spec, checks=CHECKS, limit=LIMIT, forecaster_options=options, out=tmp_path / "run")
    real = result.meta.to_dict()["totals"]
    assert not result.failures and real["calls"] == server.count
    assert real["prompt_tokens"] == server.billed["prompt_tokens"]
    print(
        f"{kind}: estimate {found.calls} calls, {found.prompt_tokens}+{found.completion_tokens} tokens, "
        f"${found.cost:.4f}; run {real['calls']} calls, {real['prompt_tokens']}+{real['completion_tokens']} "
        f"tokens, ${real['cost']:.4f}"
    )
    assert found.calls == real["calls"]  # the same requests, not merely within 10%
    assert within(found.prompt_tokens, real["prompt_tokens"])
    assert within(found.completion_tokens, real["completion_tokens"])
    assert within(found.cost, real["cost"]) and found.unpriced == []

    again = estimate(spec, checks=CHECKS, limit=LIMIT, forecaster_options=options)
    assert again.calls == 0 and again.cache_hits == real["calls"] and again.cost == 0  # all cached now


def test_without_history_calls_and_prompts_hold_and_answers_are_assumed(server, tmp_path):
    spec, _ = spec_for("basic", server)
    found = estimate(spec, checks=CHECKS, limit=LIMIT)
    (shape, how), *_ = found.models[0].answers.items()
    assert shape == "{prob,reasoning}" and how.startswith("assumed")
    result = evaluate(spec, checks=CHECKS, limit=LIMIT, out=tmp_path / "run")
    real = result.meta.to_dict()["totals"]
    assert found.calls == real["calls"]
    assert within(found.prompt_tokens, real["prompt_tokens"])


def test_a_resume_is_estimated_for_what_is_left(server, tmp_path):
    spec, _ = spec_for("cot", server)
    narrow = RunOptions(concurrency=2, llm=LLMSettings(max_connections=2))
    capped = evaluate(spec, checks=CHECKS, limit=LIMIT, out=tmp_path / "run", max_cost=0.01, options=narrow)
    assert capped.meta.to_dict()["status"] == "interrupted"
    left = estimate_resume(tmp_path / "run")
    assert left.answered > 0 and left.forecasts == capped.meta.to_dict()["questions"]
    before = server.count
    done = resume(tmp_path / "run", max_cost=100)
    assert done.meta.to_dict()["status"] == "complete"
    this = done.meta.to_dict()["sessions"][-1]["totals"]
    assert left.calls == this["calls"] == server.count - before
    assert within(left.cost, this["cost"], 0.25)  # this session's few answers: lengths learned from the first one


class Mine(Forecaster):
    async def forecast(self, question):
        return Forecast(prob=0.5)


class MineDeclared(Mine):
    estimable = True


def test_user_code_and_bots_are_refused_unless_declared():
    with pytest.raises(EstimateError, match=r"Mine is user code, and running it could call a model"):
        estimate(Mine(), checks=["neg"], limit=1)
    found = estimate(MineDeclared(), checks=["neg"], limit=1)
    assert found.calls == 0 and found.forecasts == 2
    wrapped = ArbitrageForecaster(base=Mine(), checks=["neg"], instantiator="template")
    with pytest.raises(EstimateError, match="Mine is user code"):
        estimate(wrapped, checks=["neg"], limit=1)
    assert (
        estimate(ArbitrageForecaster(base=MineDeclared(), checks=["neg"], instantiator="template"), limit=1).calls == 0
    )


def test_a_forecasting_tools_bot_is_refused():
    pytest.importorskip("forecasting_tools")
    from consistency.forecasters import load_forecaster

    with pytest.raises(EstimateError, match="a forecasting-tools bot, whose calls go through litellm"):
        estimate(load_forecaster("ft:TemplateBot"), checks=["neg"], limit=1)


def cc(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run([str(CC), *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_cli_dry_run_writes_nothing_and_calls_nothing(server, tmp_path):
    spec, _ = spec_for("cot", server)
    done = cc("evaluate", "-f", spec, "-c", "neg", "-n", "2", "--dry-run", "--json", "-o", "run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert figures["calls"] == 2 * figures["forecasts"] > 0 and figures["cost"] > 0
    assert server.count == 0 and not (tmp_path / "run").exists() and not (tmp_path / "runs").exists()
    table = cc("evaluate", "-f", spec, "-c", "neg", "-n", "2", "--dry-run", "--max-cost", "0.000001", cwd=tmp_path)
    assert table.returncode == 0 and "prompt tokens" in table.stdout
    assert "no model was called and no run directory written" in table.stderr
    assert "the run would stop at the cap" in table.stderr
    assert server.count == 0 and not (tmp_path / "runs").exists()


# ------------------------------------------------------------------ the spending cap


def test_the_cap_stops_the_run_resumably_and_a_higher_cap_finishes_it(server, tmp_path):
    spec, _ = spec_for("basic", server)
    whole = evaluate(spec, checks=CHECKS, limit=LIMIT, out=tmp_path / "whole", options=_no_cache())
    per_call = whole.meta.to_dict()["totals"]["cost"] / whole.meta.to_dict()["totals"]["calls"]
    server.reset()
    cap, width = 5 * per_call, 2
    options = RunOptions(concurrency=width, llm=LLMSettings(max_connections=width, cache=False))
    first = evaluate(spec, checks=CHECKS, limit=LIMIT, out=tmp_path / "run", options=options, max_cost=cap)
    meta = first.meta.to_dict()
    assert meta["status"] == "interrupted" and meta["stopped"]["reason"] == "max_cost"
    assert first.failures == []  # the questions left are unasked, not failed
    spent = meta["totals"]["cost"]
    assert cap <= spent <= cap + width * 1.5 * per_call  # overshoot: the calls in flight at most
    assert server.count == meta["totals"]["calls"] < whole.meta.to_dict()["totals"]["calls"]
    journal = [json.loads(line) for line in (tmp_path / "run" / "forecasts.jsonl").read_text().splitlines()]
    assert len(journal) == server.count and all(r["forecast"] for r in journal)

    same = resume(tmp_path / "run")  # the recorded cap holds: nothing more is asked
    assert same.meta.to_dict()["status"] == "interrupted" and server.count == meta["totals"]["calls"]

    done = resume(tmp_path / "run", max_cost=100 * cap)
    assert done.meta.to_dict()["status"] == "complete" and done.meta.to_dict()["stopped"] is None
    assert done.meta.to_dict()["totals"]["calls"] == whole.meta.to_dict()["totals"]["calls"] == server.count
    ours = {r["key"]: r["forecast"] for r in map(json.loads, (tmp_path / "run" / "forecasts.jsonl").open())}
    theirs = {r["key"]: r["forecast"] for r in map(json.loads, (tmp_path / "whole" / "forecasts.jsonl").open())}
    assert ours == theirs


def _no_cache() -> RunOptions:
    return RunOptions(llm=LLMSettings(cache=False))


def test_cli_max_cost_exits_3_and_resumes_with_a_higher_cap(server, tmp_path):
    from consistency.cli.exits import ExitCode

    spec, _ = spec_for("basic", server)
    narrow = ("--concurrency", "1", "--max-connections", "1")  # one call in flight: the cap stops the second
    done = cc(
        "evaluate", "-f", spec, "-c", "neg", "-n", "4", *narrow, "--max-cost", "0.0001", "-o", "run", cwd=tmp_path
    )
    assert done.returncode == ExitCode.SPENDING_CAP == 3, done.stderr
    assert "spending cap reached" in done.stderr and "cc evaluate --resume run --max-cost USD" in done.stderr
    assert json.loads((tmp_path / "run" / "run.json").read_text())["status"] == "interrupted"
    again = cc("evaluate", "--resume", "run", "--max-cost", "10", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "--max-cost 10.0: used from this resume on" in again.stderr
    assert json.loads((tmp_path / "run" / "run.json").read_text())["status"] == "complete"


def test_a_cap_is_refused_with_batch_mode_and_below_zero(server, tmp_path):
    spec, _ = spec_for("basic", server)
    batch = RunOptions(llm=LLMSettings(batch=True))
    with pytest.raises(ValueError, match="cannot stop batched requests"):
        evaluate(spec, checks=["neg"], limit=1, out=tmp_path / "a", options=batch, max_cost=1.0)
    with pytest.raises(ValueError, match="max_cost must be a number of USD, 0 or more"):
        evaluate(spec, checks=["neg"], limit=1, out=tmp_path / "b", max_cost=-1)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists() and server.count == 0


def test_openai_models_are_counted_with_their_tokenizer_when_it_is_at_hand(monkeypatch):
    """tiktoken needs its encoding files (fetched once from the network): here a byte-level encoding stands in
    for o200k_base, so that the count is seen to come from the tokenizer, not the four-characters rule."""
    tiktoken = pytest.importorskip("tiktoken")
    from consistency.evaluation import dry

    bytes_only = tiktoken.Encoding(
        "bytes", pat_str=r".", mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={}
    )
    monkeypatch.setattr(dry, "_encoding", lambda model: bytes_only if model == "gpt-4o-mini" else None)
    counted = estimate("gpt-4o-mini", checks=["neg"], limit=1)
    rough = estimate("openrouter/meta-llama/llama-3.1-8b-instruct", checks=["neg"], limit=1)
    assert counted.models[0].tokenizer == "tiktoken bytes"
    assert rough.models[0].tokenizer == "about 4 characters a token"
    assert counted.calls == rough.calls == 2
    # one token a byte plus 3 a message and 3 for the reply, against about a quarter of that
    assert 3.5 * rough.prompt_tokens < counted.prompt_tokens < 4.5 * rough.prompt_tokens


def test_the_typical_cached_answer_does_not_follow_the_caches_row_order():
    """Two cached answers as far from the mean: the stand-in is the same whichever the cache lists first
    (concurrent answers are written in any order, and the estimate once changed between identical runs)."""
    from types import SimpleNamespace

    from consistency.evaluation.dry import DryLLM

    rows = [
        {"value": {"prob": 0.2, "reasoning_summary": "short"}, "usage": {"completion_tokens": 10}},
        {"value": {"prob": 0.3, "reasoning_summary": "a little longer"}, "usage": {"completion_tokens": 20}},
    ]
    typical = []
    for order in (rows, rows[::-1]):
        llm = DryLLM.__new__(DryLLM)
        llm._history, llm._reader = {}, SimpleNamespace(recent=lambda identity, n, order=order: list(order))
        learned = llm._learned(SimpleNamespace(identity="m"))
        typical.append(next(iter(learned.values())).typical)
    assert typical[0] == typical[1]
