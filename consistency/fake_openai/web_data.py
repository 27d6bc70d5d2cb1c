"""The fixture web server's data: questions, markets and articles in each platform API's real shape
(:mod:`.web` serves them). ``special_data`` holds the edge cases the scraper tests name one by one,
``bulk_data`` many plain items for speed and pagination, ``sample_articles`` NewsAPI articles."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

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
