"""Metaculus: ``GET /api/posts/`` (token in ``Authorization: Token ...``), binary questions only.

A post wraps one question (``post["question"]``); group, conditional and notebook posts are
skipped. A post id is not its question id: the source id is the post id (the page URL's number).
Resolutions are ``yes``/``no``/``annulled``/``ambiguous``; only yes and no are kept.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from ..errors import InputError
from ..llm.secrets import optional_key
from ..models import ForecastingQuestion
from .http import WebClient
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

TOKEN_VARIABLE = "METACULUS_TOKEN"
_RESOLUTIONS = {"yes": True, "no": False}


class Metaculus:
    name = "metaculus"
    default_base_url = "https://www.metaculus.com/api"
    default_rpm = 60.0  # Metaculus throttles with 429s; one request a second is polite
    page_size = 100  # the API's maximum

    def check(self, opts: ScrapeOptions) -> None:
        if opts.min_volume is not None or opts.min_traders is not None:
            raise InputError("Metaculus has forecasters, not trades: use --min-forecasters")

    def headers(self) -> dict[str, str]:
        token = optional_key(TOKEN_VARIABLE)
        return {"Authorization": f"Token {token}"} if token else {}

    def auth_hint(self) -> str:
        if optional_key(TOKEN_VARIABLE):
            return (
                f"Metaculus refused the token in {TOKEN_VARIABLE}: check it against your API token "
                "(metaculus.com, account settings)"
            )
        return (
            f"Metaculus refused the request: set {TOKEN_VARIABLE} to your API token (metaculus.com, account settings)"
        )

    def queries(self, opts: ScrapeOptions) -> list[dict[str, Any]]:
        query: dict[str, Any] = {
            "forecast_type": "binary",
            "order_by": "-scheduled_resolve_time",
            "with_cp": "true",
            "include_descriptions": "true",
            "search": opts.search,
        }
        if opts.status != "all":
            query["statuses"] = opts.status
        # the API filters loosely (a day either side); the exact window is applied after parsing
        if opts.resolved_after:
            query["scheduled_resolve_time__gt"] = str(opts.resolved_after - timedelta(days=1))
        if opts.resolved_before:
            query["scheduled_resolve_time__lt"] = str(opts.resolved_before + timedelta(days=1))
        return [query]

    def page(self, base_url: str, query: dict[str, Any], offset: int) -> tuple[str, dict[str, Any]]:
        return f"{base_url}/posts/", {**query, "limit": self.page_size, "offset": offset}

    def parse_page(self, data: Any) -> tuple[list[dict[str, Any]], bool]:
        if not isinstance(data, dict) or not isinstance(data.get("results"), list):
            raise ValueError("expected an object with a 'results' list")
        return [r for r in data["results"] if isinstance(r, dict)], data.get("next") is not None

    def question(self, post: dict[str, Any], opts: ScrapeOptions, now: datetime) -> ForecastingQuestion | Skip:
        for kind in ("group_of_questions", "conditional", "notebook"):
            if post.get(kind):
                return Skip(f"not a single question ({kind.replace('_', ' ')})")
        q = post.get("question")
        if not isinstance(q, dict):
            return Skip("not a single question")
        if q.get("type") != "binary":
            return Skip(f"not binary ({q.get('type')})")
        raw = q.get("resolution")
        if raw in ("annulled", "ambiguous"):
            return Skip(str(raw))
        if raw is not None and str(raw).lower() not in _RESOLUTIONS:
            return Skip(f"unknown resolution {raw!r}")
        forecasters = post.get("nr_forecasters") or 0
        if opts.min_forecasters is not None and forecasters < opts.min_forecasters:
            return Skip("too few forecasters")
        post_id = str(post["id"])
        resolve = iso_datetime(q.get("scheduled_resolve_time") or post.get("scheduled_resolve_time"))
        created = iso_datetime(q.get("open_time") or post.get("published_at") or post.get("created_at"))
        close = iso_datetime(q.get("scheduled_close_time") or post.get("scheduled_close_time"))
        aggregation = (q.get("aggregations") or {}).get("recency_weighted") or {}
        latest = aggregation.get("latest") or {}
        centers = latest.get("centers") or [None]
        open_now = raw is None and (close is None or close > now)
        metadata = {
            "source_id": post_id,
            "question_id": q.get("id"),
            "forecasters": forecasters,
            "forecasts": post.get("forecasts_count"),
            "close_time": q.get("scheduled_close_time") or post.get("scheduled_close_time"),
            "actual_resolve_time": q.get("actual_resolve_time"),
            "scraped_at": now.isoformat(),
            **market_probability(open_now, centers[0]),
        }
        if not open_now:  # the final value has moved towards the answer: the one before the close instead
            ended = (iso_datetime(q.get(k)) for k in ("actual_close_time", "actual_resolve_time"))
            cutoff = market_cutoff(opts, close, *ended)
            if cutoff is not None:
                metadata |= market_before_close(_center_at(aggregation, cutoff), cutoff)
        return ForecastingQuestion(
            id=question_id(self.name, post_id),
            title=(q.get("title") or post.get("title") or "").strip(),
            body=join_body(
                ("", q.get("description")),
                ("Resolution criteria", q.get("resolution_criteria")),
                ("Fine print", q.get("fine_print")),
            ),
            resolution_date=resolve,
            created_date=created,
            data_source=self.name,
            url=f"https://www.metaculus.com/questions/{post_id}/",
            metadata=metadata,
            resolution=_RESOLUTIONS.get(str(raw).lower()) if raw is not None else None,
        )

    async def complete(self, q: ForecastingQuestion, web: WebClient, base_url: str) -> ForecastingQuestion | Skip:
        return q


def _center_at(aggregation: dict[str, Any], moment: datetime) -> Any:
    """The community prediction in force at ``moment``: the aggregation entry that began last before it."""
    when = moment.timestamp()
    entries = [*(aggregation.get("history") or []), aggregation.get("latest") or {}]
    began = [e for e in entries if isinstance(e, dict) and isinstance(e.get("start_time"), int | float)]
    before = [e for e in began if e["start_time"] <= when]
    if not before:
        return None
    return (max(before, key=lambda e: e["start_time"]).get("centers") or [None])[0]
