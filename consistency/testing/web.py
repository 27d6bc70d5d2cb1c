"""A fixture web server for the question sources: Metaculus, Manifold, Polymarket, NewsAPI and RSS
pages in each API's real shape, on 127.0.0.1, over the scripted server's HTTP machinery.

Every source lives under its own prefix (``url_for(source)``): ``/metaculus/api/posts/``,
``/manifold/v0/search-markets`` and ``/manifold/v0/market/{id}``, ``/polymarket/markets/keyset``,
``/newsapi/v2/everything`` and ``/feeds/{name}.xml``. Pagination honours ``limit``/``offset``
(capped at ``page_cap`` items, as real APIs cap), Metaculus answers 401 without the token
(``METACULUS_TOKEN=fixture-metaculus-token``, :data:`TOKEN`),
Polymarket lists open markets unless ``closed=true``. Faults are planned per page:
``faults[(source, offset)]`` is a list of ``"429"``/``"500"``/``"drop"`` served to successive
requests of that page before the real one, and pages in ``broken`` are always truncated.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode
from xml.sax.saxutils import escape

from .http_server import Drop, Request, Response, json_response
from .server import ScriptedServer

TOKEN = "fixture-metaculus-token"
NEWS_KEY = "fixture-news-key"


def _iso(d: datetime) -> str:
    return d.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ms(d: datetime) -> int:
    return int(d.timestamp() * 1000)


# ------------------------------------------------------------------------------------ data


def metaculus_post(
    pid: int,
    title: str,
    *,
    resolution: str | None,
    resolve: datetime,
    created: datetime,
    kind: str = "binary",
    forecasters: int = 40,
    cp: float = 0.3,
    early_cp: float = 0.5,
) -> dict[str, Any]:
    """A ``/api/posts/`` result: the post and its one question (``kind``: a question type or ``group``).
    The community prediction is ``early_cp`` from the opening until two days before the resolution, then ``cp``."""
    status = "resolved" if resolution is not None else "open"
    post: dict[str, Any] = {
        "id": pid,
        "title": title,
        "slug": title.lower().replace(" ", "-")[:40],
        "author_username": "fixture",
        "created_at": _iso(created - timedelta(days=1)),
        "published_at": _iso(created),
        "curation_status": "approved",
        "status": status,
        "resolved": resolution is not None,
        "nr_forecasters": forecasters,
        "forecasts_count": 3 * forecasters,
        "scheduled_close_time": _iso(resolve - timedelta(days=1)),
        "scheduled_resolve_time": _iso(resolve),
    }
    question = {
        "id": pid + 100000,
        "title": title,
        "type": kind,
        "status": status,
        "description": f"Background for {title}.",
        "resolution_criteria": f"Resolves YES if {title.removeprefix('Will ').rstrip('?')}.",
        "fine_print": "",
        "open_time": _iso(created),
        "scheduled_close_time": _iso(resolve - timedelta(days=1)),
        "scheduled_resolve_time": _iso(resolve),
        "actual_resolve_time": _iso(resolve) if resolution is not None else None,
        "resolution": resolution,
        "aggregations": {
            "recency_weighted": {
                "latest": {"start_time": (resolve - timedelta(days=2)).timestamp(), "end_time": None,
                           "centers": [cp], "forecaster_count": forecasters},
                "history": [{"start_time": created.timestamp(), "end_time": (resolve - timedelta(days=2)).timestamp(),
                             "centers": [early_cp], "forecaster_count": forecasters // 2}],
            }
        },
    }  # fmt: skip
    if kind == "group":
        post["group_of_questions"] = {"description": question["description"], "questions": [question]}
    else:
        post["question"] = question
    return post


def manifold_market(
    mid: str,
    title: str,
    *,
    resolution: str | None,
    close: datetime,
    created: datetime,
    kind: str = "BINARY",
    token: str = "MANA",
    prob: float = 0.4,
    volume: float = 500.0,
    traders: int = 12,
) -> dict[str, Any]:
    """A ``LiteMarket`` as ``/v0/search-markets`` lists it."""
    market = {
        "id": mid,
        "creatorId": "creator1",
        "creatorUsername": "fixture",
        "creatorName": "Fixture",
        "createdTime": _ms(created),
        "closeTime": _ms(close),
        "question": title,
        "slug": title.lower().replace(" ", "-")[:40],
        "url": f"https://manifold.markets/fixture/{mid}",
        "outcomeType": kind,
        "mechanism": "cpmm-1" if kind == "BINARY" else "cpmm-multi-1",
        "probability": prob,
        "pool": {"YES": 100.0, "NO": 150.0},
        "p": 0.5,
        "totalLiquidity": 100.0,
        "volume": volume,
        "volume24Hours": 0.0,
        "isResolved": resolution is not None,
        "uniqueBettorCount": traders,
        "lastUpdatedTime": _ms(close),
        "token": token,
    }
    if resolution is not None:
        market.update(resolution=resolution, resolutionTime=_ms(close + timedelta(hours=3)))
    return market


def polymarket_market(
    mid: int,
    title: str,
    *,
    prices: tuple[str, ...],
    closed: bool,
    end: datetime,
    created: datetime,
    outcomes: tuple[str, ...] = ("Yes", "No"),
    volume: float = 25000.0,
) -> dict[str, Any]:
    """A Gamma ``/markets`` item (``outcomes`` and ``outcomePrices`` as JSON-encoded strings)."""
    return {
        "id": str(mid),
        "question": title,
        "conditionId": f"0x{mid:064x}",
        "slug": title.lower().replace(" ", "-").rstrip("?")[:40],
        "endDate": _iso(end),
        "startDate": _iso(created),
        "createdAt": created.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "description": f"This market resolves to Yes if {title.removeprefix('Will ').rstrip('?')}.",
        "resolutionSource": "",
        "outcomes": json.dumps(list(outcomes)),
        "outcomePrices": json.dumps(list(prices)),
        "clobTokenIds": json.dumps([str(mid * 1000 + i) for i in range(len(outcomes))]),
        "volume": str(volume),
        "volumeNum": volume,
        "liquidityNum": 0.0,
        "active": True,
        "closed": closed,
        "closedTime": (end + timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S+00") if closed else None,
        "umaResolutionStatus": "resolved" if closed else None,
    }


@dataclass
class FixtureData:
    metaculus: list[dict[str, Any]] = field(default_factory=list)
    manifold: list[dict[str, Any]] = field(default_factory=list)
    polymarket: list[dict[str, Any]] = field(default_factory=list)
    articles: list[dict[str, Any]] = field(default_factory=list)  # NewsAPI articles (and the RSS feed's items)


T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def special_data() -> FixtureData:
    """The cases each source must handle, in a known order (window 2024-05-01 .. 2024-08-15)."""
    d = timedelta(days=1)
    meta = [
        metaculus_post(101, "Will A happen by June 2024?", resolution="yes", resolve=T0 + 30 * d, created=T0 - 60 * d),
        metaculus_post(102, "Will B happen by July 2024?", resolution="no", resolve=T0 + 60 * d, created=T0 - 60 * d),
        metaculus_post(103, "Will C happen?", resolution="annulled", resolve=T0 + 20 * d, created=T0 - 60 * d),
        metaculus_post(104, "Will D happen?", resolution="ambiguous", resolve=T0 + 20 * d, created=T0 - 60 * d),
        metaculus_post(105, "Which E?", resolution="yes", resolve=T0 + 20 * d, created=T0 - 60 * d,
                       kind="multiple_choice"),
        metaculus_post(106, "Group F", resolution=None, resolve=T0 + 20 * d, created=T0 - 60 * d, kind="group"),
        metaculus_post(107, "Will G happen by 2023?", resolution="yes", resolve=T0 - 200 * d, created=T0 - 300 * d),
        metaculus_post(108, "Will H happen this weekend?", resolution="no", resolve=T0 + 12 * d, created=T0 + 10 * d),
        metaculus_post(109, "Will I happen by August 2024?", resolution="yes", resolve=T0 + 90 * d,
                       created=T0 - 10 * d, forecasters=3),
    ]  # fmt: skip
    mani = [
        manifold_market("m1", "Will J happen by June 2024?", resolution="YES", close=T0 + 30 * d, created=T0 - 40 * d),
        manifold_market("m2", "Will K happen by July 2024?", resolution="NO", close=T0 + 60 * d, created=T0 - 40 * d),
        manifold_market("m3", "Will L happen?", resolution="MKT", close=T0 + 30 * d, created=T0 - 40 * d),
        manifold_market("m4", "Will M happen?", resolution="CANCEL", close=T0 + 30 * d, created=T0 - 40 * d),
        manifold_market("m5", "Which N?", resolution="YES", close=T0 + 30 * d, created=T0 - 40 * d,
                        kind="MULTIPLE_CHOICE"),
        manifold_market("m6", "Will J happen by June 2024?", resolution="YES", close=T0 + 30 * d, created=T0 - 40 * d,
                        token="CASH"),
        manifold_market("m7", "Will O happen?", resolution=None, close=T0 + 300 * d, created=T0 - 40 * d),
    ]  # fmt: skip
    poly = [
        polymarket_market(501, "Will P happen by June 30?", prices=("1", "0"), closed=True, end=T0 + 60 * d,
                          created=T0 - 30 * d),
        polymarket_market(502, "Will Q happen by June 30?", prices=("0", "1"), closed=True, end=T0 + 60 * d,
                          created=T0 - 30 * d),
        polymarket_market(503, "Will R happen by June 30?", prices=("0.5", "0.5"), closed=True, end=T0 + 60 * d,
                          created=T0 - 30 * d),
        polymarket_market(504, "Who wins S?", prices=("1", "0", "0"), closed=True, end=T0 + 60 * d,
                          created=T0 - 30 * d, outcomes=("Ann", "Bob", "Cy")),
        polymarket_market(505, "Will T happen by 2030?", prices=("0.25", "0.75"), closed=False, end=T0 + 2000 * d,
                          created=T0 - 30 * d),
    ]  # fmt: skip
    return FixtureData(metaculus=meta, manifold=mani, polymarket=poly, articles=sample_articles())


def bulk_data(n: int, seed: int = 0) -> FixtureData:
    """``n`` ordinary resolved binary questions per platform (for benchmarks and end-to-end runs)."""
    rng = random.Random(seed)
    meta, mani, poly = [], [], []
    for i in range(n):
        resolve = T0 + timedelta(days=rng.randint(1, 100), hours=rng.randint(0, 23))
        created = resolve - timedelta(days=rng.randint(10, 400))
        yes = rng.random() < 0.4
        topic = f"event {i} in region {i % 37}"
        meta.append(
            metaculus_post(
                10000 + i,
                f"Will {topic} occur?",
                resolution="yes" if yes else "no",
                resolve=resolve,
                created=created,
                cp=round(rng.random(), 3),
            )
        )
        mani.append(
            manifold_market(
                f"bulk{i}",
                f"Will {topic} be reported?",
                resolution="YES" if yes else "NO",
                close=resolve,
                created=created,
                prob=round(rng.random(), 3),
                traders=rng.randint(1, 80),
            )
        )
        poly.append(
            polymarket_market(
                90000 + i,
                f"Will {topic} be confirmed?",
                prices=("1", "0") if yes else ("0", "1"),
                closed=True,
                end=resolve,
                created=created,
            )
        )
    return FixtureData(metaculus=meta, manifold=mani, polymarket=poly)  # fmt: skip


def sample_articles() -> list[dict[str, Any]]:
    """NewsAPI ``articles`` on three days (two on the first)."""
    src = {"id": "reuters", "name": "Reuters"}
    return [
        {"source": src, "author": "Desk", "title": "Central bank holds rates, signals cut later this year",
         "description": "The central bank left its policy rate unchanged and said a cut may come by September.",
         "url": "https://news.example/a1", "urlToImage": None, "publishedAt": "2024-06-03T09:00:00Z",
         "content": "The bank's board voted to hold the rate at 5.25% ... [+1200 chars]"},
        {"source": src, "author": "Desk", "title": "Space agency schedules crewed launch for August",
         "description": "The launch of the crewed mission is planned for mid-August.",
         "url": "https://news.example/a2", "urlToImage": None, "publishedAt": "2024-06-03T15:00:00Z",
         "content": "Officials said the launch window opens on August 14 ... [+800 chars]"},
        {"source": src, "author": None, "title": "Parliament passes budget after long debate",
         "description": "Lawmakers approved the budget; the upper house votes next month.",
         "url": "https://news.example/a3", "urlToImage": None, "publishedAt": "2024-06-04T11:00:00Z",
         "content": None},
    ]  # fmt: skip


# ------------------------------------------------------------------------------------ server


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

    async def _serve(self, request: Request) -> Response:
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
            return self._page("metaculus", self._metaculus(query), query, path)
        if path == "/manifold/v0/search-markets":
            return self._page("manifold", self._manifold(query), query, path)
        if path == "/manifold/v0/bets":
            return self._bets(query)
        if path.startswith("/manifold/v0/market/"):
            mid = path.rsplit("/", 1)[1]
            return self._detail(mid)
        if path in ("/polymarket/markets", "/polymarket/markets/keyset"):
            closed = query.get("closed", "false") == "true"
            items = [m for m in self.data.polymarket if m["closed"] == closed]
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
        if kind == "drop":
            raise Drop
        return None

    def _page(self, source: str, items: list[dict[str, Any]], query: dict[str, str], path: str) -> Response:
        offset = int(query.get("offset") or 0)
        limit = int(query.get("limit") or 100)
        if self.page_cap:
            limit = min(limit, self.page_cap)
        fault = self._fault((source, offset))
        if fault is not None:
            return fault
        chunk = items[offset : offset + limit]
        if source == "metaculus":
            more = offset + len(chunk) < len(items)
            nxt = f"{self.url_for('metaculus')}/posts/?{urlencode({**query, 'offset': offset + len(chunk)})}"
            prev = f"{self.url_for('metaculus')}/posts/?{urlencode({**query, 'offset': max(0, offset - limit)})}"
            payload: Any = {"next": nxt if more else None, "previous": prev if offset else None, "results": chunk}
        elif path.endswith("/keyset"):  # Gamma's cursor pages: the cursor says where the next page starts
            more = offset + len(chunk) < len(items)
            payload = {"markets": chunk, **({"next_cursor": f"c{offset + len(chunk)}"} if more else {})}
        else:
            payload = chunk
        raw = json.dumps(payload).encode()
        if (source, offset) in self.broken:
            raw = raw[: max(1, len(raw) // 2)]  # a truncated page, served as a complete 200 answer
        return Response(200, raw)

    def _metaculus(self, query: dict[str, str]) -> list[dict[str, Any]]:
        posts = self.data.metaculus
        wanted = query.get("statuses")
        if wanted:
            posts = [p for p in posts if p.get("status") == wanted]
        return posts

    def _manifold(self, query: dict[str, str]) -> list[dict[str, Any]]:
        kind = query.get("filter", "all")
        markets = self.data.manifold
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
        """A market's bets, newest first: one a day after its creation (to 0.5), one an hour before
        its close (to its final probability)."""
        market = next((m for m in self.data.manifold if m["id"] == query.get("contractId")), None)
        if market is None:
            return json_response(200, [])
        hour = 3600 * 1000
        bets = [
            {"id": f"{market['id']}-b{i}", "contractId": market["id"], "createdTime": when, "outcome": "YES",
             "amount": 10, "probBefore": before, "probAfter": after, "isRedemption": False}
            for i, (when, before, after) in enumerate([
                (market["closeTime"] - hour, 0.5, market["probability"]),
                (market["createdTime"] + 24 * hour, 0.5, 0.5),
            ])
        ]  # fmt: skip
        if query.get("beforeTime"):
            bets = [b for b in bets if b["createdTime"] < int(query["beforeTime"])]
        return json_response(200, bets[: int(query.get("limit") or 1000)])

    def _prices(self, query: dict[str, str]) -> Response:
        """A token's daily price history: 0.5 from the day after the market's creation until the day
        before its end, then its final price."""
        token = query.get("market", "")
        market = next((m for m in self.data.polymarket if json.loads(m["clobTokenIds"])[0] == token), None)
        if market is None:
            return json_response(400, {"error": "invalid market"})
        created, end = (datetime.fromisoformat(market[k].replace("Z", "+00:00")) for k in ("createdAt", "endDate"))
        final = float(json.loads(market["outcomePrices"])[0])
        points, day = [], created + timedelta(days=1)
        while day < end:
            points.append({"t": int(day.timestamp()), "p": 0.5 if day < end - timedelta(days=1) else final})
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


def main(argv: list[str] | None = None) -> None:
    """``python -m consistency.testing.web [--bulk N] [--latency S] [--page-cap N] [--port P]``: serve
    the fixture APIs until Ctrl-C (first line on stdout: ``serving on http://127.0.0.1:PORT``, then the
    credentials it accepts: ``METACULUS_TOKEN=fixture-metaculus-token``, ``NEWSAPI_KEY=fixture-news-key``)."""
    import argparse
    import contextlib

    parser = argparse.ArgumentParser(prog="python -m consistency.testing.web", description=main.__doc__)
    parser.add_argument("--bulk", type=int, default=0, help="N ordinary questions per platform (default: the cases)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every page")
    parser.add_argument("--page-cap", type=int, default=None, help="most items a page holds")
    parser.add_argument("--port", type=int, default=0, help="port (0 picks a free one)")
    args = parser.parse_args(argv)

    async def serve() -> None:
        data = bulk_data(args.bulk) if args.bulk else special_data()
        server = WebFixture(data, latency=args.latency, page_cap=args.page_cap, port=args.port)
        async with server:
            print(f"serving on http://{server.host}:{server.port}", flush=True)
            print(f"credentials it accepts: METACULUS_TOKEN={TOKEN} NEWSAPI_KEY={NEWS_KEY}", flush=True)
            await asyncio.Event().wait()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())


if __name__ == "__main__":
    main()
