"""Scrapers against the fixture web server (real HTTP on 127.0.0.1, pages in each API's shape):
exact lines written, skips by reason, retries on 429/500, unusable pages recorded, tokens,
de-duplication, resuming and re-parsing from the page cache."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, date, datetime, timedelta

import pytest

from consistency.fake_openai.web import T0, TOKEN, WebFixture, metaculus_post, special_data
from consistency.sources import SOURCES, FatalHTTPError, HttpSettings, ScrapeOptions, scrape
from tests.generate.test_generate_cli import cc

NOW = datetime(2024, 9, 1, tzinfo=UTC)
WINDOW = ScrapeOptions(resolved_after=date(2024, 5, 1), resolved_before=date(2024, 8, 15))
BINARY = ScrapeOptions(types=("binary",))  # the multiple-choice and numeric cases: test_sources_typed.py
BINARY_WINDOW = WINDOW.model_copy(update={"types": ("binary",)})
FAST = HttpSettings(max_backoff=0.5, timeout=5)


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("METACULUS_TOKEN", raising=False)


def run(source, srv, out, opts=WINDOW, **kw):
    kw.setdefault("http", FAST)
    return asyncio.run(scrape(SOURCES[source](), out, opts, base_url=srv.url_for(source), now=NOW, **kw))


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def metaculus_data():
    data = special_data()
    d = timedelta(days=1)
    extra = [
        metaculus_post(110 + i, f"Will X{i} happen?", resolution="no", resolve=T0 + (40 + i) * d, created=T0 - 20 * d)
        for i in range(7)
    ]
    # the binary cases and one multiple-choice post (105): 8 special + 7 = 15 posts, 3 a page
    data.metaculus = [p for p in data.metaculus if p["id"] < 200 and p["id"] != 106] + extra
    return data


def markets_only():
    """The Polymarket cases without the multi-market events (whose markets the listing shows too)."""
    data = special_data()
    data.polymarket_events = []
    return data


EXPECTED_101 = {
    "id": "5cd1223b-cad5-5ba0-984f-d84f9370c3aa",
    "title": "Will A happen by June 2024?",
    "body": "Background for Will A happen by June 2024?.\n\n"
    "Resolution criteria: Resolves YES if A happen by June 2024.",
    "resolution_date": "2024-05-31T12:00:00Z",
    "question_type": "binary",
    "data_source": "metaculus",
    "created_date": "2024-03-02T12:00:00Z",
    "url": "https://www.metaculus.com/questions/101/",
    "metadata": {
        "source_id": "101",
        "question_id": 100101,
        "forecasters": 40,
        "forecasts": 120,
        "close_time": "2024-05-30T12:00:00Z",
        "actual_resolve_time": "2024-05-31T12:00:00Z",
        "scraped_at": "2024-09-01T00:00:00+00:00",
        "final_prob": 0.3,
        "market_prob": 0.5,  # a week before the close: the final value has moved towards the answer
        "market_prob_at": "2024-05-23T12:00:00+00:00",
    },
    "resolution": True,
}


def test_metaculus_lines_skips_retries_and_a_truncated_page(tmp_path, monkeypatch):
    """... and ``market_prob`` from the community history, which the API sends only when asked
    (``include_cp_history=true``; before, the scraper did not ask and found no value before the close)."""
    monkeypatch.setenv("METACULUS_TOKEN", TOKEN)
    out = tmp_path / "m.jsonl"
    faults = {("metaculus", 3): ["429", "500"]}
    with WebFixture(metaculus_data(), page_cap=3, faults=faults, broken={("metaculus", 9)}) as srv:
        report = run("metaculus", srv, out)
        sent = [q for p, q, _ in srv.hits if p.endswith("/posts/")]
    got = lines(out)
    assert got[0] == EXPECTED_101
    assert got[1] == {
        **EXPECTED_101,
        "id": got[1]["id"],
        "title": "Will B happen by July 2024?",
        "body": "Background for Will B happen by July 2024?.\n\n"
        "Resolution criteria: Resolves YES if B happen by July 2024.",
        "resolution_date": "2024-06-30T12:00:00Z",
        "url": "https://www.metaculus.com/questions/102/",
        "metadata": {**EXPECTED_101["metadata"], "source_id": "102", "question_id": 100102,
                     "close_time": "2024-06-29T12:00:00Z", "actual_resolve_time": "2024-06-30T12:00:00Z",
                     "market_prob_at": "2024-06-22T12:00:00+00:00"},
        "resolution": False,
    }  # fmt: skip
    # 111-113 sat on the truncated page; 114-116 come after it
    assert [q["title"] for q in got] == [
        "Will A happen by June 2024?", "Will B happen by July 2024?", "Which E?", "Will I happen by August 2024?",
        "Will X0 happen?", "Will X4 happen?", "Will X5 happen?", "Will X6 happen?",
    ]  # fmt: skip
    assert [q["resolution"] for q in got] == [True, False, "E2", True, False, False, False, False]
    assert dict(report.skipped) == {
        "annulled": 1,
        "ambiguous": 1,
        "resolution date before the window": 1,
        "resolves within 3 days of creation": 1,
    }
    assert report.retries == 2 and report.written == 8 and report.finished
    assert len(report.bad_pages) == 1 and report.bad_pages[0].url.endswith("offset=9")
    assert "not valid JSON" in report.bad_pages[0].reason
    state = json.loads(report.state_path.read_text())
    assert state["bad_pages"][0]["url"].endswith("offset=9") and state["finished"]
    kinds = "binary,multiple_choice,numeric,discrete,date,group_of_questions"
    assert all(q["statuses"] == "resolved" and q["forecast_type"] == kinds for q in sent)
    assert all(q["include_cp_history"] == "true" and q["with_cp"] == "true" for q in sent)
    assert sent[0]["scheduled_resolve_time__gt"] == "2024-04-30"
    # the token travels in a header only: never in the cache, the state file or the output
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert TOKEN not in path.read_text(errors="replace"), path


def test_min_forecasters_and_missing_token(tmp_path, monkeypatch):
    with WebFixture(metaculus_data(), page_cap=50) as srv:
        with pytest.raises(FatalHTTPError, match="METACULUS_TOKEN"):
            run("metaculus", srv, tmp_path / "m.jsonl")
        proc = cc(tmp_path, "questions", "scrape", "metaculus", "--base-url", srv.url_for("metaculus"),
                  "--out", tmp_path / "cli.jsonl")  # fmt: skip
        assert proc.returncode == 1
        assert "set METACULUS_TOKEN" in proc.stderr and "Traceback" not in proc.stderr
        monkeypatch.setenv("METACULUS_TOKEN", TOKEN)
        report = run("metaculus", srv, tmp_path / "m.jsonl", WINDOW.model_copy(update={"min_forecasters": 10}))
    assert report.skipped["too few forecasters"] == 1
    assert "Will I happen by August 2024?" not in (tmp_path / "m.jsonl").read_text()


def test_manifold_skips_details_and_open_markets(tmp_path):
    out = tmp_path / "mf.jsonl"
    faults = {("manifold-market", "m1"): ["500"]}
    with WebFixture(page_cap=4, faults=faults, broken={("manifold-market", "m2")}) as srv:
        report = run("manifold", srv, out, BINARY_WINDOW)
        listing = [q for p, q, _ in srv.hits if p.endswith("search-markets")]
        again = run("manifold", srv, tmp_path / "all.jsonl", BINARY.model_copy(update={"status": "all"}))
    got = lines(out)
    assert [q["title"] for q in got] == ["Will J happen by June 2024?"]
    assert got[0]["body"] == "Resolves YES if J happen by June 2024. Resolves NO otherwise."
    assert got[0]["resolution"] is True and got[0]["resolution_date"] == "2024-05-31T15:00:00Z"
    assert got[0]["metadata"] == {
        "source_id": "m1", "volume": 500.0, "traders": 12, "liquidity": 100.0,
        "close_time": "2024-05-31T12:00:00+00:00", "resolve_time": "2024-05-31T15:00:00+00:00",
        "scraped_at": "2024-09-01T00:00:00+00:00", "final_prob": 0.4, "topics": ["fixture"],
        "market_prob": 0.5, "market_prob_at": "2024-05-24T12:00:00+00:00",
    }  # fmt: skip
    assert dict(report.skipped) == {
        "resolved to a probability (MKT)": 1,
        "annulled (CANCEL)": 1,
        "sweepstakes (CASH) copy": 1,
        "detail page unusable": 1,  # m2's detail page is truncated
    }
    assert report.retries == 1 and [b.url.rsplit("/", 1)[1] for b in report.bad_pages] == ["m2"]
    assert listing[0] == {"term": "", "filter": "resolved", "contractType": "BINARY", "sort": "resolve-date",
                          "limit": "1000", "offset": "0"}  # fmt: skip
    # pages of 4 (up to 4 in flight), then the short page re-synchronises: offset 6 gives the empty list
    assert {"0", "4", "6"} <= {q["offset"] for q in listing}
    open_market = next(q for q in lines(tmp_path / "all.jsonl") if q["metadata"]["source_id"] == "m7")
    assert open_market["resolution"] is None and open_market["metadata"]["market_prob"] == 0.4
    assert again.written == 2  # m1 and the open m7 (m2 still truncated)


def test_polymarket_needs_closed_true_and_settled_prices(tmp_path):
    out = tmp_path / "p.jsonl"
    with WebFixture(markets_only(), page_cap=2, faults={("polymarket", 2): ["drop"]}) as srv:  # a dropped connection
        report = run("polymarket", srv, out, BINARY)
        sent = [q for p, q, _ in srv.hits if p.endswith("/markets/keyset")]
        history = [q for p, q, _ in srv.hits if p.endswith("/prices-history")]
        opened = run("polymarket", srv, tmp_path / "open.jsonl", BINARY.model_copy(update={"status": "open"}))
    got = lines(out)
    assert [(q["title"], q["resolution"]) for q in got] == [
        ("Will P happen by June 30?", True),
        ("Will Q happen by June 30?", False),
    ]
    assert got[0]["url"] == "https://polymarket.com/market/will-p-happen-by-june-30"
    # the settled price leaks the answer: market_prob is the Yes price a week before the end, from the CLOB
    assert got[0]["metadata"]["final_prob"] == 1.0 and got[0]["metadata"]["market_prob"] == 0.5
    assert got[0]["metadata"]["market_prob_at"] == "2024-06-23T12:00:00+00:00"
    assert history[0] == {
        "market": "501000",
        "startTs": str(int((T0 - timedelta(days=30)).timestamp())),
        "endTs": str(int(datetime(2024, 6, 23, 12, tzinfo=UTC).timestamp())),
        "fidelity": "1440",
    }
    assert dict(report.skipped) == {"closed without a 0/1 settlement": 1, "not binary (3 outcomes)": 1}
    assert report.retries == 1 and not report.bad_pages
    assert sent and all(q["closed"] == "true" and "offset" not in q for q in sent)
    assert [q.get("after_cursor") for q in sent] == [None, "c2", "c2"]  # the dropped one, then again
    assert opened.written == 1
    assert lines(tmp_path / "open.jsonl")[0]["metadata"]["market_prob"] == 0.25


def test_min_traders_refused_for_polymarket(tmp_path):
    with pytest.raises(ValueError, match="no trader count"):
        asyncio.run(scrape(SOURCES["polymarket"](), tmp_path / "p.jsonl", ScrapeOptions(min_traders=5)))


def test_manifold_stops_paging_past_the_window(tmp_path):
    from consistency.fake_openai.web import bulk_data

    window = ScrapeOptions(resolved_after=date(2024, 7, 20), resolved_before=date(2024, 8, 15))
    with WebFixture(bulk_data(400), page_cap=50) as srv:
        report = run("manifold", srv, tmp_path / "mf.jsonl", window, http=HttpSettings(concurrency=1))
        offsets = [int(q["offset"]) for p, q, _ in srv.hits if p.endswith("search-markets")]
    got = lines(tmp_path / "mf.jsonl")
    assert got and all("2024-07-20" <= q["resolution_date"][:10] <= "2024-08-15" for q in got)
    in_window = sum(
        date(2024, 7, 20) <= datetime.fromtimestamp(m["resolutionTime"] / 1000, UTC).date() <= date(2024, 8, 15)
        for m in bulk_data(400).manifold
    )
    assert report.written == in_window  # nothing in the window was missed ...
    assert max(offsets) < 350  # ... and the listing was not read to its end


def test_appends_dedupes_resumes_and_reparses_offline(tmp_path):
    out = tmp_path / "mf.jsonl"
    everything = ScrapeOptions(status="all", min_days=0, types=("binary",))
    with WebFixture(page_cap=2) as srv:
        first = run("manifold", srv, out, everything, n=1)
        resumed = run("manifold", srv, out, everything, resume=True)
        again = run("manifold", srv, out, everything)
    assert first.written == 1 and not first.finished
    assert resumed.written == 2 and resumed.finished  # m1, then m2 and the open m7
    assert again.written == 0 and again.already == 3
    titles = [q["title"] for q in lines(out)]
    assert len(titles) == len(set(q["id"] for q in lines(out))) == 3
    # the server is gone: a re-run reads every page from the cache and writes the same lines
    offline = tmp_path / "offline.jsonl"
    report = asyncio.run(
        scrape(SOURCES["manifold"](), offline, everything, base_url=srv.url_for("manifold"), now=NOW,
               http=HttpSettings(offline=True))
    )  # fmt: skip
    assert report.requests == 0 and report.cache_hits > 0
    assert offline.read_text() == out.read_text()
    with pytest.raises(ValueError, match="other options"):
        run("manifold", srv, out, BINARY, resume=True)
    with pytest.raises(ValueError, match="other options"):  # another selection of types
        run("manifold", srv, out, everything.model_copy(update={"types": ("binary", "numeric")}), resume=True)


def test_cli_scrape_summary(tmp_path):
    with WebFixture(page_cap=3) as srv:
        base = ["questions", "scrape", "manifold", "--base-url", srv.url_for("manifold"), "--rpm", "0",
                "--resolved-after", "2024-05-01"]  # fmt: skip
        proc = cc(tmp_path, *base, "--out", "q.jsonl", "--types", "binary")
        every = cc(tmp_path, *base, "--out", "all.jsonl")  # all types by default
        bad = cc(tmp_path, "questions", "scrape", "manifold", "--out", "q.jsonl", "--created-after", "May")
        kinds = cc(tmp_path, *base, "--out", "k.jsonl", "--types", "binary,choice")
    assert proc.returncode == 0, proc.stderr
    assert "2 new manifold question(s) in q.jsonl" in proc.stdout
    assert "skipped 1: sweepstakes (CASH) copy" in proc.stdout
    assert len(lines(tmp_path / "q.jsonl")) == 2
    assert every.returncode == 0 and "5 new manifold question(s) in all.jsonl" in every.stdout, every.stderr
    assert sorted({q["question_type"] for q in lines(tmp_path / "all.jsonl")}) == ["binary", "multiple_choice",
                                                                                  "numeric"]  # fmt: skip
    assert bad.returncode == 2 and "--created-after must be a date" in bad.stderr
    assert kinds.returncode == 2 and "--types takes binary, multiple_choice, numeric, date or all" in kinds.stderr
    assert not (tmp_path / "k.jsonl").exists()


def test_end_to_end_scrape_generate_evaluate_leaderboard(tmp_path):
    """Scraped questions feed the rest of the pipeline as they are, with no glue."""
    from consistency.fake_openai.web import bulk_data

    with WebFixture(bulk_data(250), page_cap=100) as srv:
        scraped = cc(tmp_path, "questions", "scrape", "manifold", "--base-url", srv.url_for("manifold"), "-n", 200,
                     "--out", "q.jsonl", "--rpm", 0)  # fmt: skip
    assert scraped.returncode == 0, scraped.stderr
    assert "200 new manifold question(s) in q.jsonl" in scraped.stdout
    steps = [
        ("generate", "--check", "cond", "--questions", "q.jsonl", "-n", 10, "--out", "bench",
         "--instantiator", "template", "--relevance", "off"),
        ("evaluate", "-t", "bench", "--forecaster", "constant", "-F", "p=0.4", "--out", "tuples_run"),
        ("evaluate", "--questions", "q.jsonl", "--forecaster", "constant", "-F", "p=0.4", "--out", "constant"),
        ("evaluate", "--questions", "q.jsonl", "--forecaster", "uniform", "-F", "seed=1", "--out", "uniform"),
        ("leaderboard", "constant", "uniform", "--json"),
    ]  # fmt: skip
    for argv in steps:
        proc = cc(tmp_path, *argv)
        assert proc.returncode == 0, (argv, proc.stderr)
    assert len((tmp_path / "bench" / "CondChecker.jsonl").read_text().splitlines()) == 10
    assert (tmp_path / "tuples_run" / "CondChecker.jsonl").exists()
    board = json.loads(proc.stdout)
    names = [row["forecaster"] for row in board["standings"]]  # named by the forecaster each run records
    assert len(names) == 2 and names[0].startswith("constant") and names[1].startswith("uniform")
    assert all(row["n_questions"] == 200 for row in board["standings"])


def test_n_counts_written_questions_when_a_detail_page_fails(tmp_path):
    with WebFixture(broken={("manifold-market", "m1")}) as srv:
        report = run("manifold", srv, tmp_path / "mf.jsonl", ScrapeOptions(status="all"), n=2)
    assert report.written == 2 and report.skipped["detail page unusable"] == 1
    assert [q["metadata"]["source_id"] for q in lines(tmp_path / "mf.jsonl")] == ["m2", "m7"]


def test_resume_reads_unusable_pages_again(tmp_path):
    """A listing page that failed after its retries (here the first one, then a middle one) or a
    detail page that failed is tried again by --resume; nothing is lost and nothing doubled."""
    from consistency.fake_openai.web import bulk_data

    once = HttpSettings(max_backoff=0.05, timeout=5, max_attempts=2)
    for failing in (0, 10):
        out = tmp_path / f"bulk{failing}.jsonl"
        faults = {("manifold", failing): ["500", "500"]}
        if failing:  # and a detail page on the first run
            faults[("manifold-market", "bulk25")] = ["500", "500"]
        with WebFixture(bulk_data(30), page_cap=10, faults=faults) as srv:
            first = run("manifold", srv, out, ScrapeOptions(), http=once)
            state = json.loads(first.state_path.read_text())
            resumed = run("manifold", srv, out, ScrapeOptions(), http=once, resume=True)
        assert first.written <= (19 if failing else 0)  # a failed first page ended the listing
        assert resumed.written == 30 - first.written and not resumed.bad_pages
        assert [0, failing] in [b["position"] for b in state["bad_pages"]]
        ids = [q["metadata"]["source_id"] for q in lines(out)]
        assert sorted(ids) == sorted(f"bulk{i}" for i in range(30)) and len(ids) == 30


def test_resolved_questions_get_the_market_probability_before_the_close(tmp_path, monkeypatch):
    """The final community/market probability leaks the answer (0.97 for a YES): ``market_prob`` is the
    value ``market_lead_days`` before the close, read from the history (Metaculus) or the bets (Manifold)."""
    from consistency.fake_openai.web import FixtureData, manifold_market

    monkeypatch.setenv("METACULUS_TOKEN", TOKEN)
    d = timedelta(days=1)
    data = FixtureData(
        metaculus=[metaculus_post(1, "Will U happen by July 2024?", resolution="yes", resolve=T0 + 60 * d,
                                  created=T0 - 60 * d, cp=0.97, early_cp=0.35)],
        manifold=[manifold_market("u1", "Will V happen by July 2024?", resolution="NO", close=T0 + 60 * d,
                                  created=T0 - 60 * d, prob=0.02)],
    )  # fmt: skip
    with WebFixture(data) as srv:
        run("metaculus", srv, tmp_path / "m.jsonl")
        run("manifold", srv, tmp_path / "f.jsonl")
        bets = [q for p, q, _ in srv.hits if p.endswith("/v0/bets")]
        none = ScrapeOptions(market_lead_days=0)
        run("metaculus", srv, tmp_path / "m0.jsonl", none)
        run("manifold", srv, tmp_path / "f0.jsonl", none)
        after = [q for p, q, _ in srv.hits if p.endswith("/v0/bets")]
    meta, mani = lines(tmp_path / "m.jsonl")[0]["metadata"], lines(tmp_path / "f.jsonl")[0]["metadata"]
    assert (meta["final_prob"], meta["market_prob"]) == (0.97, 0.35)
    assert meta["market_prob_at"] == (T0 + 52 * d).isoformat()  # closed a day before resolving, minus 7 days
    assert (mani["final_prob"], mani["market_prob"]) == (0.02, 0.5)
    assert mani["market_prob_at"] == (T0 + 53 * d).isoformat()
    assert bets == [{"contractId": "u1", "beforeTime": str(int((T0 + 53 * d).timestamp() * 1000)),
                     "order": "desc", "limit": "20"}]  # fmt: skip
    for name in ("m0.jsonl", "f0.jsonl"):  # --market-lead-days 0: the final value only, no extra request
        assert "market_prob" not in lines(tmp_path / name)[0]["metadata"]
    assert after == bets


def test_bad_out_and_a_damaged_position_file_are_one_sentence(tmp_path):
    (tmp_path / "adir").mkdir()
    (tmp_path / "q.jsonl.scrape.json").write_text('{"source": "manifold", "query_ind')
    with WebFixture() as srv:
        base = ["questions", "scrape", "manifold", "--base-url", srv.url_for("manifold"), "--rpm", "0"]
        into_dir = cc(tmp_path, *base, "--out", "adir")
        damaged = cc(tmp_path, *base, "--out", "q.jsonl", "--resume")
    resolve = cc(tmp_path, "questions", "resolve", "q.jsonl", "--out", "adir", "-m", "openai/gpt-4o-mini")
    for proc in (into_dir, resolve):
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert "is a directory; give a JSONL file" in " ".join(proc.stderr.split())
    assert damaged.returncode == 2 and "Traceback" not in damaged.stderr
    assert "q.jsonl.scrape.json: not a scrape position" in damaged.stderr


def test_a_long_page_is_written_a_batch_at_a_time(tmp_path, monkeypatch):
    """Manifold pages hold 1,000 markets, each needing its own requests: questions are written as
    batches complete, so an interrupted run keeps them (here: the scrape is stopped mid-page)."""
    from consistency.fake_openai.web import bulk_data
    from consistency.sources import scraper

    monkeypatch.setattr(scraper, "COMPLETE_BATCH", 10)
    out = tmp_path / "mf.jsonl"
    written = []

    def stop_mid_page(report):  # called after each page: count what is on disk meanwhile
        written.append(len(out.read_text().splitlines()))

    with WebFixture(bulk_data(35), latency=0.0) as srv:
        source = SOURCES["manifold"]()
        done = {"n": 0}
        original = source.complete

        async def slow(q, web, base):
            done["n"] += 1
            if done["n"] == 25:  # mid-page: the first two batches are on disk by now
                assert len(out.read_text().splitlines()) == 20
                raise RuntimeError("stopped")  # as a Ctrl-C or a kill would
            return await original(q, web, base)

        source.complete = slow
        with pytest.raises(RuntimeError, match="stopped"):
            asyncio.run(scrape(source, out, ScrapeOptions(), base_url=srv.url_for("manifold"), now=NOW, http=FAST,
                               on_page=stop_mid_page))  # fmt: skip
    assert len(lines(out)) == 20 and not written


def test_polymarket_keyset_pages_and_an_unusable_one_resumed(tmp_path):
    """Gamma's listing is paged by cursor: ``next_cursor`` goes back as ``after_cursor``. A page that
    cannot be had ends the scrape there (the pages after it are unreachable); --resume reads it again."""
    once = HttpSettings(max_backoff=0.05, timeout=5, max_attempts=1)
    out = tmp_path / "p.jsonl"
    with WebFixture(markets_only(), page_cap=1, faults={("polymarket", 1): ["500"]}) as srv:
        first = run("polymarket", srv, out, BINARY, http=once)
        resumed = run("polymarket", srv, out, BINARY, http=once, resume=True)
        cursors = [q.get("after_cursor") for p, q, _ in srv.hits if p.endswith("/markets/keyset")]
    assert first.written == 1 and not first.finished and first.bad_pages[0].position == (0, "c1")
    assert resumed.written == 1 and resumed.finished and not resumed.bad_pages
    assert cursors == [None, "c1", "c1", "c2", "c3"]
    assert [q["metadata"]["source_id"] for q in lines(out)] == ["501", "502"]


def test_scrape_request_takes_the_command_options_as_typed_objects(tmp_path):
    """The Python API under `cc questions scrape`: filters and politeness as documented objects (no loose dicts),
    checked as the command checks them, then the same scrape and the same progress line."""
    from consistency.errors import InputError
    from consistency.sources.request import ScrapeFilters, ScrapePoliteness, progress_info, scrape_request

    polite = ScrapePoliteness(rpm=0, timeout=5, max_attempts=2)
    assert polite.settings(30).requests_per_minute is None  # 0: no limit
    assert ScrapePoliteness().settings(30).requests_per_minute == 30  # None: the source's polite rate
    assert (polite.settings(30).timeout, polite.settings(30).max_attempts) == (5, 2)
    out = tmp_path / "q.jsonl"
    wrong = [
        (ScrapeFilters(types="binary,choice"), "manifold", "--types takes"),
        (ScrapeFilters(), "kalshi", "unknown source 'kalshi'"),
        (ScrapeFilters(status="closed"), "manifold", "--status must be"),
        (ScrapeFilters(resolved_after="May"), "manifold", "--resolved-after must be a date"),
    ]
    for filters, source, said in wrong:
        with pytest.raises(InputError, match=said):
            scrape_request(source, out, filters, polite)
    infos = []
    with WebFixture(page_cap=3) as srv:
        job = scrape_request("manifold", out, ScrapeFilters(types="binary", resolved_after="2024-05-01"), polite,
                             base_url=srv.url_for("manifold"))  # fmt: skip
        report = job(lambda page: infos.append(progress_info(page)))
    assert report.written == 2 and len(lines(out)) == 2
    assert infos and infos[-1] == f"{report.pages} pages, {sum(report.skipped.values())} skipped, 0 already there"
