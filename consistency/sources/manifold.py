"""Manifold: ``GET /v0/search-markets`` for the listing, ``GET /v0/market/{id}`` for the description.

Reads need no key (about 500 requests a minute per IP). Timestamps are milliseconds. Sweepstakes
(``token: CASH``) copies of play-money markets are skipped as duplicates. What is kept, by
``outcomeType`` (github.com/manifoldmarkets/manifold, ``common/src/contract.ts``):

- ``BINARY``: resolutions YES/NO; MKT (a probability) and CANCEL are skipped.
- ``MULTIPLE_CHOICE`` (``cpmm-multi-1``) whose answers sum to one (``shouldAnswersSumToOne``, on the
  market's detail page), and the bucketed numeric kinds ``MULTI_NUMERIC``, ``DATE`` and ``NUMBER``
  the same way, as multiple-choice questions over their buckets (the API gives each bucket's
  probability and midpoint, not a distribution over numbers): the options are the answers' texts,
  the resolution is the answer chosen (the market's ``resolution`` is its id). ``CHOOSE_MULTIPLE``
  (several answers, weighted) and ``MKT`` are not one option and are skipped, as are ``CANCEL`` and
  markets whose answers are independent (several may be YES).
- ``PSEUDO_NUMERIC``: a numeric question on [``min``, ``max``] (``isLogScale``: Manifold's
  ``(max - min + 1)^p + min - 1``, a log scale with zero point ``min - 1``), resolved to ``value``
  (a resolved market's probability mapped onto the range); it has no distribution to keep.

The listing asks for each market's answers (``includeLiteAnswers``); polls, bounties, stocks and the
like are skipped.
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
from .typed import build_question, choice_crowd, numeric_range

_RESOLUTIONS = {"YES": True, "NO": False}
#: Markets read as multiple choice: a choice among answers, or among a number's buckets.
_MULTI = ("MULTIPLE_CHOICE", "MULTI_NUMERIC", "DATE", "NUMBER")
#: Metadata a closed multiple-choice market carries from the listing to ``complete`` (never written).
_PENDING = "_crowd_pending"


class Manifold:
    name = "manifold"
    default_base_url = "https://api.manifold.markets"
    default_rpm = 300.0  # under the documented 500 a minute
    page_size = 1000  # the API's maximum

    def check(self, opts: ScrapeOptions) -> None:
        if opts.min_forecasters is not None:
            raise InputError("Manifold has traders, not forecasters: use --min-traders or --min-volume")
        if opts.tournament is not None:
            raise InputError("Manifold has no tournaments: --tournament is for Metaculus (try --search)")

    def headers(self) -> dict[str, str]:
        return {}

    def queries(self, opts: ScrapeOptions) -> list[dict[str, Any]]:
        # Sorted by resolution (resp. creation) date rather than listed in creation order, so a window
        # is covered evenly (the paper's creation-order scan capped at 500 missed two months).
        query = {
            "term": opts.search or "",
            "filter": opts.status,
            "contractType": "BINARY" if opts.types == ("binary",) else "ALL",
            "sort": "resolve-date" if opts.status == "resolved" else "newest",
        }
        if "multiple_choice" in opts.types:  # the answers, without a detail request per listed market
            query["includeLiteAnswers"] = "true"
        return [query]

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
        kind = m.get("outcomeType")
        ours = {"BINARY": "binary", "PSEUDO_NUMERIC": "numeric"}.get(str(kind))
        if kind in _MULTI:  # older ones (dpm-2) are priced by another mechanism, answers without a pool each
            if m.get("mechanism") != "cpmm-multi-1":
                return Skip(f"a legacy {m.get('mechanism')} market ({kind})")
            ours = "multiple_choice"
        if ours is None:
            return Skip(f"not a kind kept ({kind})")
        if ours not in opts.types:
            return Skip(f"{ours} not selected (--types)")
        if m.get("token") == "CASH":
            return Skip("sweepstakes (CASH) copy")
        raw = m.get("resolution") if m.get("isResolved") else None
        if raw == "CANCEL":
            return Skip("annulled (CANCEL)")
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
        cutoff = None if open_now else market_cutoff(opts, close, resolved)
        metadata: dict[str, Any] = {
            "source_id": str(m["id"]),
            "volume": volume,
            "traders": traders,
            "liquidity": m.get("totalLiquidity"),
            "close_time": close.isoformat() if close else None,
            "resolve_time": resolved.isoformat() if resolved else None,
            "scraped_at": now.isoformat(),
        }
        if ours == "binary":
            made = _binary(m, raw, open_now, cutoff)
        elif ours == "numeric":
            made = _pseudo_numeric(m, raw)
        else:
            made = _choice(m, raw, now if open_now else None, cutoff)
            if not isinstance(made, Skip) and kind != "MULTIPLE_CHOICE":
                metadata["buckets_of"] = kind  # a number's (or date's) buckets, midpoints from the detail page
        if isinstance(made, Skip):
            return made
        fields, extra = made
        return build_question(
            id=question_id(self.name, str(m["id"])),
            title=str(m.get("question") or "").strip(),
            resolution_date=when,
            created_date=ms_datetime(m.get("createdTime")),
            data_source=self.name,
            url=m.get("url"),
            metadata=metadata | extra,
            **fields,
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
        if q.question_type == "multiple_choice":
            return await self._complete_choice(q, detail, web, base_url)
        at = q.metadata.pop("market_prob_at", None)
        if at is not None:
            price = await self._price_at(web, base_url, market_id, at)
            q.metadata |= market_before_close(price, datetime.fromisoformat(at))
        return q

    async def _complete_choice(
        self, q: ForecastingQuestion, detail: dict[str, Any], web: WebClient, base_url: str
    ) -> ForecastingQuestion | Skip:
        """A multiple-choice market's checks that need the detail page, and its crowd before the close."""
        at = q.metadata.pop(_PENDING, None)
        if detail.get("shouldAnswersSumToOne") is not True:
            return Skip("answers are independent (several may be YES)")
        answers = {a.get("id"): a for a in detail.get("answers") or [] if isinstance(a, dict)}
        ids = q.metadata.pop("_answer_ids")
        if "buckets_of" in q.metadata:
            q.metadata["bucket_midpoints"] = [(answers.get(i) or {}).get("midpoint") for i in ids]
        if at is not None:
            cutoff = datetime.fromisoformat(at)
            probs = await self._answer_probs_at(web, base_url, q.metadata["source_id"], ids, cutoff)
            found = choice_crowd(probs, cutoff) if None not in probs else {}
            q.metadata |= found or {"crowd_forecast_missing": "no bet on every answer before the cut-off"}
        return q

    async def _answer_probs_at(
        self, web: WebClient, base_url: str, market_id: str, ids: list[str], at: datetime
    ) -> list[float | None]:
        """Each answer's probability at ``at``: after the last bet on it placed before then (a bet on one
        answer of a sum-to-one market is matched by rebalancing bets on the others, each recorded)."""
        cutoff = int(at.timestamp() * 1000)
        url = f"{base_url}/v0/bets"
        params = {"contractId": market_id, "beforeTime": cutoff, "order": "desc", "limit": 1000}
        bets = await web.get_json(url, params)
        if not isinstance(bets, list):
            raise MalformedPage(full_url(url, params), "expected a list of bets")
        latest: dict[str, dict[str, Any]] = {}
        for b in bets:
            if (
                isinstance(b, dict)
                and not b.get("isRedemption")
                and isinstance(b.get("createdTime"), int | float)
                and b["createdTime"] < cutoff
                and isinstance(b.get("probAfter"), int | float)
                and (b.get("answerId") not in latest or b["createdTime"] > latest[b["answerId"]]["createdTime"])
            ):
                latest[b.get("answerId")] = b
        return [latest[i]["probAfter"] if i in latest else None for i in ids]

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


