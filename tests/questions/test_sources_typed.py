"""Multiple-choice, numeric and date questions from the platforms, against the fixture web server (real
HTTP on 127.0.0.1, each API's shape): the exact questions written for each awkward case (open bounds,
log scale, a zero point, a date, a discrete question, a group, "Other" as the answer, several answers,
independent answers, a Polymarket event whose prices do not sum to one), crowd forecasts read before
the close and never after, ``--types``, ``--resume`` and ``--offline``."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta

import pytest

from consistency.fake_openai.web import T0, TOKEN, WebFixture, fixture_cdf, special_data
from consistency.sources import SOURCES, HttpSettings, ScrapeOptions, scrape
from consistency.sources.scraper import question_id

NOW = datetime(2024, 9, 1, tzinfo=UTC)
WINDOW = ScrapeOptions(resolved_after=date(2024, 5, 1), resolved_before=date(2024, 8, 15))
FAST = HttpSettings(max_backoff=0.5, timeout=5)
D = timedelta(days=1)


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("METACULUS_TOKEN", TOKEN)


def run(source, srv, out, opts=WINDOW, **kw):
    kw.setdefault("http", FAST)
    return asyncio.run(scrape(SOURCES[source](), out, opts, base_url=srv.url_for(source), now=NOW, **kw))


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def z(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def metaculus(pid, qid, title, *, resolve_days, kind, extra, metadata, source_key=None, url_pid=None):
    """The line a typed Metaculus fixture question becomes (created 50 days before T0, closed a day
    before it resolves; the crowd is read a week before the close)."""
    resolve = T0 + resolve_days * D
    return {
        "id": question_id("metaculus", source_key or str(pid)),
        "title": title,
        "body": f"Background for {title}\n\nResolution criteria: Resolves as reported for {title}",
        "resolution_date": z(resolve),
        "question_type": kind,
        "data_source": "metaculus",
        "created_date": z(T0 - 50 * D),
        "url": f"https://www.metaculus.com/questions/{url_pid or pid}/",
        "metadata": {"source_id": str(url_pid or pid), "question_id": qid, "forecasters": 40, "forecasts": 120,
                     "close_time": z(resolve - D), "actual_resolve_time": z(resolve),
                     "scraped_at": NOW.isoformat(), **metadata},
        **extra,
    }  # fmt: skip


def crowd(values, resolve_days, **more):
    at = (T0 + (resolve_days - 8) * D).isoformat()  # closed the day before resolving, minus 7 days
    key = "cdf" if len(values) > 10 else "probs"
    return {**more, "crowd_forecast": {key: values}, "crowd_forecast_at": at}


def test_metaculus_multiple_choice_numeric_date_discrete_and_groups(tmp_path):
    out = tmp_path / "m.jsonl"
    with WebFixture() as srv:
        report = run("metaculus", srv, out)
        explorer = [q for p, q, _ in srv.hits if "aggregation_explorer" in p]
    got = {q["metadata"]["question_id"]: q for q in lines(out)}
    # "Other" is an ordinary option; the crowd is the history's centers a week before the close
    assert got[200201] == metaculus(201, 200201, "Which party will win the F election?", resolve_days=40,
                                    kind="multiple_choice", extra={"options": ["Red", "Blue", "Other"],
                                                                   "resolution": "Other"},
                                    metadata=crowd([0.5, 0.3, 0.2], 40))  # fmt: skip
    # open bounds, log scale (zero point 0), resolved above the upper bound; the CDF before the close
    # is not in the listing (its history has no forecast_values): the aggregation explorer's
    assert got[200202] == metaculus(202, 200202, "How many G units will be sold in 2024?", resolve_days=50,
                                    kind="numeric", extra={"range": {"lower": 10.0, "upper": 10000.0,
                                    "open_lower": True, "open_upper": True, "scale": "log", "unit": "units"},
                                    "resolution": "above_upper_bound"},
                                    metadata=crowd(fixture_cdf(200, 0.5, 0.15, 0.05, 0.05), 50))  # fmt: skip
    # closed bounds; the latest aggregate began before the cut-off, so the listing has its CDF
    assert got[200203] == metaculus(203, 200203, "What will H measure in July 2024?", resolve_days=60,
                                    kind="numeric", extra={"range": {"lower": 0.0, "upper": 100.0,
                                    "open_lower": False, "open_upper": False, "scale": "linear", "unit": "%"},
                                    "resolution": 42.5}, metadata=crowd(fixture_cdf(200, 0.45, 0.08), 60))  # fmt: skip
    # a date: bounds and resolution as POSIX seconds
    june, september = datetime(2024, 6, 1, tzinfo=UTC).timestamp(), datetime(2024, 9, 1, tzinfo=UTC).timestamp()
    assert got[200204] == metaculus(204, 200204, "When will I launch?", resolve_days=70, kind="date",
                                    extra={"range": {"lower": june, "upper": september, "open_lower": False,
                                    "open_upper": True, "scale": "linear", "unit": "date"},
                                    "resolution": datetime(2024, 7, 4, tzinfo=UTC).timestamp()},
                                    metadata=crowd(fixture_cdf(200, 0.3, 0.2, 0.0, 0.1), 70))  # fmt: skip
    # discrete: 10 buckets of one seat between -0.5 and 9.5; its 11-point CDF read on the 201-point grid
    early = fixture_cdf(10, 0.6, 0.15)
    grid = [round(early[j // 20] + (early[min(j // 20 + 1, 10)] - early[j // 20]) * (j % 20) / 20, 9)
            for j in range(201)]  # fmt: skip
    assert got[200205] == metaculus(205, 200205, "How many J seats will be won?", resolve_days=45, kind="numeric",
                                    extra={"range": {"lower": -0.5, "upper": 9.5, "open_lower": False,
                                    "open_upper": False, "scale": "linear", "unit": "seats"}, "resolution": 7.0},
                                    metadata={"discrete_outcomes": 10, **crowd(grid, 45)})  # fmt: skip
    assert got[200205]["metadata"]["crowd_forecast"]["cdf"][::20] == early  # the buckets' edges, exactly
    # a group post: each sub-question a question of its own, named by its label
    share = metaculus(207, 200207, "L outcomes in 2024 (share)", resolve_days=55, kind="numeric",
                      source_key="207/200207", extra={"range": {"lower": 0.0, "upper": 50.0, "open_lower": False,
                      "open_upper": False, "scale": "linear"}, "resolution": 12.0},
                      metadata={"group_label": "share", **crowd(fixture_cdf(200, 0.3, 0.1), 55)})  # fmt: skip
    assert got[200207] == share  # its own description (a sub-question without one takes the group's)
    count = got[200208]  # its latest aggregate began before the cut-off: read from the listing
    assert count["title"] == "L outcomes in 2024 (count)" and count["resolution"] == 250.0
    assert count["metadata"]["crowd_forecast"] == {"cdf": fixture_cdf(200, 0.25, 0.02)}
    assert set(got) == {100101, 100102, 100105, 100109, 200201, 200202, 200203, 200204, 200205, 200207, 200208}
    assert dict(report.skipped) == {"annulled": 2, "ambiguous": 1, "resolution date before the window": 1,
                                    "resolves within 3 days of creation": 1}  # fmt: skip
    # one explorer request per closed continuous question whose CDF at the cut-off the listing lacks
    assert sorted(q["question_id"] for q in explorer) == ["200202", "200204", "200205", "200207"]
    assert all(q["aggregation_methods"] == "recency_weighted" for q in explorer)


def test_metaculus_open_question_with_a_zero_point_and_types(tmp_path):
    """An open question's crowd is the current one; ``--types`` narrows the listing (discrete goes with
    numeric) and a group's sub-questions of other types are skipped by reason."""
    with WebFixture() as srv:
        report = run("metaculus", srv, tmp_path / "open.jsonl", ScrapeOptions(status="open", types=("numeric",)))
        sent = [q for p, q, _ in srv.hits if p.endswith("/posts/")]
    (only,) = lines(tmp_path / "open.jsonl")
    assert only["title"] == "What will Y cost in 2025?" and only["resolution"] is None
    assert only["range"] == {"lower": 1.0, "upper": 500.0, "open_lower": False, "open_upper": True, "scale": "log",
                             "zero_point": -1.0, "unit": "$"}  # fmt: skip
    assert only["metadata"]["crowd_forecast"] == {"cdf": fixture_cdf(200, 0.6, 0.1, 0.0, 0.05)}  # the latest
    assert only["metadata"]["crowd_forecast_at"] == NOW.isoformat()
    assert sent[0]["forecast_type"] == "numeric,discrete,group_of_questions"
    assert dict(report.skipped) == {"binary not selected (--types)": 1}  # the open group's binary question


