"""News-derived questions and model resolution, against the scripted LLM server and the fixture web
server (RSS feed, NewsAPI-shaped endpoint): suitability, proposals inside the horizon, verification,
reference-class spanning, resuming, article de-duplication, keys kept out of URLs, and resolution
that never overwrites a source's answer."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, date, datetime

import pytest

from consistency.fake_openai import Reply, ScriptedServer
from consistency.fake_openai.web import NEWS_KEY, WebFixture, sample_articles
from consistency.llm import LLM, LLMSettings
from consistency.models import ForecastingQuestion
from consistency.questions.news import questions_from_news
from consistency.sources.news import Article, dedupe_articles, parse_feed
from consistency.sources.resolve import resolve_questions
from tests.generate.test_generate_cli import cc

BODY = "Resolves YES if official statements or major wire reports confirm it by the resolution date; NO otherwise."


def rule(request):
    text = request.last_user_text
    if request.tool_name == "Suitability":
        budget = "Parliament passes budget" in text
        return Reply.json({"reasons": "settled" if budget else "pending decision", "suitable": not budget})
    if request.tool_name == "ProposedQuestions":
        if "Central bank" in text:
            return Reply.json({"questions": [
                {"title": "Will the central bank cut its policy rate by September 30, 2024?", "body": BODY,
                 "resolution_date": "2024-09-30"},
                {"title": "Will the central bank cut its policy rate by December 31, 2025?", "body": BODY,
                 "resolution_date": "2025-12-31"},
            ]})  # fmt: skip
        day = "2024-08-31"
        return Reply.json({"questions": [
            {"title": "Will the crewed mission launch by August 31, 2024?", "body": BODY, "resolution_date": day},
            {"title": "Will something vague happen by August 31, 2024?", "body": BODY, "resolution_date": day},
        ]})  # fmt: skip
    if request.tool_name == "RephrasedQuestion":  # the same wording back
        title = re.search(r"Question: (.*)", text).group(1)
        return Reply.json({"title": title, "body": re.search(r"Resolution criteria and details: (.*)", text).group(1)})
    if request.tool_name == "Recheck":
        return Reply.json({"reasons": "still open", "settled_by_article": False, "mismatched": False})
    if request.tool_name == "QuestionVerdict":
        vague = "vague" in text
        return Reply.json({"reasons": "vague" if vague else "clear", "score": 3 if vague else 8})
    if request.tool_name == "SpannedQuestions":  # the same variant twice: kept once
        title = "Will another central bank cut its rate by September 30, 2024?"
        if "crewed" in text:
            title = "Will another crewed mission launch by August 31, 2024?"
        return Reply.json({"questions": [{"title": title, "body": BODY}, {"title": title, "body": BODY}]})
    if request.tool_name == "ResolutionAnswer":
        vote = request.body.get("user", "")
        if "launch" in text:
            return Reply.json({"justification": "It launched on August 20.", "answer": "yes", "confidence": 0.9})
        if "tie" in text:
            answer = "yes" if vote.endswith("0") else "no"
            return Reply.json({"justification": "Reports disagree.", "answer": answer, "confidence": 0.5})
        return Reply.json({"justification": "No information.", "answer": "unknown", "confidence": 0.2})
    raise AssertionError(f"unexpected request {request.tool_name}")


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))


def articles():
    return [Article.model_validate(a) for a in sample_articles()]


def test_questions_from_articles_verified_spanned_and_resumable(tmp_path):
    out = tmp_path / "news.jsonl"
    with ScriptedServer(rule) as srv:

        async def go():
            async with LLM(LLMSettings(timeout=5)) as llm:
                first = await questions_from_news(articles(), out, llm, srv.model_spec(), horizon_days=120, span=2)
                again = await questions_from_news(articles(), out, llm, srv.model_spec(), horizon_days=120, span=2)
                return first, again

        first, again = asyncio.run(go())
    got = [json.loads(line) for line in out.read_text().splitlines()]
    titles = sorted(q["title"] for q in got)
    assert titles == [
        "Will another central bank cut its rate by September 30, 2024?",
        "Will another crewed mission launch by August 31, 2024?",
        "Will the central bank cut its policy rate by September 30, 2024?",
        "Will the crewed mission launch by August 31, 2024?",
    ]
    rate = next(q for q in got if q["title"].startswith("Will the central bank"))
    assert rate["created_date"] == "2024-06-03T09:00:00Z" and rate["resolution_date"] == "2024-09-30T00:00:00Z"
    assert rate["data_source"] == "news" and rate["resolution"] is None
    assert rate["metadata"]["article_url"] == "https://news.example/a1"
    assert rate["metadata"]["article_date"] == "2024-06-03T09:00:00+00:00"
    assert rate["metadata"]["verification"]["score"] == 8
    spun = next(q for q in got if "another" in q["title"])
    assert spun["metadata"]["spanned_from"] == rate["id"] and spun["resolution_date"] == rate["resolution_date"]
    assert dict(first.rejected) == {"suitable": 1, "date": 1, "verify": 1}
    assert first.written == 4 and again.written == 0 and again.already == 3


def test_dedupe_keeps_the_newest_and_survives_empty_entities():
    base = {"url": "u1", "title": "Acme Corp and Globex sign merger", "published_at": "2024-06-01T00:00:00Z"}
    older = Article.model_validate(base)
    newer = Article.model_validate({**base, "url": "u2", "published_at": "2024-06-02T00:00:00Z",
                                    "title": "Acme Corp, Globex merger signed"})  # fmt: skip
    blank = Article.model_validate({"url": "u3", "title": "lower case only", "published_at": "2024-06-03T00:00:00Z"})
    blank2 = Article.model_validate({"url": "u4", "title": "also lower", "published_at": "2024-06-03T00:00:00Z"})
    kept, dropped = dedupe_articles([older, newer, blank, blank2])
    assert [a.url for a in kept] == ["u3", "u4", "u2"] and dropped == 1


def test_feed_and_newsapi_through_the_cli(tmp_path, monkeypatch):
    monkeypatch.setenv("NEWSAPI_KEY", NEWS_KEY)
    with ScriptedServer(rule) as llm_srv, WebFixture(news_rate_limited={"2024-06-05"}) as web:
        feed = cc(tmp_path, "questions", "news", "--feed", f"{web.url_for('feeds')}/world.xml", "--out", "feed.jsonl",
                  "--model", llm_srv.model_spec(), "--horizon-days", 120)  # fmt: skip
        api = cc(tmp_path, "questions", "news", "--newsapi", "rates OR launch", "--from", "2024-06-03", "--to",
                 "2024-06-06", "--newsapi-url", web.url_for("newsapi"), "--out", "api.jsonl", "--model",
                 llm_srv.model_spec(), "--horizon-days", 120)  # fmt: skip
        hits = [(q, h) for p, q, h in web.hits if p.endswith("/v2/everything")]
    assert feed.returncode == 0, feed.stderr
    assert "2 new question(s) from 3 article(s) in feed.jsonl" in feed.stdout
    assert api.returncode == 0, api.stderr
    assert "rateLimited" in api.stderr and "2024-06-05" in api.stderr
    assert "2 new question(s)" in api.stdout
    assert [q["from"] for q, _ in hits] == ["2024-06-03", "2024-06-04", "2024-06-05"]  # stops at the quota
    assert all("apiKey" not in q and h["x-api-key"] == NEWS_KEY for q, h in hits)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert NEWS_KEY not in path.read_text(errors="replace"), path


def test_news_days_from_the_options_text():
    """`--from`/`--to` as NewsSources takes them: a day range, none without --from, an empty one when --to is
    before --from (as before they moved from the command), and a bad date named by its option."""
    from consistency.errors import InputError
    from consistency.questions.making import NewsSources

    assert NewsSources(newsapi="x").days() is None
    assert NewsSources(first="2024-06-03").days() == [date(2024, 6, 3)]
    assert NewsSources(first="2024-06-03", last="2024-06-04").days() == [date(2024, 6, 3), date(2024, 6, 4)]
    assert NewsSources(first="2024-06-03", last="2024-06-01").days() == []
    with pytest.raises(InputError, match="--to must be a date"):
        NewsSources(first="2024-06-03", last="June").days()


def test_parse_atom_feed():
    atom = """<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>x</title>
      <entry><title>Vote set for July</title><link href="https://news.example/v"/>
      <published>2024-06-10T08:00:00Z</published><summary>The vote is scheduled.</summary></entry></feed>"""
    (a,) = parse_feed(atom)
    assert (a.title, a.url, a.published_at, a.source) == ("Vote set for July", "https://news.example/v",
                                                           datetime(2024, 6, 10, 8, tzinfo=UTC), "x")  # fmt: skip


def question(title, resolution=None, due="2024-08-31"):
    return ForecastingQuestion(title=title, body=BODY, resolution_date=due, resolution=resolution)


def test_resolution_never_overwrites_and_keeps_unknowns():
    qs = [
        question("Will the crewed mission launch by August 31, 2024?"),
        question("Will the crewed mission launch by August 31, 2024 (source)?", resolution=False),
        question("Will an unclear thing happen by August 31, 2024?"),
        question("Will the launch happen by 2030?", due="2030-01-01"),
        question("Will the tie happen by August 31, 2024?"),
        ForecastingQuestion(
            title="Which mission will launch by August 31, 2024?",
            body=BODY,
            resolution_date="2024-08-31",
            question_type="multiple_choice",
            options=["crewed", "cargo"],
        ),  # not a yes/no question
    ]
    with ScriptedServer(rule) as srv:

        async def go(votes):
            async with LLM(LLMSettings(timeout=5)) as llm:
                return await resolve_questions(qs, llm, srv.model_spec(), as_of=date(2024, 9, 15), votes=votes)

        (one, report), (tied, _) = asyncio.run(go(1)), asyncio.run(go(2))
    assert [q.resolution for q in one] == [True, False, None, None, False, None]  # one vote on the tie: no
    assert one[0].metadata["model_resolution"]["answer"] == "yes"
    assert one[0].metadata["model_resolution"]["confidence"] == 0.9
    assert one[0].metadata["model_resolution"]["model"] == srv.model_spec()
    assert "model_resolution" not in one[1].metadata and "model_resolution" not in one[3].metadata
    assert one[2].metadata["model_resolution"]["answer"] == "unknown"
    assert dict(report.untouched) == {"already resolved": 1, "not yet due": 1,
                                      "not a yes/no question (multiple_choice)": 1}  # fmt: skip
    assert one[5].resolution is None and "model_resolution" not in one[5].metadata
    assert tied[4].metadata["model_resolution"]["votes"] == ["yes", "no"] and tied[4].resolution is None


def test_resolve_cli(tmp_path):
    src = tmp_path / "q.jsonl"
    src.write_text(question("Will the crewed mission launch by August 31, 2024?").model_dump_json() + "\n")
    with ScriptedServer(rule) as srv:
        proc = cc(tmp_path, "questions", "resolve", "q.jsonl", "--model", srv.model_spec(), "--as-of", "2024-09-15")
    assert proc.returncode == 0, proc.stderr
    assert "1 question(s) asked (yes 1); 1 written to q.resolved.jsonl" in proc.stdout
    line = json.loads((tmp_path / "q.resolved.jsonl").read_text())
    assert line["resolution"] is True and line["metadata"]["model_resolution"]["justification"]


def test_bad_articles_file_names_file_and_line(tmp_path):
    good = json.dumps(sample_articles()[0])
    bad = json.dumps({"title": "No url", "published_at": "2024-06-01"})
    (tmp_path / "a.jsonl").write_text(f"{good}\n{bad}\n")
    proc = cc(tmp_path, "questions", "news", "--articles", "a.jsonl", "--out", "n.jsonl", "--model", "x::y")
    assert proc.returncode == 2 and "a.jsonl:2: url: missing required field" in proc.stderr


def test_articles_whose_model_calls_failed_are_read_again_on_resume(tmp_path):
    """An outage while reading an article records the failure; the next run reads that article
    again instead of counting it as done (its questions were never made)."""
    from consistency.fake_openai import Fault

    out, down = tmp_path / "news.jsonl", {"on": True}

    def flaky(request):
        if down["on"] and request.tool_name == "Suitability" and "Space agency" in request.last_user_text:
            return Fault.server_error()
        return rule(request)

    with ScriptedServer(flaky) as srv:

        async def go():
            async with LLM(LLMSettings(timeout=5, max_attempts=1, cache=False)) as llm:
                first = await questions_from_news(articles(), out, llm, srv.model_spec(), horizon_days=120)
                down["on"] = False
                again = await questions_from_news(articles(), out, llm, srv.model_spec(), horizon_days=120)
                return first, again

        first, again = asyncio.run(go())
    titles = sorted(json.loads(line)["title"] for line in out.read_text().splitlines())
    assert first.written == 1 and first.rejected["suitable"] == 2  # the budget article, and the failed call
    assert again.already == 2 and again.written == 1
    assert titles == [
        "Will the central bank cut its policy rate by September 30, 2024?",
        "Will the crewed mission launch by August 31, 2024?",
    ]


def test_proposals_are_reworded_and_strictly_rechecked_against_the_article(tmp_path):
    """The paper's rephrase and re-check steps: the reworded question is the one kept, and one the
    article already settles is rejected before verification (off with rephrase=False)."""

    def strict(request):
        if request.tool_name == "RephrasedQuestion":
            title = re.search(r"Question: (.*)", request.last_user_text).group(1)
            return Reply.json({"title": title.replace("the central bank", "the Reserve Bank"), "body": BODY})
        if request.tool_name == "Recheck" and "crewed" in re.search(r"Question: (.*)", request.last_user_text)[1]:
            return Reply.json({"reasons": "the article reports the launch", "settled_by_article": True,
                               "mismatched": False})  # fmt: skip
        return rule(request)

    with ScriptedServer(strict) as srv:

        async def go(out, **kw):
            async with LLM(LLMSettings(timeout=5)) as llm:
                return await questions_from_news(articles(), out, llm, srv.model_spec(), horizon_days=120, **kw)

        strict_report = asyncio.run(go(tmp_path / "strict.jsonl"))
        plain = asyncio.run(go(tmp_path / "plain.jsonl", rephrase=False))
        asked = [r.tool_name for r in srv.requests]
    got = [json.loads(line)["title"] for line in (tmp_path / "strict.jsonl").read_text().splitlines()]
    assert got == ["Will the Reserve Bank cut its policy rate by September 30, 2024?"]
    assert strict_report.rejected["recheck"] == 1 and plain.written == 2
    assert asked.count("Recheck") == 3  # the three proposals inside the horizon, with rephrase only


def test_batch_mode_resolves_every_due_question_in_one_batch(tmp_path):
    """The default concurrency (8) would split 20 questions into batches of 8: batch mode waits for one."""
    qs = [question(f"Will the crewed mission {i} launch by August 31, 2024?") for i in range(20)]
    settings = LLMSettings(timeout=5, batch=True, batch_idle=0.1, batch_poll=0.02, batch_poll_max=0.1)

    async def go(spec):
        async with LLM(settings, batches=tmp_path / "batches.jsonl") as llm:
            return await resolve_questions(qs, llm, spec, as_of=date(2024, 9, 15))

    with ScriptedServer(rule) as srv:
        resolved, report = asyncio.run(go(srv.model_spec()))
        assert (srv.batches.batches_created, sum(srv.batches.executions.values())) == (1, 20)
    assert report.asked == 20 and all(q.resolution is True for q in resolved)