def _binary(
    m: dict[str, Any], raw: Any, open_now: bool, cutoff: datetime | None
) -> tuple[dict[str, Any], dict[str, Any]] | Skip:
    if raw == "MKT":
        return Skip("resolved to a probability (MKT)")
    if raw is not None and raw not in _RESOLUTIONS:
        return Skip(f"unknown resolution {raw!r}")
    extra = market_probability(open_now, m.get("probability"))
    if cutoff is not None:  # the price then is read from the market's bets by complete()
        extra["market_prob_at"] = cutoff.isoformat()
    return {"resolution": _RESOLUTIONS.get(raw) if raw is not None else None}, extra


def _choice(
    m: dict[str, Any], raw: Any, now: datetime | None, cutoff: datetime | None
) -> tuple[dict[str, Any], dict[str, Any]] | Skip:
    """Options and resolution from the listing's answers (``includeLiteAnswers``), and the crowd: the
    answers' probabilities while open (``now``), the bets before ``cutoff`` once closed (by complete())."""
    answers = [a for a in m.get("answers") or [] if isinstance(a, dict)]
    if len(answers) < 2:
        return Skip("multiple choice without its answers")
    options = [str(a.get("text") or "").strip() for a in answers]
    ids = [str(a.get("id")) for a in answers]
    if raw in ("CHOOSE_MULTIPLE", "MKT"):
        return Skip(f"resolved to several answers ({raw})")
    resolution = None
    if raw is not None:
        if raw not in ids:
            return Skip(f"unknown resolution {raw!r}")
        resolution = options[ids.index(raw)]
    extra: dict[str, Any] = {"_answer_ids": ids}
    if now is not None:
        extra |= choice_crowd([a.get("probability") for a in answers], now)
    elif cutoff is not None:
        extra[_PENDING] = cutoff.isoformat()
    return {"question_type": "multiple_choice", "options": options, "resolution": resolution}, extra


def _pseudo_numeric(m: dict[str, Any], raw: Any) -> tuple[dict[str, Any], dict[str, Any]] | Skip:
    """Range and resolution of a ``PSEUDO_NUMERIC`` market (docs/docs/api.md, ``LiteMarket``)."""
    low, high = m.get("min"), m.get("max")
    if not isinstance(low, int | float) or not isinstance(high, int | float):
        return Skip("numeric market without min and max")
    span = numeric_range(low, high, zero_point=low - 1 if m.get("isLogScale") else None)
    if isinstance(span, Skip):
        return span
    resolution = None
    if raw == "MKT":  # resolved to a number: the probability it maps from, mapped back (``value``)
        if not isinstance(m.get("value"), int | float):
            return Skip("resolved without a value")
        resolution = float(m["value"])
    elif raw in _RESOLUTIONS:  # older markets resolved YES/NO: the top or the bottom of the range
        resolution = float(high if raw == "YES" else low)
    elif raw is not None:
        return Skip(f"unknown resolution {raw!r}")
    return {"question_type": "numeric", "range": span, "resolution": resolution}, {}