def test_metaculus_without_aggregation_access_keeps_the_question(tmp_path):
    """The API shows community forecasts on some questions only: a refused explorer request leaves the
    question without a crowd forecast (and says why) instead of stopping the scrape."""
    faults = {("metaculus-explorer", "200202"): ["403"], ("metaculus-explorer", "200207"): ["hidden"]}
    with WebFixture(faults=faults) as srv:
        report = run("metaculus", srv, tmp_path / "m.jsonl", WINDOW.model_copy(update={"types": ("numeric",)}))
    got = {q["metadata"]["question_id"]: q for q in lines(tmp_path / "m.jsonl")}
    assert "crowd_forecast" not in got[200202]["metadata"]
    assert got[200202]["metadata"]["crowd_forecast_missing"] == "aggregation explorer: HTTP 403"
    assert "crowd_forecast" not in got[200207]["metadata"]  # the explorer shows no aggregation at all
    assert got[200207]["metadata"]["crowd_forecast_missing"] == "aggregation explorer: no forecast before the cut-off"
    assert "crowd_forecast" in got[200203]["metadata"] and report.finished and not report.bad_pages


def test_manifold_multiple_choice_buckets_and_pseudo_numeric(tmp_path):
    out = tmp_path / "mf.jsonl"
    with WebFixture() as srv:
        report = run("manifold", srv, out)
        listing = [q for p, q, _ in srv.hits if p.endswith("search-markets")]
        bets = {q["contractId"]: q for p, q, _ in srv.hits if p.endswith("/v0/bets")}
    got = {q["metadata"]["source_id"]: q for q in lines(out)}

    def market(mid, title, close_days, extra, metadata, volume=800.0, traders=20, liquidity=150.0):
        close = T0 + close_days * D
        return {
            "id": question_id("manifold", mid), "title": title, "body": f"Resolves YES if {title.rstrip('?')}. "
            "Resolves NO otherwise.", "resolution_date": z(close + timedelta(hours=3)), "data_source": "manifold",
            "created_date": z(T0 - 40 * D), "url": f"https://manifold.markets/fixture/{mid}",
            "metadata": {"source_id": mid, "volume": volume, "traders": traders, "liquidity": liquidity,
                         "close_time": close.isoformat(), "resolve_time": (close + timedelta(hours=3)).isoformat(),
                         "scraped_at": NOW.isoformat(), **metadata},
            **extra,
        }  # fmt: skip

    # resolved to its "Other" answer (the market's resolution is the answer's id); the crowd is each
    # answer's probability after the last bet on it a week before the close, not the final 0.15/0.05/0.8
    at = (T0 + 28 * D).isoformat()
    assert got["mc1"] == market("mc1", "Which M team will win?", 35, {
        "question_type": "multiple_choice", "options": ["North", "South", "Other"], "resolution": "Other"},
        {"topics": ["fixture"], "crowd_forecast": {"probs": [0.5, 0.3, 0.2]}, "crowd_forecast_at": at})  # fmt: skip
    assert bets["mc1"] == {"contractId": "mc1", "beforeTime": str(int((T0 + 28 * D).timestamp() * 1000)),
                           "order": "desc", "limit": "1000"}  # fmt: skip
    # a number's buckets: a multiple-choice question over them, their midpoints kept
    assert got["mn1"] == market("mn1", "How many Q goals will be scored?", 36, {
        "question_type": "multiple_choice", "options": ["0-1", "2-3", "4+"], "resolution": "2-3"},
        {"buckets_of": "MULTI_NUMERIC", "topics": ["fixture"], "bucket_midpoints": [0.5, 2.5, 5.0],
         "crowd_forecast": {"probs": [0.3, 0.5, 0.2]}, "crowd_forecast_at": (T0 + 29 * D).isoformat()})  # fmt: skip
    # pseudo-numeric on a log scale from 1 (zero point min - 1 = 0): resolved to 1000^0.8
    assert got["pn1"] == market("pn1", "How many R downloads by July?", 37, {
        "question_type": "numeric", "range": {"lower": 1.0, "upper": 1000.0, "open_lower": False,
        "open_upper": False, "scale": "log"}, "resolution": round(1000**0.8, 6)},
        {"topics": ["fixture"]}, volume=600.0, traders=15, liquidity=100.0)  # fmt: skip
    assert set(got) == {"m1", "m2", "mc1", "mn1", "pn1"}
    assert dict(report.skipped) == {
        "resolved to a probability (MKT)": 1,
        "annulled (CANCEL)": 2,  # m4 and the pseudo-numeric pn2
        "sweepstakes (CASH) copy": 1,
        "resolved to several answers (CHOOSE_MULTIPLE)": 1,
        "answers are independent (several may be YES)": 1,  # known from the detail page only
    }
    assert listing[0] | {"offset": "0"} == {"term": "", "filter": "resolved", "contractType": "ALL",
                                            "sort": "resolve-date", "includeLiteAnswers": "true", "limit": "1000",
                                            "offset": "0"}  # fmt: skip


