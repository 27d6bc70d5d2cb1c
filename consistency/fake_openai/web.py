"""A fixture web server for the question sources: Metaculus, Manifold, Polymarket, NewsAPI and RSS
pages in each API's real shape, on 127.0.0.1, over the scripted server's HTTP machinery.

Every source lives under its own prefix (``url_for(source)``): ``/metaculus/api/posts/``,
``/manifold/v0/search-markets`` and ``/manifold/v0/market/{id}``, ``/polymarket/markets/keyset``,
``/newsapi/v2/everything`` and ``/feeds/{name}.xml``. Pagination honours ``limit``/``offset``
(capped at ``page_cap`` items, as real APIs cap), Metaculus answers 401 without the token
(``METACULUS_TOKEN=fixture-metaculus-token``, :data:`TOKEN`),
Polymarket lists open markets unless ``closed=true``. Faults are planned per page:
``faults[(source, offset)]`` is a list of ``"429"``/``"500"``/``"403"``/``"404"``/``"drop"`` served to successive
requests of that page before the real one, and pages in ``broken`` are always truncated.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode
from xml.sax.saxutils import escape

from .http_server import Drop, Request, Response, json_response
from .server import ScriptedServer
from .web_cases import bulk_data, special_data
from .web_data import (  # noqa: F401 - the data's names, where tests and scripts have always found them
    NEWS_KEY,
    T0,
    TOKEN,
    FixtureData,
    manifold_market,
    metaculus_post,
    polymarket_market,
    sample_articles,
)
from .web_typed import (  # noqa: F401
    fixture_cdf,
    lite_market,
    manifold_multi_market,
    manifold_pseudo_numeric,
    metaculus_group_post,
    metaculus_typed_post,
    metaculus_typed_question,
    polymarket_event,
)


class WebFixture(ScriptedServer):
    """The platforms' APIs over real HTTP. ``latency`` seconds are added to every page."""

    def __init__(
        self,
        data: FixtureData | None = None,
        *,
        latency: float = 0.0,
        page_cap: int | None = None,
        faults: Mapping[tuple[str, Any], list[str]] | None = None,
        broken: set[tuple[str, Any]] | None = None,
        news_rate_limited: set[str] | None = None,
        retry_after: float = 0.05,
        port: int = 0,
    ) -> None:
        super().__init__(latency=latency, port=port)
        self.data = data or special_data()
        self.page_cap = page_cap
        self.faults = {k: list(v) for k, v in (faults or {}).items()}
        self.broken = set(broken or ())
        self.news_rate_limited = set(news_rate_limited or ())  # days (YYYY-MM-DD) answered with rateLimited
        self.retry_after = retry_after
        self.hits: list[tuple[str, dict[str, str], dict[str, str]]] = []  # (path, query, headers) per request
        for prefix in ("metaculus", "manifold", "polymarket", "newsapi", "feeds"):
            self.route("*", f"/{prefix}/{{rest:path}}", self._serve)

    def url_for(self, source: str) -> str:
        root = f"http://{self.host}:{self.port}"
        return {"metaculus": f"{root}/metaculus/api", "feeds": f"{root}/feeds"}.get(source, f"{root}/{source}")

    # ---- HTTP -------------------------------------------------------------------------------

    async def _serve(self, request: Request) -> Response:  # noqa: C901
        """Route one request to the platform it imitates.

        Kept whole: one branch per fixture API (as the platforms' routes), so the table of routes reads in one place.
        """
        path, query, headers = request.path, request.query, request.headers
        with self._lock:
            self.hits.append((path, query, headers))
        if self.latency > 0:
            await request.pause(self.latency)
        if path == "/metaculus/api/posts/" or path == "/metaculus/api/posts":
            given = headers.get("authorization")
            if given != f"Token {TOKEN}":  # as Metaculus words the two cases
                detail = "Invalid token." if given else "Authentication credentials were not provided."
                return json_response(401, {"detail": detail})
            with_cp, history = (query.get(k, "").lower() == "true" for k in ("with_cp", "include_cp_history"))
            view = functools.partial(_post_view, with_cp=with_cp, history=history)
            return self._page("metaculus", self._metaculus(query), query, path, view)
        if path.rstrip("/") == "/metaculus/api/aggregation_explorer":
            if headers.get("authorization") != f"Token {TOKEN}":
                return json_response(401, {"detail": "Authentication credentials were not provided."})
            return self._explorer(query)
        if path == "/manifold/v0/search-markets":
            answers = query.get("includeLiteAnswers", "").lower() == "true"
            view = functools.partial(lite_market, lite_answers=answers)
            return self._page("manifold", self._manifold(query), query, path, view)
        if path == "/manifold/v0/bets":
            return self._bets(query)
        if path.startswith("/manifold/v0/market/"):
            mid = path.rsplit("/", 1)[1]
            return self._detail(mid)
        if path == "/polymarket/events/keyset":
            if "offset" in query:
                return json_response(400, {"error": "offset is not supported; use after_cursor"})
            closed = query.get("closed", "false") == "true"
            term = query.get("title_search", "").lower()
            events = [e for e in self.data.polymarket_events if e["closed"] == closed and term in e["title"].lower()]
            query = {**query, "offset": (query.get("after_cursor") or "c0").removeprefix("c")}
            return self._page("polymarket-events", events, query, path)
        if path in ("/polymarket/markets", "/polymarket/markets/keyset"):
            closed = query.get("closed", "false") == "true"
            # an event's markets are listed with the others (each a binary market of its own)
            markets = [*self.data.polymarket, *(m for e in self.data.polymarket_events for m in e["markets"])]
            items = [m for m in markets if m["closed"] == closed]
            if path.endswith("/keyset"):
                if "offset" in query:
                    return json_response(400, {"error": "offset is not supported; use after_cursor"})
                query = {**query, "offset": (query.get("after_cursor") or "c0").removeprefix("c")}
            return self._page("polymarket", items, query, path)
        if path == "/polymarket/prices-history":
            return self._prices(query)
        if path == "/newsapi/v2/everything":
            return self._news(query, headers)
        if path.startswith("/feeds/"):
            return Response(200, self._rss().encode(), content_type="application/rss+xml")
        return json_response(404, {"error": f"no route {path}"})

    def _fault(self, key: tuple[str, Any]) -> Response | None:
        with self._lock:
            plan = self.faults.get(key)
            kind = plan.pop(0) if plan else None
        if kind == "429":
            return json_response(429, {"error": "Too Many Requests"}, [("retry-after", f"{self.retry_after:g}")])
        if kind == "500":
            return json_response(500, {"error": "Internal Server Error"})
        if kind == "404":  # the item is gone (a deleted market's detail page)
            return json_response(404, {"message": "Contract not found"})
        if kind == "403":  # not for this token (Metaculus' access tiers; Django REST framework's words)
            return json_response(403, {"detail": "You do not have permission to perform this action."})
        if kind == "drop":
            raise Drop
        return None

    def _page(
        self, source: str, items: list[dict[str, Any]], query: dict[str, str], path: str, view: Callable | None = None
    ) -> Response:
        """One page of ``items`` (``view`` applied to the page's items: what the listing shows of each)."""
        offset = int(query.get("offset") or 0)
        limit = int(query.get("limit") or 100)
        if self.page_cap:
            limit = min(limit, self.page_cap)
        fault = self._fault((source, offset))
        if fault is not None:
            return fault
        chunk = items[offset : offset + limit]
        if view is not None:
            chunk = [view(item) for item in chunk]
        if source == "metaculus":
            more = offset + len(chunk) < len(items)
            nxt = f"{self.url_for('metaculus')}/posts/?{urlencode({**query, 'offset': offset + len(chunk)})}"
            prev = f"{self.url_for('metaculus')}/posts/?{urlencode({**query, 'offset': max(0, offset - limit)})}"
            payload: Any = {"next": nxt if more else None, "previous": prev if offset else None, "results": chunk}
        elif path.endswith("/keyset"):  # Gamma's cursor pages: the cursor says where the next page starts
            more = offset + len(chunk) < len(items)
            key = "events" if "/events/" in path else "markets"
            payload = {key: chunk, **({"next_cursor": f"c{offset + len(chunk)}"} if more else {})}
        else:
            payload = chunk
        raw = json.dumps(payload).encode()
        if (source, offset) in self.broken:
            raw = raw[: max(1, len(raw) // 2)]  # a truncated page, served as a complete 200 answer
        return Response(200, raw)

    def _metaculus(self, query: dict[str, str]) -> list[dict[str, Any]]:
        """The posts ``/api/posts/`` lists: filtered by ``statuses`` and ``forecast_type`` (comma lists)
        and ``tournaments`` (a project's id or slug); :func:`_post_view` shows each as the listing does."""
        posts = self.data.metaculus
        project = query.get("tournaments")
        if project:
            posts = [p for p in posts if any(project in (str(t.get("id")), t.get("slug"))
                                             for t in (p.get("projects") or {}).get("tournament") or [])]  # fmt: skip
        wanted = query.get("statuses")
        if wanted:
            posts = [p for p in posts if p.get("status") in wanted.split(",")]
        kinds = query.get("forecast_type")
        if kinds:
            kinds_set = set(kinds.split(","))
            posts = [p for p in posts if (p.get("question") or {}).get("type") in kinds_set
                     or ("group_of_questions" in kinds_set and p.get("group_of_questions"))]  # fmt: skip
        return posts

    def _explorer(self, query: dict[str, str]) -> Response:
        """``/api/aggregation_explorer/?question_id=``: the question with its full aggregation history."""
        wanted = query.get("question_id", "")
        for post in self.data.metaculus:
            group = (post.get("group_of_questions") or {}).get("questions") or []
            for q in [post["question"]] if post.get("question") else group:
                if str(q["id"]) == wanted:
                    with self._lock:  # "hidden": the community forecast is not revealed (is_cp_hidden)
                        plan = self.faults.get(("metaculus-explorer", wanted)) or []
                        hidden = bool(plan) and plan[0] == "hidden" and bool(plan.pop(0))
                    fault = None if hidden else self._fault(("metaculus-explorer", wanted))
                    if fault is not None:
                        return fault
                    methods = (query.get("aggregation_methods") or "recency_weighted").split(",")
                    aggs = {}
                    for m, a in (q.get("aggregations") or {}).items():
                        if m in methods and not hidden:
                            full = [*a.get("history", []), *([a["latest"]] if a.get("latest") else [])]
                            aggs[m] = {**a, "history": full}
                    return json_response(200, {**q, "aggregations": aggs, "forecasters_count": 40})
        return json_response(400, [f"Question with id {wanted} not found"])

    def _manifold(self, query: dict[str, str]) -> list[dict[str, Any]]:
        kind = query.get("filter", "all")
        contract = query.get("contractType", "ALL")
        markets = [m for m in self.data.manifold if _contract_type_matches(m, contract)]
        if kind == "resolved":
            markets = [m for m in markets if m["isResolved"]]
        elif kind == "open":
            markets = [m for m in markets if not m["isResolved"]]
        term = query.get("term", "").lower()
        if term:
            markets = [m for m in markets if term in m["question"].lower()]
        if query.get("sort") == "resolve-date":  # as Manifold sorts it: newest resolution first, unresolved last
            markets = sorted(markets, key=lambda m: -(m.get("resolutionTime") or -(10**15)))
        return markets

    def _detail(self, mid: str) -> Response:
        fault = self._fault(("manifold-market", mid))
        if fault is not None:
            return fault
        market = next((m for m in self.data.manifold if m["id"] == mid), None)
        if market is None:
            return json_response(404, {"message": "Contract not found"})
        text = f"Resolves YES if {market['question'].removeprefix('Will ').rstrip('?')}. Resolves NO otherwise."
        doc = {"type": "doc", "content": [{"type": "paragraph", "content": [{"type": "text", "text": text}]}]}
        full = {**market, "description": doc, "textDescription": text, "groupSlugs": ["fixture"]}
        raw = json.dumps(full).encode()
        if ("manifold-market", mid) in self.broken:
            raw = raw[: len(raw) // 2]
        return Response(200, raw)

    def _bets(self, query: dict[str, str]) -> Response:
        """A market's bets, newest first: one a day after its creation (to 0.5, or for a multiple-choice
        market to each answer's ``early`` probability), one an hour before its close (to its final one)."""
        market = next((m for m in self.data.manifold if m["id"] == query.get("contractId")), None)
        if market is None:
            return json_response(200, [])
        hour = 3600 * 1000
        late, first = market["closeTime"] - hour, market["createdTime"] + 24 * hour
        if market.get("mechanism") == "cpmm-multi-1":
            n = len(market["answers"])
            steps = [(late, a["id"], a.get("resolutionProbability", a["probability"])) for a in market["answers"]]
            steps += [(first, a["id"], self.data.early.get(a["id"], round(1 / n, 6))) for a in market["answers"]]
        else:
            steps = [(late, None, market["probability"]), (first, None, 0.5)]
        bets = []
        for i, (when, answer, after) in enumerate(steps):
            bet = {"id": f"{market['id']}-b{i}", "contractId": market["id"], "createdTime": when, "outcome": "YES",
                   "amount": 10, "probBefore": 0.5, "probAfter": after, "isRedemption": False}  # fmt: skip
            if answer is not None:
                bet |= {"answerId": answer, "betGroupId": f"g{when}"}
            bets.append(bet)
        if query.get("beforeTime"):
            bets = [b for b in bets if b["createdTime"] < int(query["beforeTime"])]
        return json_response(200, bets[: int(query.get("limit") or 1000)])

    def _prices(self, query: dict[str, str]) -> Response:
        """A token's daily price history: its ``early`` price (0.5 unless given) from the day after the
        market's creation until the day before its end, then its final price."""
        token = query.get("market", "")
        markets = [*self.data.polymarket, *(m for e in self.data.polymarket_events for m in e["markets"])]
        market = next((m for m in markets if json.loads(m["clobTokenIds"])[0] == token), None)
        if market is None:
            return json_response(400, {"error": "invalid market"})
        created, end = (datetime.fromisoformat(market[k].replace("Z", "+00:00")) for k in ("createdAt", "endDate"))
        final, early = float(json.loads(market["outcomePrices"])[0]), self.data.early.get(token, 0.5)
        points, day = [], created + timedelta(days=1)
        while day < end:
            points.append({"t": int(day.timestamp()), "p": early if day < end - timedelta(days=1) else final})
            day += timedelta(days=1)
        lo, hi = int(query.get("startTs") or 0), int(query.get("endTs") or 2**62)
        return json_response(200, {"history": [p for p in points if lo <= p["t"] <= hi]})

    def _news(self, query: dict[str, str], headers: dict[str, str]) -> Response:
        if headers.get("x-api-key") != NEWS_KEY:
            error = {"status": "error", "code": "apiKeyMissing", "message": "Your API key is missing."}
            return json_response(401, error)
        day = (query.get("from") or "")[:10]
        if day in self.news_rate_limited:
            message = "You have made too many requests recently."
            return json_response(429, {"status": "error", "code": "rateLimited", "message": message})
        articles = [a for a in self.data.articles if not day or a["publishedAt"][:10] == day]
        page, size = int(query.get("page") or 1), int(query.get("pageSize") or 100)
        chunk = articles[(page - 1) * size : page * size]
        return json_response(200, {"status": "ok", "totalResults": len(articles), "articles": chunk})

    def _rss(self) -> str:
        items = "".join(
            f"<item><title>{escape(a['title'])}</title><link>{escape(a['url'])}</link>"
            f"<description>{escape(a['description'] or '')}</description>"
            f"<pubDate>{datetime.fromisoformat(a['publishedAt'].replace('Z', '+00:00')):%a, %d %b %Y %H:%M:%S +0000}"
            "</pubDate></item>"
            for a in self.data.articles
        )
        return (
            '<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>Fixture news</title>'
            f"<link>https://news.example/</link><description>fixture</description>{items}</channel></rss>"
        )


def _contract_type_matches(market: dict[str, Any], contract: str) -> bool:
    """Manifold's ``contractType`` filter (backend/shared/src/supabase/search-contracts.ts)."""
    kind = market.get("outcomeType")
    if contract == "ALL":
        return True
    if contract == "MULTIPLE_CHOICE":
        return kind in ("MULTIPLE_CHOICE", "FREE_RESPONSE")
    if contract in ("DEPENDENT_MULTIPLE_CHOICE", "INDEPENDENT_MULTIPLE_CHOICE"):
        dependent = market.get("shouldAnswersSumToOne", True)
        return kind == "MULTIPLE_CHOICE" and dependent == (contract == "DEPENDENT_MULTIPLE_CHOICE")
    if contract == "PSEUDO_NUMERIC":
        return kind in ("PSEUDO_NUMERIC", "NUMBER", "MULTI_NUMERIC")
    return kind == contract


def _post_view(post: dict[str, Any], with_cp: bool, history: bool) -> dict[str, Any]:
    """A post as the listing shows it (the fixture keeps each question's full aggregation history):
    community forecasts only with ``with_cp``, their history only with ``include_cp_history`` and never
    with ``forecast_values`` (posts/views.py, questions/services/forecasts.py)."""

    def question(q: dict[str, Any]) -> dict[str, Any]:
        aggs = {}
        for method, a in (q.get("aggregations") or {}).items():
            latest = a.get("latest")
            if not with_cp:
                aggs[method] = {"history": [], "latest": None, "score_data": {}, "movement": None}
                continue
            entries = [*(a.get("history") or []), latest] if history else [latest]
            entries = [e for e in entries if e]
            aggs[method] = {**a, "history": [{**e, "forecast_values": None} for e in entries], "latest": latest}
        return {**q, "aggregations": aggs}

    view = dict(post)
    if post.get("question"):
        view["question"] = question(post["question"])
    if post.get("group_of_questions"):
        group = post["group_of_questions"]
        view["group_of_questions"] = {**group, "questions": [question(q) for q in group["questions"]]}
    return view


def main(argv: list[str] | None = None) -> None:
    """``python -m consistency.fake_openai.web [--bulk N [--typed]] [--latency S] [--page-cap N] [--port P]``: serve
    the fixture APIs until Ctrl-C (first line on stdout: ``serving on http://127.0.0.1:PORT``, then the
    credentials it accepts: ``METACULUS_TOKEN=fixture-metaculus-token``, ``NEWSAPI_KEY=fixture-news-key``)."""
    import argparse
    import contextlib

    parser = argparse.ArgumentParser(prog="python -m consistency.fake_openai.web", description=main.__doc__)
    parser.add_argument("--bulk", type=int, default=0, help="N ordinary questions per platform (default: the cases)")
    parser.add_argument("--typed", action="store_true", help="with --bulk: a third multiple-choice, a third numeric")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every page")
    parser.add_argument("--page-cap", type=int, default=None, help="most items a page holds")
    parser.add_argument("--port", type=int, default=0, help="port (0 picks a free one)")
    args = parser.parse_args(argv)

    async def serve() -> None:
        data = bulk_data(args.bulk, typed=args.typed) if args.bulk else special_data()
        server = WebFixture(data, latency=args.latency, page_cap=args.page_cap, port=args.port)
        async with server:
            print(f"serving on http://{server.host}:{server.port}", flush=True)
            print(f"credentials it accepts: METACULUS_TOKEN={TOKEN} NEWSAPI_KEY={NEWS_KEY}", flush=True)
            await asyncio.Event().wait()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())


if __name__ == "__main__":
    main()
