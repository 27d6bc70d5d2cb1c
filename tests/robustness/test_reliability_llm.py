"""Second reliability audit (issue 24), LLM and sources part: billing before answering (9), status and exit
codes (7), batch per-line retries (4), scrapers (8). Files and input are in test_reliability.py."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from consistency.cli import app

runner = CliRunner()


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CC_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)


def one_line(output: str) -> str:
    return " ".join(output.split())


# ------------------------------------------------------------------ 9. an answer is billed before it is sent


def test_an_answer_is_billed_before_the_client_can_read_it(monkeypatch):
    """The client reads the counters the moment its answer arrives; the server may still be finishing the send."""
    import asyncio

    from openai import OpenAI

    from consistency.fake_openai import ScriptedServer

    real_send = ScriptedServer._send

    async def slow_send(self, conn, writer, response):
        await real_send(self, conn, writer, response)
        await asyncio.sleep(0.5)  # the answer is out; the server has not returned from sending it yet

    monkeypatch.setattr(ScriptedServer, "_send", slow_send)
    with ScriptedServer() as srv:
        client = OpenAI(base_url=srv.base_url, api_key="x", max_retries=0)
        answer = client.chat.completions.create(model="scripted", messages=[{"role": "user", "content": "Will X?"}])
        billed = srv.billed
        client.close()
    assert billed == {"prompt_tokens": answer.usage.prompt_tokens, "completion_tokens": answer.usage.completion_tokens}


# ------------------------------------------------------------------ 7. status and exit codes


def test_an_endpoint_answering_only_5xx_stops_the_run_early_as_failed(tmp_path):
    from consistency.fake_openai import Fault, ScriptedServer

    with ScriptedServer(lambda request: Fault.server_error(500)) as srv:
        args = ["evaluate", "-f", srv.model_spec(), "-c", "neg", "-n", "24", "-o", "run", "--concurrency", "4"]
        done = runner.invoke(app, args)
        sent = srv.count
    assert done.exit_code == 1, done.output
    assert "HTTP 500" in one_line(done.output) and "check the server" in one_line(done.output)
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["status"] == "failed"
    assert sent < 8 + 4 * 6  # the breaker's count plus what was in flight: not every question times its attempts


def test_a_server_with_some_5xx_after_good_answers_is_retried_not_stopped():
    import asyncio

    from consistency.fake_openai import Fault, ScriptedServer, probability_rule
    from consistency.llm import LLM, LLMSettings

    rule = probability_rule()
    state = {"n": 0}

    def flaky(request):
        state["n"] += 1
        return Fault.server_error(503) if 3 <= state["n"] < 15 else rule(request)  # 12 in a row, after answers

    async def go(spec):
        async with LLM(LLMSettings(max_backoff=0.01, max_attempts=20, cache=False)) as llm:
            return [await llm.text(spec, [{"role": "user", "content": f"Will {i} happen?"}]) for i in range(4)]

    with ScriptedServer(flaky) as srv:
        results = asyncio.run(go(srv.model_spec()))
    assert all(r.ok for r in results) and state["n"] == 16


def test_a_run_where_every_question_failed_is_failed(tmp_path):
    from consistency.fake_openai import Reply, ScriptedServer

    with ScriptedServer(lambda request: Reply.json({"reasoning": "?", "prob": "likely"})) as srv:
        done = runner.invoke(app, ["evaluate", "-f", srv.model_spec(), "-c", "neg", "-n", "2", "-o", "run"])
    assert done.exit_code == 1, done.output
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["status"] == "failed" and meta["failure"] == "every question failed"


def test_a_repeated_question_id_is_warned_about_and_the_first_kept(tmp_path):
    questions = tmp_path / "q.jsonl"
    rows = [{"id": "same", "title": "Will A happen by 2030?"}, {"id": "same", "title": "Will B happen by 2030?"}]
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = runner.invoke(app, ["evaluate", "-f", "constant", "-q", str(questions), "-o", "run"])
    text = one_line(done.output)
    assert f"{questions}:2: id: repeats the id of line 1" in text and "the first is kept" in text
    assert json.loads((tmp_path / "run" / "run.json").read_text())["questions"] == 1
    made = runner.invoke(app, ["generate", "-c", "neg", "-q", str(questions), "-n", "1", "--out", str(tmp_path / "g")])
    said = one_line(made.output)  # the same sentence: one reader of questions serves both commands
    assert f"{questions}:2: id: repeats the id of line 1" in said and "the first is kept" in said, made.output


# ------------------------------------------------------------------ 4. batch lines failed by the server are retried


@pytest.mark.parametrize("fallback", ["batch", "direct"])
@pytest.mark.parametrize("fault", ["malformed", "drop", "hang"])
def test_batch_lines_the_server_failed_are_retried_within_the_budget(tmp_path, fault, fallback):
    from consistency.evaluation import RunOptions, evaluate
    from consistency.fake_openai import Fault, ScriptedServer, faults_then, probability_rule
    from consistency.llm import LLMSettings

    make = {"malformed": Fault.malformed, "drop": Fault.drop, "hang": lambda: Fault.hang(30)}[fault]
    rule = faults_then(probability_rule(), make())  # each request fails once, then succeeds
    settings = LLMSettings(batch=True, batch_idle=0.05, batch_poll=0.02, batch_poll_max=0.1, max_backoff=0.05,
                           timeout=10, batch_fallback=fallback, cache_path=tmp_path / "c" / "r.sqlite")  # fmt: skip
    with ScriptedServer(rule) as srv:
        result = evaluate(
            srv.model_spec(), checks=["neg"], limit=4, out=tmp_path / "b", options=RunOptions(llm=settings)
        )
        billed = srv.billed
    assert not result.failures, result.failures
    totals = result.meta.to_dict()["totals"]
    assert totals["retries"] == result.meta.to_dict()["questions"]  # every line retried once
    assert (totals["prompt_tokens"], totals["completion_tokens"]) == (
        billed["prompt_tokens"],
        billed["completion_tokens"],
    )


# ------------------------------------------------------------------ 8. scrapers


def _scrape(source, srv, out, opts=None, **kw):
    import asyncio

    from consistency.sources import SOURCES, HttpSettings, ScrapeOptions, scrape

    http = HttpSettings(max_backoff=0.05, timeout=5, requests_per_minute=None)
    return asyncio.run(scrape(SOURCES[source](), out, opts or ScrapeOptions(status="all"), base_url=srv.url_for(source),
                              http=http, cache_root=out.parent / "pages", **kw))  # fmt: skip


def test_a_polymarket_scrape_stopped_at_an_unusable_cursor_page_saves_its_position(tmp_path):
    from consistency.fake_openai.web import WebFixture
    from consistency.sources.scraper import state_path_for

    out = tmp_path / "p.jsonl"
    with WebFixture(page_cap=2, broken={("polymarket", 2)}) as srv:  # the second cursor page is cut in half
        report = _scrape("polymarket", srv, out)
    assert not report.finished and report.bad_pages
    state = json.loads(state_path_for(out).read_text())
    assert state["bad_pages"] and state["bad_pages"][0]["position"] == [0, "c2"] and not state["finished"]


def test_a_manifold_market_whose_detail_page_is_gone_is_a_skipped_item(tmp_path):
    from consistency.fake_openai.web import WebFixture

    out = tmp_path / "m.jsonl"
    with WebFixture(faults={("manifold-market", "m2"): ["404"] * 5}) as srv:
        report = _scrape("manifold", srv, out)
    assert report.finished and report.skipped["detail page not found (HTTP 404)"] == 1
    titles = [json.loads(line)["title"] for line in out.read_text().splitlines()]
    assert "Will J happen by June 2024?" in titles and "Will K happen by July 2024?" not in titles


def test_resuming_a_finished_scrape_says_it_is_finished(tmp_path):
    from consistency.fake_openai.web import WebFixture

    with WebFixture(page_cap=3) as srv:
        args = ["questions", "scrape", "manifold", "--base-url", srv.url_for("manifold"), "--out", "q.jsonl",
                "--rpm", "0", "--status", "all"]  # fmt: skip
        first = runner.invoke(app, args)
        again = runner.invoke(app, [*args, "--resume"])
    assert first.exit_code == 0 and again.exit_code == 0, again.output
    assert "more remain" not in first.output and "more remain" not in again.output, again.output


def test_polymarket_markets_settled_at_uncollapsed_prices_are_resolved(tmp_path):
    from datetime import timedelta

    from consistency.fake_openai.web import T0, FixtureData, WebFixture, polymarket_market

    d = timedelta(days=1)
    data = FixtureData(polymarket=[
        polymarket_market(601, "Will U happen by June 30?", prices=("0.99999958", "0.00000041"), closed=True,
                          end=T0 + 60 * d, created=T0 - 30 * d),
        polymarket_market(602, "Will V happen by June 30?", prices=("0.0000012", "0.9999988"), closed=True,
                          end=T0 + 60 * d, created=T0 - 30 * d),
        polymarket_market(603, "Will W happen by June 30?", prices=("0.97", "0.03"), closed=True,
                          end=T0 + 60 * d, created=T0 - 30 * d),
    ])  # fmt: skip
    out = tmp_path / "p.jsonl"
    with WebFixture(data) as srv:
        report = _scrape("polymarket", srv, out)
    got = [(q["title"], q["resolution"]) for q in map(json.loads, out.read_text().splitlines())]
    assert got == [("Will U happen by June 30?", True), ("Will V happen by June 30?", False)]
    assert report.skipped["closed without a 0/1 settlement"] == 1  # 0.97 is a price, not a settlement