def test_manifold_open_multiple_choice_reads_the_current_answers(tmp_path):
    with WebFixture() as srv:
        run("manifold", srv, tmp_path / "open.jsonl", ScrapeOptions(status="open", types=("multiple_choice",)))
        bets = [q for p, q, _ in srv.hits if p.endswith("/v0/bets")]
    (mc4,) = lines(tmp_path / "open.jsonl")
    assert (mc4["options"], mc4["resolution"]) == (["Paris", "Porto", "Prague"], None)
    assert mc4["metadata"]["crowd_forecast"] == {"probs": [0.5, 0.3, 0.2]} and not bets
    assert mc4["metadata"]["crowd_forecast_at"] == NOW.isoformat()


def test_polymarket_negrisk_events_are_one_multiple_choice_question(tmp_path):
    out = tmp_path / "p.jsonl"
    with WebFixture(page_cap=1, faults={("polymarket-events", 2): ["500"]}) as srv:
        report = run("polymarket", srv, out, ScrapeOptions(status="all", types=("multiple_choice",)))
        events = [q for p, q, _ in srv.hits if p.endswith("/events/keyset")]
        history = [q["market"] for p, q, _ in srv.hits if p.endswith("/prices-history")]
    got = {q["metadata"]["source_id"]: q for q in lines(out)}
    common = {"body": "", "question_type": "multiple_choice", "data_source": "polymarket",
              "created_date": z(T0 - 30 * D), "liquidity": 0.0}  # fmt: skip
    # resolved: the market settled at Yes; the crowd is each market's Yes price a week before the end,
    # kept as it is although the three sum to 1.1 (the crowd's incoherence, noted)
    assert got["701"] == {
        "id": question_id("polymarket", "event:701"), "title": "Who will win the T race?",
        "body": "This event resolves to the outcome of Who will win the T race?",
        "resolution_date": z(T0 + 60 * D), "question_type": "multiple_choice", "data_source": "polymarket",
        "created_date": z(T0 - 30 * D), "url": "https://polymarket.com/event/event-701",
        "metadata": {"source_id": "701", "market_ids": ["70100", "70101", "70102"], "volume": 90000.0,
                     "liquidity": 0.0, "closed_time": "2024-06-30 13:00:00+00", "scraped_at": NOW.isoformat(),
                     "yes_token_ids": ["70100000", "70101000", "70102000"],
                     "crowd_forecast": {"probs": [0.5, 0.35, 0.25]},
                     "crowd_forecast_at": (T0 + 53 * D).isoformat(), "crowd_forecast_sum": 1.1},
        "options": ["Tia", "Tom", "Other"], "resolution": "Tom",
    }  # fmt: skip
    assert history == ["70100000", "70101000", "70102000"]
    # open: the current Yes prices, as they are
    assert got["702"]["metadata"]["crowd_forecast"] == {"probs": [0.55, 0.3, 0.25]}
    assert got["702"]["metadata"]["crowd_forecast_sum"] == 1.1 and got["702"]["resolution"] is None
    assert set(got) == {"701", "702"} and common["question_type"] == got["702"]["question_type"]
    assert dict(report.skipped) == {
        "an event whose markets are not exclusive (not negRisk)": 1,
        "no market settled Yes": 1,
        "an event with one market (kept as a binary market)": 1,
    }
    # cursor pages (a failed one retried), closed=true then closed=false
    assert [(q["closed"], q.get("after_cursor")) for q in events] == [
        ("true", None),
        ("true", "c1"),
        ("true", "c2"),
        ("true", "c2"),
        ("true", "c3"),
        ("false", None),
    ]
    assert report.retries == 1


