"""Manifold: ``GET /v0/search-markets`` for the listing, ``GET /v0/market/{id}`` for the description.

Reads need no key (about 500 requests a minute per IP). Timestamps are milliseconds. Binary
markets only; resolutions YES/NO are kept, MKT (a probability) and CANCEL are skipped, and
sweepstakes (``token: CASH``) copies of play-money markets are skipped as duplicates.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..errors import InputError
from ..models import ForecastingQuestion
from .http import MalformedPage, WebClient, full_url
from .scraper import (
    ScrapeOptions,
    Skip,
    join_body,
    list_page,
    market_before_close,
    market_cutoff,
    market_probability,
    ms_datetime,
    question_id,
)

_RESOLUTIONS = {"YES": True, "NO": False}


class Manifold:
    name = "manifold"
    default_base_url = "https://api.manifold.markets"
    default_rpm = 300.0  # under the documented 500 a minute
    page_size = 1000  # the API's maximum

    def check(self, opts: ScrapeOptions) -> None:
        if opts.min_forecasters is not None:
            raise InputError("Manifold has traders, not forecasters: use --min-traders or --min-volume")

    def headers(self) -> dict[str, str]:
        return {}

    def queries(self, opts: ScrapeOptions) -> list[dict[str, Any]]:
        # Sorted by resolution (resp. creation) date rather than listed in creation order, so a window
        # is covered evenly (the paper's creation-order scan capped at 500 missed two months).
        return [
            {
                "term": opts.search or "",
                "filter": opts.status,
                "contractType": "BINARY",
                "sort": "resolve-date" if opts.status == "resolved" else "newest",
            }
        ]

    def page(self, base_url: str, query: dict[str, Any], offset: int) -> tuple[str, dict[str, Any]]:
        return f"{base_url}/v0/search-markets", {**query, "limit": self.page_size, "offset": offset}

    def parse_page(self, data: Any) -> tuple[list[dict[str, Any]], bool]:
        return list_page(data)

    def past_window(self, items: list[dict[str, Any]], opts: ScrapeOptions) -> bool:
        """Resolved markets come newest resolution first: a page wholly resolved before the window
        means the rest of the listing is too (a market closes at or before it resolves)."""
        if opts.status != "resolved" or opts.resolved_after is None or not items:
            return False
        times = [ms_datetime(m.get("resolutionTime")) for m in items]
        return all(t is not None and t.date() < opts.resolved_after for t in times)

    def question(self, m: dict[str, Any], opts: ScrapeOptions, now: datetime) -> ForecastingQuestion | Skip:
        if m.get("outcomeType") != "BINARY":
            return Skip(f"not binary ({m.get('outcomeType')})")
        if m.get("token") == "CASH":
            return Skip("sweepstakes (CASH) copy")
        raw = m.get("resolution") if m.get("isResolved") else None
        if raw == "MKT":
            return Skip("resolved to a probability (MKT)")
        if raw == "CANCEL":
            return Skip("annulled (CANCEL)")
        if raw is not None and raw not in _RESOLUTIONS:
            return Skip(f"unknown resolution {raw!r}")
        volume = float(m.get("volume") or 0.0)
        traders = int(m.get("uniqueBettorCount") or 0)
        if opts.min_volume is not None and volume < opts.min_volume:
            return Skip("too little volume")
        if opts.min_traders is not None and traders < opts.min_traders:
            return Skip("too few traders")
        close, resolved = ms_datetime(m.get("closeTime")), ms_datetime(m.get("resolutionTime"))
        # the later of close and resolution, as the paper took it
        when = max((d for d in (close, resolved) if d is not None), default=None)
        open_now = raw is None and (close is None or close > now)
        metadata = {
            "source_id": str(m["id"]),
            "volume": volume,
            "traders": traders,
            "liquidity": m.get("totalLiquidity"),
            "close_time": close.isoformat() if close else None,
            "resolve_time": resolved.isoformat() if resolved else None,
            "scraped_at": now.isoformat(),
            **market_probability(open_now, m.get("probability")),
        }
        cutoff = None if open_now else market_cutoff(opts, close, resolved)
        if cutoff is not None:  # the price then is read from the market's bets by complete()
            metadata["market_prob_at"] = cutoff.isoformat()
        return ForecastingQuestion(
            id=question_id(self.name, str(m["id"])),
            title=str(m.get("question") or "").strip(),
            resolution_date=when,
            created_date=ms_datetime(m.get("createdTime")),
            data_source=self.name,
            url=m.get("url"),
            metadata=metadata,
            resolution=_RESOLUTIONS.get(raw) if raw is not None else None,
        )

    async def complete(self, q: ForecastingQuestion, web: WebClient, base_url: str) -> ForecastingQuestion | Skip:
        market_id = q.metadata["source_id"]
        url = f"{base_url}/v0/market/{market_id}"
        detail = await web.get_json(url)
        if not isinstance(detail, dict) or detail.get("id") != market_id:
            raise MalformedPage(full_url(url), "expected the market's object")
        q.body = join_body(("", detail.get("textDescription")))
        if detail.get("groupSlugs"):
            q.metadata["topics"] = list(detail["groupSlugs"])
        at = q.metadata.pop("market_prob_at", None)
        if at is not None:
            price = await self._price_at(web, base_url, market_id, at)
            q.metadata |= market_before_close(price, datetime.fromisoformat(at))
        return q

    async def _price_at(self, web: WebClient, base_url: str, market_id: str, at: str) -> float | None:
        """The market's probability at ``at``: after the last bet placed before then (None without one)."""
        cutoff = int(datetime.fromisoformat(at).timestamp() * 1000)
        url = f"{base_url}/v0/bets"
        params = {"contractId": market_id, "beforeTime": cutoff, "order": "desc", "limit": 20}
        bets = await web.get_json(url, params)
        if not isinstance(bets, list):
            raise MalformedPage(full_url(url, params), "expected a list of bets")
        placed = [
            b
            for b in bets
            if isinstance(b, dict)
            and not b.get("isRedemption")
            and isinstance(b.get("createdTime"), int | float)
            and b["createdTime"] < cutoff
            and isinstance(b.get("probAfter"), int | float)
        ]
        return max(placed, key=lambda b: b["createdTime"])["probAfter"] if placed else None
