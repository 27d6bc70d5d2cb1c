"""Polymarket: the Gamma market-data API, ``GET /markets/keyset`` for binary markets and
``GET /events/keyset`` for multi-market events (no key, about 300 requests per 10 s), paged by cursor
(``next_cursor`` passed back as ``after_cursor``; absent on the last page).

``closed`` defaults to false server-side, so resolved markets need ``closed=true``. ``outcomes``
and ``outcomePrices`` are JSON-encoded strings; a binary market has outcomes ["Yes", "No"], and a
settled one has prices 1 and 0 (older markets: uncollapsed, e.g. 0.99999958 and 0.00000041, so a price within
:data:`SETTLED_TOLERANCE` of 1 and 0 counts as settled). The listing has no trader count and no text search:
``--search`` filters titles here (events: ``title_search``), ``--min-traders`` is refused.

A ``negRisk`` event (github.com/Polymarket/ts-sdk, ``packages/bindings/src/gamma/event.ts``) is a set of
binary markets of which exactly one resolves Yes: it is kept as ONE multiple-choice question whose
options are the markets' ``groupItemTitle`` (an "Other" market is an ordinary option) and whose
resolution is the market settled at Yes. Its crowd forecast is the markets' Yes prices as they are: they
need not sum to one (the crowd's incoherence, kept and noted in ``crowd_forecast_sum``). Events whose
markets are not exclusive (not ``negRisk``, e.g. nested thresholds) and one-market events (listed as
binary markets) are skipped. The event's markets are also listed as binary questions of their own.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from ..errors import InputError
from ..models import ForecastingQuestion
from .http import MalformedPage, WebClient, full_url
from .scraper import (
    ScrapeOptions,
    Skip,
    iso_datetime,
    join_body,
    market_before_close,
    market_cutoff,
    market_probability,
    question_id,
)
from .typed import build_question, choice_crowd, settled_winner


def _json_list(value: Any) -> list[Any]:
    parsed = json.loads(value) if isinstance(value, str) else value
    if not isinstance(parsed, list):
        raise ValueError("expected a JSON list")
    return parsed


#: The order book's API, which keeps each outcome token's price history.
CLOB_BASE_URL = "https://clob.polymarket.com"


#: How far from exactly 1 and 0 a closed market's prices may be and still count as settled (older
#: markets were left at prices such as 0.99999958/0.00000041 instead of collapsing to 1/0).
SETTLED_TOLERANCE = 1e-4

#: The listing a query reads (a key of the query dict that is not sent).
_LISTING = "_listing"
#: Metadata a closed event carries from the listing to ``complete`` (never written).
_PENDING = "_crowd_pending"


class Polymarket:
    name = "polymarket"
    default_base_url = "https://gamma-api.polymarket.com"
    default_rpm = 600.0  # well under 300 per 10 s
    page_size = 100  # the keyset listing's maximum
    keyset = True  # the offset listing (/markets) was retired in 2026 for /markets/keyset

    def check(self, opts: ScrapeOptions) -> None:
        if opts.min_traders is not None:
            raise InputError("Polymarket's market listing has no trader count: use --min-volume")
        if opts.min_forecasters is not None:
            raise InputError("Polymarket has trades, not forecasters: use --min-volume")
        if opts.tournament is not None:
            raise InputError("Polymarket has no tournaments: --tournament is for Metaculus")

    def headers(self) -> dict[str, str]:
        return {}

    def queries(self, opts: ScrapeOptions) -> list[dict[str, Any]]:
        base: dict[str, Any] = {"order": "endDate", "ascending": "false"}
        if opts.resolved_after:
            base["end_date_min"] = f"{opts.resolved_after - timedelta(days=1)}T00:00:00Z"
        if opts.resolved_before:
            base["end_date_max"] = f"{opts.resolved_before + timedelta(days=1)}T23:59:59Z"
        if opts.min_volume is not None:
            base["volume_num_min"] = opts.min_volume
        closed = {"resolved": ["true"], "open": ["false"], "all": ["true", "false"]}[opts.status]
        queries = [{**base, "closed": c} for c in closed] if "binary" in opts.types else []
        if "multiple_choice" in opts.types:  # the events' filters: volume_min, title_search (no volume_num_min)
            events = {k: v for k, v in base.items() if k != "volume_num_min"}
            if opts.min_volume is not None:
                events["volume_min"] = opts.min_volume
            if opts.search:
                events["title_search"] = opts.search
            queries += [{**events, "closed": c, _LISTING: "events"} for c in closed]
        return queries

    def page(self, base_url: str, query: dict[str, Any], cursor: int | str) -> tuple[str, dict[str, Any]]:
        after = cursor if isinstance(cursor, str) else None  # 0: the first page
        params = {k: v for k, v in query.items() if k != _LISTING}
        return f"{base_url}/{query.get(_LISTING, 'markets')}/keyset", {**params, "limit": self.page_size,
                                                                       "after_cursor": after}  # fmt: skip

    def parse_page(self, data: Any) -> tuple[list[dict[str, Any]], str | None]:
        key = "events" if isinstance(data, dict) and "events" in data else "markets"
        if not isinstance(data, dict) or not isinstance(data.get(key), list):
            raise ValueError("expected an object with a 'markets' or 'events' list")
        after = data.get("next_cursor")
        return [m for m in data[key] if isinstance(m, dict)], str(after) if after else None

    def question(self, m: dict[str, Any], opts: ScrapeOptions, now: datetime) -> ForecastingQuestion | Skip:
        if isinstance(m.get("markets"), list):
            return self._event(m, opts, now)
        outcomes = [str(o) for o in _json_list(m.get("outcomes") or "[]")]
        if [o.lower() for o in outcomes] != ["yes", "no"]:
            return Skip(f"not binary ({len(outcomes)} outcomes)")
        title = str(m.get("question") or "").strip()
        if opts.search and opts.search.lower() not in title.lower():
            return Skip("does not match --search")
        prices = [float(p) for p in _json_list(m.get("outcomePrices") or "[]")]
        resolution = None
        if m.get("closed"):
            settled = len(prices) == 2 and all(min(p, 1.0 - p) <= SETTLED_TOLERANCE for p in prices)
            if settled and prices[0] > 0.5 > prices[1]:
                resolution = True
            elif settled and prices[0] < 0.5 < prices[1]:
                resolution = False
            else:
                return Skip("closed without a 0/1 settlement")
        volume = float(m.get("volumeNum") or m.get("volume") or 0.0)
        if opts.min_volume is not None and volume < opts.min_volume:
            return Skip("too little volume")
        end = iso_datetime(m.get("endDate"))
        open_now = not m.get("closed") and (end is None or end > now)
        metadata = {
            "source_id": str(m["id"]),
            "volume": volume,
            "liquidity": m.get("liquidityNum"),
            "closed_time": m.get("closedTime"),
            "uma_resolution_status": m.get("umaResolutionStatus"),
            "scraped_at": now.isoformat(),
            **market_probability(open_now, prices[0] if prices else None),
        }
        tokens = _json_list(m.get("clobTokenIds") or "[]")
        closed_at = iso_datetime(m.get("closedTime"))
        cutoff = None if open_now or not tokens else market_cutoff(opts, end, closed_at)
        if cutoff is not None:  # the Yes price then is read from the CLOB's price history by complete()
            metadata |= {"yes_token_id": str(tokens[0]), "market_prob_at": cutoff.isoformat()}
        return ForecastingQuestion(
            id=question_id(self.name, str(m["id"])),
            title=title,
            body=join_body(("", m.get("description")), ("Resolution source", m.get("resolutionSource"))),
            resolution_date=end,
            created_date=iso_datetime(m.get("createdAt") or m.get("startDate")),
            data_source=self.name,
            url=f"https://polymarket.com/market/{m['slug']}" if m.get("slug") else None,
            metadata=metadata,
            resolution=resolution,
        )

    def _event(self, e: dict[str, Any], opts: ScrapeOptions, now: datetime) -> ForecastingQuestion | Skip:
        """A multi-market event as one multiple-choice question (see the module's docstring)."""
        markets = [m for m in e["markets"] if isinstance(m, dict)]
        if len(markets) < 2:
            return Skip("an event with one market (kept as a binary market)")
        if not e.get("negRisk"):
            return Skip("an event whose markets are not exclusive (not negRisk)")
        title = str(e.get("title") or "").strip()
        if opts.search and opts.search.lower() not in title.lower():
            return Skip("does not match --search")
        options = [str(m.get("groupItemTitle") or m.get("question") or "").strip() for m in markets]
        yes = [float(_json_list(m.get("outcomePrices") or "[]")[0]) for m in markets]
        resolution = None
        if e.get("closed"):
            winner = settled_winner(yes, SETTLED_TOLERANCE)
            if isinstance(winner, Skip):
                return winner
            resolution = options[winner]
        volume = float(e.get("volume") or 0.0)
        if opts.min_volume is not None and volume < opts.min_volume:
            return Skip("too little volume")
        end = iso_datetime(e.get("endDate"))
        open_now = not e.get("closed") and (end is None or end > now)
        tokens = [str(_json_list(m.get("clobTokenIds") or "[]")[0]) for m in markets]
        metadata: dict[str, Any] = {
            "source_id": str(e["id"]),
            "market_ids": [str(m["id"]) for m in markets],
            "volume": volume,
            "liquidity": e.get("liquidity"),
            "closed_time": e.get("closedTime"),
            "scraped_at": now.isoformat(),
        }
        if open_now:
            metadata |= choice_crowd(yes, now)
        else:
            cutoff = market_cutoff(opts, end, iso_datetime(e.get("closedTime")))
            if cutoff is not None:  # each Yes price then, from the CLOB's price history, by complete()
                metadata |= {"yes_token_ids": tokens, _PENDING: cutoff.isoformat()}
        return build_question(
            id=question_id(self.name, f"event:{e['id']}"),
            title=title,
            body=join_body(("", e.get("description")), ("Resolution source", e.get("resolutionSource"))),
            resolution_date=end,
            created_date=iso_datetime(e.get("createdAt") or e.get("startDate")),
            data_source=self.name,
            url=f"https://polymarket.com/event/{e['slug']}" if e.get("slug") else None,
            metadata=metadata,
            question_type="multiple_choice",
            options=options,
            resolution=resolution,
        )

    async def complete(self, q: ForecastingQuestion, web: WebClient, base_url: str) -> ForecastingQuestion | Skip:
        if q.question_type == "multiple_choice":
            at = q.metadata.pop(_PENDING, None)
            if at is not None:
                cutoff = datetime.fromisoformat(at)
                tokens = q.metadata["yes_token_ids"]
                prices = [await self._price_at(web, base_url, q, token, cutoff) for token in tokens]
                found = choice_crowd(prices, cutoff) if None not in prices else {}
                q.metadata |= found or {"crowd_forecast_missing": "no price of every market before the cut-off"}
            return q
        at = q.metadata.pop("market_prob_at", None)
        if at is None:
            return q
        cutoff = datetime.fromisoformat(at)
        price = await self._price_at(web, base_url, q, q.metadata["yes_token_id"], cutoff)
        q.metadata |= market_before_close(price, cutoff)
        return q

    async def _price_at(
        self, web: WebClient, base_url: str, q: ForecastingQuestion, token: str, cutoff: datetime
    ) -> float | None:
        """A Yes token's price at ``cutoff``: the last point of its daily history before then (None without)."""
        # the price history is on the CLOB API; a mirror given with --base-url serves it at its own root
        root = CLOB_BASE_URL if base_url == self.default_base_url else base_url
        start = int(q.created_date.timestamp()) if q.created_date else int(cutoff.timestamp()) - 30 * 86400
        url = f"{root}/prices-history"
        params = {"market": token, "startTs": start, "endTs": int(cutoff.timestamp()), "fidelity": 1440}
        data = await web.get_json(url, params)
        history = data.get("history") if isinstance(data, dict) else None
        if not isinstance(history, list):
            raise MalformedPage(full_url(url, params), "expected an object with a 'history' list")
        points = [
            h for h in history
            if isinstance(h, dict) and isinstance(h.get("t"), int | float) and h["t"] <= cutoff.timestamp()
        ]  # fmt: skip
        return max(points, key=lambda h: h["t"]).get("p") if points else None