def test_polymarket_event_markets_are_binary_questions_too(tmp_path):
    with WebFixture() as srv:
        run("polymarket", srv, tmp_path / "p.jsonl", ScrapeOptions(types=("binary",)))
    got = {q["title"]: q["resolution"] for q in lines(tmp_path / "p.jsonl")}
    assert got["Will Tom be the outcome of: Who will win the T race?"] is True
    assert got["Will Tia be the outcome of: Who will win the T race?"] is False
    assert "Who will win the T race?" not in got  # the event itself: multiple choice only


def test_resume_and_offline_keep_typed_questions(tmp_path):
    """A typed scrape stopped after -n carries on with --resume, and re-reads everything (detail pages,
    bets, explorer and price histories included) from the page cache with --offline."""
    for source in ("manifold", "metaculus", "polymarket"):
        out, again = tmp_path / f"{source}.jsonl", tmp_path / f"{source}-offline.jsonl"
        whole = tmp_path / f"{source}-whole.jsonl"
        with WebFixture(page_cap=3) as srv:
            first = run(source, srv, out, n=2)
            rest = run(source, srv, out, resume=True)
            run(source, srv, whole, http=replace(FAST, refresh=True))  # one run, every page fetched anew
        assert first.written == 2 and not first.finished and rest.finished
        written = lines(out)
        assert len({q["id"] for q in written}) == len(written) == 2 + rest.written
        assert written == lines(whole), source  # stopped and resumed: the same questions, in the same order
        report = run(source, srv, again, http=HttpSettings(offline=True))
        assert report.requests == 0 and report.written == len(written), source
        assert again.read_text() == out.read_text(), source
        assert {q["question_type"] for q in written} >= {"binary", "multiple_choice"}, source


