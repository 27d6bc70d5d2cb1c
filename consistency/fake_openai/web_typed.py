"""The fixture web server's multiple-choice and numeric items, in each platform API's real shape.

Where each shape comes from (the fields below are the platforms', not ours):

- Metaculus ``/api/posts/``: the question serializer and its aggregations in the site's own code
  (github.com/Metaculus/metaculus, ``questions/serializers/common.py`` ``QuestionSerializer`` and
  ``get_scaling``; ``questions/serializers/aggregate_forecasts.py``; ``questions/models.py`` for
  ``range_min``/``range_max``/``zero_point``/``open_*_bound``/``inbound_outcome_count``/``options``)
  and the published OpenAPI description (``docs/openapi.yml``: the numeric and multiple-choice
  examples of ``GET /api/posts/``, where a resolved numeric question's ``resolution`` is the text
  ``"77289125.94957079"`` and history entries carry ``"forecast_values": null``). Aggregation
  history comes with ``include_cp_history=true`` only, without ``forecast_values`` (deferred in
  ``questions/services/forecasts.py``); ``/api/aggregation_explorer/`` (``utils/views.py``) returns the
  history with them. A multiple-choice forecast vector follows ``all_options_ever``.
- Manifold ``/v0/search-markets`` (``LiteMarket``) and ``/v0/market/{id}`` (``FullMarket``):
  ``common/src/api/market-types.ts`` (``toLiteMarket``/``toFullMarket``, ``ApiAnswer``),
  ``common/src/answer.ts`` (``Answer``: ``index``, ``text``, ``isOther``, ``resolution``...),
  ``common/src/contract.ts`` (``shouldAnswersSumToOne``; ``PseudoNumeric``: ``min``/``max``/``isLogScale``)
  and ``backend/api/src/resolve-market.ts`` (a sum-to-one market resolves to an answer id,
  ``CHOOSE_MULTIPLE`` or ``CANCEL``), all in github.com/manifoldmarkets/manifold.
- Polymarket Gamma ``/events/keyset``: ``{"events": [...], "next_cursor"}`` with each event's
  ``markets`` (github.com/Polymarket/ts-sdk, ``packages/bindings/src/gamma/event.ts`` and
  ``market.ts``: ``negRisk``, ``groupItemTitle``, ``negRiskOther``, ``outcomePrices``...;
  docs.polymarket.com/market-data/overview: a multi-market event's markets are its outcomes).
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from typing import Any

from .web_data import epoch_ms, iso_utc

DAY = timedelta(days=1)


# ------------------------------------------------------------------------------------ Metaculus


def fixture_cdf(outcomes: int, mid: float, scale: float, below: float = 0.0, above: float = 0.0) -> list[float]:
    """A smooth CDF at ``outcomes + 1`` evenly spaced points of [0, 1] (Metaculus' layout): ``below``
    of the mass under the lower bound, ``above`` over the upper one, rounded to 6 places."""
    raw = [1.0 / (1.0 + math.exp(-(i / outcomes - mid) / scale)) for i in range(outcomes + 1)]
    lo, hi = raw[0], raw[-1]
    return [round(below + (1.0 - below - above) * (r - lo) / (hi - lo), 6) for r in raw]


def _quartiles(cdf: list[float]) -> tuple[float, float, float]:
    """Where the CDF crosses 1/4, 1/2 and 3/4, as a position in [0, 1] (what Metaculus reports as a
    continuous aggregate's ``interval_lower_bounds``/``centers``/``interval_upper_bounds``)."""
    n = len(cdf) - 1

    def at(q: float) -> float:
        for i in range(n):
            if cdf[i] <= q <= cdf[i + 1] and cdf[i + 1] > cdf[i]:
                return round((i + (q - cdf[i]) / (cdf[i + 1] - cdf[i])) / n, 6)
        return 0.0 if q < cdf[0] else 1.0

    return at(0.25), at(0.5), at(0.75)


def _entry(start: datetime, end: datetime | None, values: list[float], kind: str, count: int) -> dict[str, Any]:
    if kind == "multiple_choice":
        lower = [round(v * 0.8, 6) for v in values]
        centers, upper = list(values), [round(min(1.0, v * 1.2), 6) for v in values]
    else:
        q1, q2, q3 = _quartiles(values)
        lower, centers, upper = [q1], [q2], [q3]
    return {"start_time": start.timestamp(), "end_time": end.timestamp() if end else None,
            "forecast_values": list(values), "forecaster_count": count, "interval_lower_bounds": lower,
            "centers": centers, "interval_upper_bounds": upper, "means": None, "histogram": None}  # fmt: skip


def _scaled(x: float, lo: float, hi: float, zero_point: float | None) -> float:
    """Metaculus' ``unscaled_location_to_scaled_location`` (utils/the_math/formulas.py)."""
    if zero_point is None:
        return lo + (hi - lo) * x
    ratio = (hi - zero_point) / (lo - zero_point)
    return lo + (hi - lo) * (ratio**x - 1) / (ratio - 1)


def metaculus_typed_question(
    qid: int,
    title: str,
    *,
    kind: str,
    resolution: str | None,
    resolve: datetime,
    created: datetime,
    early: list[float],
    final: list[float],
    options: list[str] | None = None,
    bounds: tuple[float, float] | None = None,
    open_bounds: tuple[bool, bool] = (False, False),
    zero_point: float | None = None,
    outcomes: int | None = None,
    unit: str = "",
    final_days: float = 2.0,
    forecasters: int = 40,
    label: str = "",
) -> dict[str, Any]:
    """A multiple-choice, numeric, discrete or date question as ``/api/posts/`` serializes it, with its
    full aggregation history (the server shows what each request may see). ``early`` is the community
    forecast from the opening until ``final_days`` before the resolution, ``final`` after.

    Kept whole: it spells one JSON document in the API's own field order, which reads best as one piece."""
    status = "resolved" if resolution is not None else "open"
    continuous = kind in ("numeric", "discrete", "date")
    count = (outcomes or 200) if continuous else None
    lo, hi = bounds or (None, None)
    scaling: dict[str, Any] = {"range_min": lo, "range_max": hi, "nominal_min": lo, "nominal_max": hi,
                               "zero_point": zero_point, "open_upper_bound": open_bounds[1] if continuous else None,
                               "open_lower_bound": open_bounds[0] if continuous else None,
                               "inbound_outcome_count": count, "continuous_range": None}  # fmt: skip
    if continuous:
        points = [_scaled(i / count, lo, hi, zero_point) for i in range(count + 1)]
        if kind == "date":
            scaling["continuous_range"] = [iso_utc(datetime.fromtimestamp(p, UTC)) for p in points]
        else:
            scaling["continuous_range"] = [round(p, 4) for p in points]
        if kind == "discrete":  # the nominal bounds are the middle of the first and last buckets
            scaling["nominal_min"], scaling["nominal_max"] = (points[0] + points[1]) / 2, (points[-2] + points[-1]) / 2
    switch = resolve - timedelta(days=final_days)
    question = {
        "id": qid,
        "title": title,
        "created_at": iso_utc(created - DAY),
        "open_time": iso_utc(created),
        "cp_reveal_time": iso_utc(created),
        "scheduled_resolve_time": iso_utc(resolve),
        "actual_resolve_time": iso_utc(resolve) if resolution is not None else None,
        "resolution_set_time": iso_utc(resolve) if resolution is not None else None,
        "scheduled_close_time": iso_utc(resolve - DAY),
        "actual_close_time": iso_utc(resolve - DAY),
        "type": kind,
        "options": options,
        "all_options_ever": options,
        "options_history": [["0001-01-01T00:00:00", options]] if options else None,
        "options_order": "DEFAULT",
        "group_variable": "",
        "status": status,
        "possibilities": {},
        "resolution": resolution,
        "include_bots_in_aggregates": False,
        "question_weight": 1.0,
        "default_score_type": "peer",
        "default_aggregation_method": "recency_weighted",
        "label": label,
        "unit": unit,
        "open_upper_bound": open_bounds[1] if continuous else None,
        "open_lower_bound": open_bounds[0] if continuous else None,
        "inbound_outcome_count": count,
        "scaling": scaling,
        "group_rank": None,
        "description": f"Background for {title}",
        "resolution_criteria": f"Resolves as reported for {title}",
        "fine_print": "",
        "post_id": None,
        "aggregations": {
            "recency_weighted": {
                "history": [_entry(created, switch, early, kind, forecasters // 2)],
                "latest": _entry(switch, None, final, kind, forecasters),
                "score_data": {},
                "movement": None,
            }
        },
    }
    return question


def metaculus_typed_post(pid: int, question: dict[str, Any], *, forecasters: int = 40) -> dict[str, Any]:
    """The ``/api/posts/`` result wrapping one typed question."""
    question = {**question, "post_id": pid}
    return {
        "id": pid, "title": question["title"], "short_title": "", "slug": f"post-{pid}", "author_id": 1,
        "author_username": "fixture", "coauthors": [], "projects": {}, "created_at": question["created_at"],
        "published_at": question["open_time"], "edited_at": question["created_at"], "curation_status": "approved",
        "comment_count": 0, "status": question["status"], "resolved": question["resolution"] is not None,
        "actual_close_time": question["actual_close_time"], "scheduled_close_time": question["scheduled_close_time"],
        "scheduled_resolve_time": question["scheduled_resolve_time"], "open_time": question["open_time"],
        "nr_forecasters": forecasters, "forecasts_count": 3 * forecasters, "question": question,
    }  # fmt: skip


def metaculus_group_post(pid: int, title: str, questions: list[dict[str, Any]]) -> dict[str, Any]:
    """A ``group_of_questions`` post (its sub-questions carry a ``label``)."""
    post = metaculus_typed_post(pid, {**questions[0], "title": title})
    del post["question"]
    resolved = all(q["resolution"] is not None for q in questions)
    post |= {"status": "resolved" if resolved else "open", "resolved": resolved}
    post["group_of_questions"] = {
        "id": pid, "description": f"Background for {title}", "resolution_criteria": "As each sub-question says.",
        "fine_print": "", "group_variable": "Outcome", "graph_type": "multiple_choice_graph",
        "questions": [{**q, "post_id": pid} for q in questions],
    }  # fmt: skip
    return post


# ------------------------------------------------------------------------------------ Manifold


def manifold_multi_market(
    mid: str,
    title: str,
    *,
    answers: list[str],
    probs: list[float],
    resolution: str | None,
    close: datetime,
    created: datetime,
    kind: str = "MULTIPLE_CHOICE",
    sum_to_one: bool = True,
    other: bool = False,
    midpoints: list[float] | None = None,
    volume: float = 800.0,
    traders: int = 20,
) -> dict[str, Any]:
    """A ``cpmm-multi-1`` market as ``/v0/market/{id}`` gives it (the listing shows its ``LiteMarket``
    part). ``resolution``: an answer's text (chosen), ``CHOOSE_MULTIPLE``, ``CANCEL`` or None. A
    resolved market's answers show their resolution weights as probabilities, as Manifold's do."""
    resolved_time = epoch_ms(close + timedelta(hours=3)) if resolution is not None else None
    chosen = answers.index(resolution) if resolution in answers else None
    weights = {0: 50, 1: 50} if resolution == "CHOOSE_MULTIPLE" else {}
    full_answers = []
    for i, (text, p) in enumerate(zip(answers, probs, strict=True)):
        answer: dict[str, Any] = {
            "id": f"{mid}-a{i}", "index": i, "contractId": mid, "userId": "creator1", "text": text,
            "createdTime": epoch_ms(created), "totalLiquidity": 50.0, "subsidyPool": 0.0,
            "volume": volume / len(answers),
            "probChanges": {"day": 0.0, "week": 0.0, "month": 0.0}, "probability": p,
            "pool": {"YES": 100.0, "NO": 100.0},
        }  # fmt: skip
        if other and i == len(answers) - 1:
            answer["isOther"] = True
        if midpoints is not None:
            answer["midpoint"] = midpoints[i]
        if resolution is not None:
            answer |= {"resolutionTime": resolved_time, "resolverId": "creator1", "resolutionProbability": p}
            if chosen is not None:
                answer["probability"] = 1.0 if i == chosen else 0.0
            elif resolution == "CHOOSE_MULTIPLE":
                answer["probability"] = weights.get(i, 0) / 100
        full_answers.append(answer)
    market: dict[str, Any] = {
        "id": mid, "creatorId": "creator1", "creatorUsername": "fixture", "creatorName": "Fixture",
        "createdTime": epoch_ms(created), "closeTime": epoch_ms(close), "question": title,
        "slug": title.lower().replace(" ", "-")[:40], "url": f"https://manifold.markets/fixture/{mid}",
        "outcomeType": kind, "mechanism": "cpmm-multi-1", "totalLiquidity": 150.0, "volume": volume,
        "volume24Hours": 0.0, "isResolved": resolution is not None, "uniqueBettorCount": traders,
        "lastUpdatedTime": epoch_ms(close), "token": "MANA", "answers": full_answers,
        "shouldAnswersSumToOne": sum_to_one, "addAnswersMode": "DISABLED" if kind != "MULTIPLE_CHOICE" else "ANYONE",
    }  # fmt: skip
    if resolution is not None:
        market |= {"resolutionTime": resolved_time, "resolverId": "creator1",
                   "resolution": f"{mid}-a{chosen}" if chosen is not None else resolution}  # fmt: skip
    return market


def manifold_pseudo_numeric(
    mid: str,
    title: str,
    *,
    low: float,
    high: float,
    log: bool,
    prob: float,
    resolution: str | None,
    close: datetime,
    created: datetime,
    volume: float = 600.0,
    traders: int = 15,
) -> dict[str, Any]:
    """A ``PSEUDO_NUMERIC`` market (``LiteMarket``): ``value`` is ``prob`` mapped onto [min, max] by
    Manifold's rule (docs/docs/api.md: ``(max - min + 1)^p + min - 1`` on a log scale, else linear);
    resolved ``MKT``, ``prob`` is the resolution's probability, so ``value`` is the resolved number."""
    value = (high - low + 1) ** prob + low - 1 if log else low + (high - low) * prob
    market: dict[str, Any] = {
        "id": mid, "creatorId": "creator1", "creatorUsername": "fixture", "creatorName": "Fixture",
        "createdTime": epoch_ms(created), "closeTime": epoch_ms(close), "question": title,
        "slug": title.lower().replace(" ", "-")[:40], "url": f"https://manifold.markets/fixture/{mid}",
        "outcomeType": "PSEUDO_NUMERIC", "mechanism": "cpmm-1", "probability": prob, "p": 0.5,
        "pool": {"YES": 100.0, "NO": 100.0}, "totalLiquidity": 100.0, "volume": volume, "volume24Hours": 0.0,
        "isResolved": resolution is not None, "uniqueBettorCount": traders, "lastUpdatedTime": epoch_ms(close),
        "value": round(value, 6), "min": low, "max": high, "isLogScale": log, "token": "MANA",
    }  # fmt: skip
    if resolution is not None:
        market |= {"resolution": resolution, "resolutionTime": epoch_ms(close + timedelta(hours=3)),
                   "resolutionProbability": prob}  # fmt: skip
    return market


#: The fields of a ``FullMarket`` that a ``LiteMarket`` (the listing) does not have.
FULL_ONLY = ("answers", "shouldAnswersSumToOne", "addAnswersMode", "description", "textDescription", "groupSlugs")


def lite_market(market: dict[str, Any], lite_answers: bool) -> dict[str, Any]:
    """The listing's view of a market: ``toLiteMarket`` (answers only with ``includeLiteAnswers``)."""
    lite = {k: v for k, v in market.items() if k not in FULL_ONLY}
    if lite_answers and market.get("mechanism") == "cpmm-multi-1":
        lite["answers"] = [{"id": a["id"], "text": a["text"], "probability": a["probability"]}
                           for a in market["answers"]]  # fmt: skip
    return lite


# ------------------------------------------------------------------------------------ Polymarket


def polymarket_event(
    eid: int,
    title: str,
    *,
    labels: list[str],
    yes_prices: list[str],
    closed: bool,
    end: datetime,
    created: datetime,
    neg_risk: bool = True,
    volume: float = 90000.0,
) -> dict[str, Any]:
    """A Gamma event with one binary market per outcome (``groupItemTitle`` the outcome's name, Yes
    price ``yes_prices[i]``; the last is the "Other" market when its label is "Other")."""
    markets = []
    for i, (label, price) in enumerate(zip(labels, yes_prices, strict=True)):
        mid = eid * 100 + i
        no_price = "0" if price == "1" else "1" if price == "0" else f"{1 - float(price):.4g}"
        markets.append({
            "id": str(mid), "question": f"Will {label} be the outcome of: {title}", "conditionId": f"0x{mid:064x}",
            "slug": f"event-{eid}-{label.lower().replace(' ', '-')}", "endDate": iso_utc(end),
            "startDate": iso_utc(created),
            "createdAt": created.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "description": f"Part of {title}",
            "outcomes": json.dumps(["Yes", "No"]), "outcomePrices": json.dumps([price, no_price]),
            "clobTokenIds": json.dumps([str(mid * 1000), str(mid * 1000 + 1)]), "volume": str(volume / len(labels)),
            "volumeNum": volume / len(labels), "liquidityNum": 0.0, "active": True, "closed": closed,
            "closedTime": (end + timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S+00") if closed else None,
            "umaResolutionStatus": "resolved" if closed else None, "groupItemTitle": label, "negRisk": neg_risk,
            "negRiskOther": label == "Other", "enableOrderBook": True,
        })  # fmt: skip
    return {
        "id": str(eid), "ticker": f"event-{eid}", "slug": f"event-{eid}", "title": title,
        "description": f"This event resolves to the outcome of {title}", "resolutionSource": "",
        "startDate": iso_utc(created), "creationDate": iso_utc(created), "endDate": iso_utc(end),
        "createdAt": created.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "active": True, "closed": closed, "archived": False,
        "volume": volume, "liquidity": 0.0, "negRisk": neg_risk, "enableNegRisk": neg_risk,
        "negRiskAugmented": False, "closedTime": (end + timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S+00")
        if closed else None, "markets": markets,
    }  # fmt: skip
