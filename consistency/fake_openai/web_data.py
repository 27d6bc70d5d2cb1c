"""The fixture web server's binary data: questions, markets and articles in each platform API's real
shape (:mod:`.web` serves them; :mod:`.web_typed` adds multiple-choice and numeric items and
:mod:`.web_cases` assembles the sets), and ``sample_articles``, NewsAPI articles."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

TOKEN = "fixture-metaculus-token"
NEWS_KEY = "fixture-news-key"


def iso_utc(d: datetime) -> str:
    return d.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def epoch_ms(d: datetime) -> int:
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
    """A ``/api/posts/`` result: the post and its one binary question (``kind="group"``: a group post
    holding it).
    The community prediction is ``early_cp`` from the opening until two days before the resolution, then ``cp``."""
    status = "resolved" if resolution is not None else "open"
    post: dict[str, Any] = {
        "id": pid,
        "title": title,
        "slug": title.lower().replace(" ", "-")[:40],
        "author_username": "fixture",
        "created_at": iso_utc(created - timedelta(days=1)),
        "published_at": iso_utc(created),
        "curation_status": "approved",
        "status": status,
        "resolved": resolution is not None,
        "nr_forecasters": forecasters,
        "forecasts_count": 3 * forecasters,
        "scheduled_close_time": iso_utc(resolve - timedelta(days=1)),
        "scheduled_resolve_time": iso_utc(resolve),
    }
    question = {
        "id": pid + 100000,
        "title": title,
        "type": "binary" if kind == "group" else kind,
        "status": status,
        "description": f"Background for {title}.",
        "resolution_criteria": f"Resolves YES if {title.removeprefix('Will ').rstrip('?')}.",
        "fine_print": "",
        "open_time": iso_utc(created),
        "scheduled_close_time": iso_utc(resolve - timedelta(days=1)),
        "scheduled_resolve_time": iso_utc(resolve),
        "actual_resolve_time": iso_utc(resolve) if resolution is not None else None,
        "resolution": resolution,
        "aggregations": {
            "recency_weighted": {
                "latest": {"start_time": (resolve - timedelta(days=2)).timestamp(), "end_time": None,
                           "forecast_values": [round(1 - cp, 6), cp], "centers": [cp],
                           "forecaster_count": forecasters},
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
        "createdTime": epoch_ms(created),
        "closeTime": epoch_ms(close),
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
        "lastUpdatedTime": epoch_ms(close),
        "token": token,
    }
    if resolution is not None:
        market.update(resolution=resolution, resolutionTime=epoch_ms(close + timedelta(hours=3)))
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
        "endDate": iso_utc(end),
        "startDate": iso_utc(created),
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
    polymarket_events: list[dict[str, Any]] = field(default_factory=list)  # Gamma events (multi-market)
    #: what the fixture's histories report before an item's last day: a Polymarket Yes token's price
    #: (by CLOB token id) or a Manifold answer's probability (by answer id); absent: 0.5
    early: dict[str, float] = field(default_factory=dict)


T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


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