def test_special_data_serves_every_platform_shape():
    """The fixture's typed items keep the fields the sources read, in the platforms' spelling."""
    data = special_data()
    post = next(p for p in data.metaculus if p["id"] == 202)["question"]
    assert post["scaling"]["zero_point"] == 0.0 and len(post["scaling"]["continuous_range"]) == 201
    assert post["scaling"]["continuous_range"][0] == 10.0 and post["scaling"]["continuous_range"][-1] == 10000.0
    event = data.polymarket_events[0]
    assert event["negRisk"] and [m["groupItemTitle"] for m in event["markets"]] == ["Tia", "Tom", "Other"]
    assert json.loads(event["markets"][1]["outcomePrices"]) == ["1", "0"]
    mc1 = next(m for m in data.manifold if m["id"] == "mc1")
    assert mc1["resolution"] == "mc1-a2" and mc1["answers"][2]["isOther"] and mc1["shouldAnswersSumToOne"]


def test_kinds_manifold_does_not_read_as_questions_are_skipped_by_name():
    from consistency.sources import Manifold

    base = {"id": "x", "question": "Which?", "createdTime": 0, "isResolved": False, "volume": 1, "token": "MANA"}
    legacy = Manifold().question({**base, "outcomeType": "MULTIPLE_CHOICE", "mechanism": "dpm-2"}, WINDOW, NOW)
    poll = Manifold().question({**base, "outcomeType": "POLL", "mechanism": "none"}, WINDOW, NOW)
    assert (legacy, poll) == ("a legacy dpm-2 market (MULTIPLE_CHOICE)", "not a kind kept (POLL)")


def test_metaculus_tournament_lists_that_tournaments_posts_only(tmp_path):
    """``tournament`` asks the API for one project's posts (by id or slug); the other platforms refuse it."""
    by = {}
    for key in ("fixture-aib", "32600"):
        with WebFixture() as srv:
            report = run("metaculus", srv, tmp_path / f"{key}.jsonl", WINDOW.model_copy(update={"tournament": key}))
            sent = [q for p, q, _ in srv.hits if p.endswith("/posts/")]
        by[key] = {q["metadata"]["question_id"] for q in lines(tmp_path / f"{key}.jsonl")}
        assert sent[0]["tournaments"] == key
        assert dict(report.skipped) == {"annulled": 1}  # 206; the binary annulled, ambiguous... are not in it
    assert by["fixture-aib"] == by["32600"] == {100101, 100102, 200201, 200202, 200203, 200204, 200205, 200207, 200208}
    for source in ("manifold", "polymarket"):
        with pytest.raises(ValueError, match="no tournaments: --tournament is for Metaculus"):
            SOURCES[source]().check(ScrapeOptions(tournament="fixture-aib"))
