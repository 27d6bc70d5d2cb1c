"""Metaculus: ``GET /api/posts/`` (token in ``Authorization: Token ...``).

A post wraps one question (``post["question"]``) or a group of them (``post["group_of_questions"]``,
each sub-question kept as a question of its own); conditional and notebook posts are skipped. A post id
is not its question id: a single question's source id is the post id (the page URL's number).

Question types (the site's ``questions/models.py``): ``binary`` (resolutions ``yes``/``no``),
``multiple_choice`` (``options``; the resolution is an option's label, "Other" included),
``numeric`` and ``discrete`` (kept as numeric; the resolution is a number as text, or
``below_lower_bound``/``above_upper_bound``) and ``date`` (an ISO time; bounds in POSIX seconds).
Bounds come from ``scaling`` (``range_min``, ``range_max``, ``open_lower_bound``,
``open_upper_bound``; a ``zero_point`` means a log scale). ``annulled`` and ``ambiguous`` are skipped.

The community forecast is ``aggregations.recency_weighted``: ``latest.forecast_values`` is the whole
distribution (a probability per option, aligned with ``all_options_ever``; a CDF at
``inbound_outcome_count + 1`` points for a continuous question), and the history (asked for with
``include_cp_history=true``) has each earlier aggregate's ``centers`` only: the probabilities for a
multiple-choice question, the median for a continuous one. A closed continuous question's CDF before
its close therefore comes from ``/api/aggregation_explorer/`` (one request each).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from ..errors import InputError
from ..llm.secrets import optional_key
from ..models import ForecastingQuestion
from .http import FatalHTTPError, MalformedPage, WebClient, full_url
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
from .typed import OUT_OF_BOUNDS, build_question, cdf_crowd, choice_crowd, numeric_range

log = logging.getLogger(__name__)

TOKEN_VARIABLE = "METACULUS_TOKEN"
_RESOLUTIONS = {"yes": True, "no": False}
#: Metaculus' question types, as ours (a discrete question is numeric on a grid of whole buckets).
_KINDS = {"binary": "binary", "multiple_choice": "multiple_choice", "numeric": "numeric", "discrete": "numeric",
          "date": "date"}  # fmt: skip
#: Metadata a closed continuous question carries from the listing to ``complete`` (never written).
_PENDING = "_crowd_pending"


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
        # forecast_type takes a comma-separated list (posts/serializers.py, validate_forecast_type)
        kinds = [kind for kind, ours in _KINDS.items() if ours in opts.types]
        query: dict[str, Any] = {
            "forecast_type": ",".join([*kinds, "group_of_questions"]),
            "order_by": "-scheduled_resolve_time",
            "with_cp": "true",
            "include_cp_history": "true",  # without it the history holds the latest aggregate only
            "include_descriptions": "true",
            "search": opts.search,
        }
        if opts.tournament:  # one project's posts: its id or slug (the API takes either)
            query["tournaments"] = opts.tournament
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

    def question(
        self, post: dict[str, Any], opts: ScrapeOptions, now: datetime
    ) -> ForecastingQuestion | Skip | list[ForecastingQuestion | Skip]:
        for kind in ("conditional", "notebook"):
            if post.get(kind):
                return Skip(f"not a single question ({kind})")
        group = post.get("group_of_questions")
        if isinstance(group, dict):
            subs = [q for q in group.get("questions") or [] if isinstance(q, dict)]
            return [self._one(post, q, opts, now, group) for q in subs] or Skip("an empty group")
        q = post.get("question")
        if not isinstance(q, dict):
            return Skip("not a single question")
        return self._one(post, q, opts, now, None)

    def _one(  # noqa: C901
        self, post: dict[str, Any], q: dict[str, Any], opts: ScrapeOptions, now: datetime, group: dict | None
    ) -> ForecastingQuestion | Skip:
        """One Metaculus question, or the reason it is skipped.

        Kept whole: one branch per skip reason and question type, in the order the API's fields are checked.
        """
        kind = _KINDS.get(str(q.get("type")))
        if kind is None:
            return Skip(f"unsupported type ({q.get('type')})")
        if kind not in opts.types:
            return Skip(f"{kind} not selected (--types)")
        raw = q.get("resolution")
        if raw in ("annulled", "ambiguous"):
            return Skip(str(raw))
        forecasters = post.get("nr_forecasters") or 0
        if opts.min_forecasters is not None and forecasters < opts.min_forecasters:
            return Skip("too few forecasters")
        post_id = str(post["id"])
        source_key = post_id if group is None else f"{post_id}/{q.get('id')}"
        close_text = q.get("scheduled_close_time") or post.get("scheduled_close_time")
        close = iso_datetime(close_text)
        open_now = raw is None and (close is None or close > now)
        ended = (iso_datetime(q.get(k)) for k in ("actual_close_time", "actual_resolve_time"))
        cutoff = None if open_now else market_cutoff(opts, close, *ended)
        aggregation = (q.get("aggregations") or {}).get("recency_weighted") or {}
        metadata: dict[str, Any] = {
            "source_id": post_id,
            "question_id": q.get("id"),
            "forecasters": forecasters,
            "forecasts": post.get("forecasts_count"),
            "close_time": close_text,
            "actual_resolve_time": q.get("actual_resolve_time"),
            "scraped_at": now.isoformat(),
        }
        if group is not None and q.get("label"):
            metadata["group_label"] = q["label"]
        fields: dict[str, Any] = {"question_type": kind}
        if kind == "binary":
            if raw is not None and str(raw).lower() not in _RESOLUTIONS:
                return Skip(f"unknown resolution {raw!r}")
            latest = aggregation.get("latest") or {}
            metadata |= market_probability(open_now, (latest.get("centers") or [None])[0])
            if cutoff is not None:  # the final value has moved towards the answer: the one before the close
                metadata |= market_before_close((_entry_at(aggregation, cutoff).get("centers") or [None])[0], cutoff)
            fields["resolution"] = _RESOLUTIONS.get(str(raw).lower()) if raw is not None else None
        elif kind == "multiple_choice":
            made = _choice(q, raw, aggregation, now if open_now else cutoff)
            if isinstance(made, Skip):
                return made
            fields |= made[0]
            metadata |= made[1]
        else:
            made = _continuous(q, kind, raw)
            if isinstance(made, Skip):
                return made
            fields |= made
            if q.get("type") == "discrete":
                metadata["discrete_outcomes"] = q.get("inbound_outcome_count")
            when = now if open_now else cutoff
            entry = aggregation.get("latest") if open_now else _entry_at(aggregation, cutoff) if cutoff else {}
            if when is not None and entry and entry.get("forecast_values"):
                metadata |= cdf_crowd(entry["forecast_values"], when)
            elif cutoff is not None and entry:  # a history entry has no CDF: the aggregation explorer has it
                metadata[_PENDING] = cutoff.isoformat()
        title = (q.get("title") or post.get("title") or "").strip()
        if group is not None and q.get("label") and str(q["label"]) not in title:
            title = f"{(post.get('title') or title).strip()} ({q['label']})"
        holder = group or {}
        return build_question(
            id=question_id(self.name, source_key),
            title=title,
            body=join_body(
                ("", q.get("description") or holder.get("description")),
                ("Resolution criteria", q.get("resolution_criteria") or holder.get("resolution_criteria")),
                ("Fine print", q.get("fine_print") or holder.get("fine_print")),
            ),
            resolution_date=iso_datetime(q.get("scheduled_resolve_time") or post.get("scheduled_resolve_time")),
            created_date=iso_datetime(q.get("open_time") or post.get("published_at") or post.get("created_at")),
            data_source=self.name,
            url=f"https://www.metaculus.com/questions/{post_id}/",
            metadata=metadata,
            **fields,
        )

    async def complete(self, q: ForecastingQuestion, web: WebClient, base_url: str) -> ForecastingQuestion | Skip:
        at = q.metadata.pop(_PENDING, None)
        if at is None:
            return q
        # the aggregation explorer (utils/views.py) serves the history with each aggregate's forecast_values
        url = f"{base_url}/aggregation_explorer/"
        params = {"question_id": q.metadata["question_id"], "aggregation_methods": "recency_weighted"}
        try:
            data = await web.get_json(url, params)
        except FatalHTTPError as exc:  # e.g. an access tier without aggregation data: the question stays
            if exc.status in (401, 403, 404, 400):
                log.info("metaculus: no community forecast for %s (%s)", q.metadata["source_id"], exc.reason)
                q.metadata["crowd_forecast_missing"] = f"aggregation explorer: HTTP {exc.status}"
                return q
            raise
        if not isinstance(data, dict) or not isinstance(data.get("aggregations", {}), dict):
            raise MalformedPage(full_url(url, params), "expected the question and its aggregations")
        aggregation = data.get("aggregations", {}).get("recency_weighted") or {}
        cutoff = datetime.fromisoformat(at)
        found = cdf_crowd(_entry_at(aggregation, cutoff).get("forecast_values"), cutoff)
        q.metadata |= found or {"crowd_forecast_missing": "aggregation explorer: no forecast before the cut-off"}
        return q


def _entry_at(aggregation: dict[str, Any], moment: datetime) -> dict[str, Any]:
    """The community aggregate in force at ``moment``: the entry that began last before it ({} if none)."""
    when = moment.timestamp()
    entries = [*(aggregation.get("history") or []), aggregation.get("latest") or {}]
    began = [e for e in entries if isinstance(e, dict) and isinstance(e.get("start_time"), int | float)]
    before = [e for e in began if e["start_time"] <= when]
    if not before:
        return {}
    latest = max(before, key=lambda e: e["start_time"])
    # the history repeats the latest entry without its values: prefer the entry that has them
    full = [e for e in before if e["start_time"] == latest["start_time"] and e.get("forecast_values")]
    return full[0] if full else latest


def _choice(
    q: dict[str, Any], raw: Any, aggregation: dict[str, Any], when: datetime | None
) -> tuple[dict[str, Any], dict[str, Any]] | Skip:
    """A multiple-choice question's fields and crowd metadata (the forecast vector follows
    ``all_options_ever``, with null for options no longer offered)."""
    options = q.get("options")
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        return Skip("multiple choice without options")
    if raw is not None and raw not in options:
        ever = q.get("all_options_ever") or []
        return Skip("resolved to a withdrawn option" if raw in ever else f"unknown resolution {raw!r}")
    metadata: dict[str, Any] = {}
    entry = {} if when is None else _entry_at(aggregation, when)
    values = entry.get("forecast_values") or entry.get("centers")  # the history's centers are the probabilities
    if isinstance(values, list):
        ever = q.get("all_options_ever") or options
        by_label = dict(zip(ever, values, strict=False)) if len(values) == len(ever) else {}
        probs = [by_label.get(o) for o in options]
        if by_label and None not in probs:
            metadata |= choice_crowd(probs, when)
    return {"options": options, "resolution": raw}, metadata


def _continuous(q: dict[str, Any], kind: str, raw: Any) -> dict[str, Any] | Skip:
    """A numeric or date question's range and resolution (a date's as POSIX seconds)."""
    scaling = q.get("scaling") or {}
    lower, upper = scaling.get("range_min"), scaling.get("range_max")
    if not isinstance(lower, int | float) or not isinstance(upper, int | float):
        return Skip(f"{kind} without bounds")
    span = numeric_range(
        lower,
        upper,
        open_lower=bool(scaling.get("open_lower_bound", q.get("open_lower_bound"))),
        open_upper=bool(scaling.get("open_upper_bound", q.get("open_upper_bound"))),
        zero_point=scaling.get("zero_point"),
        unit="date" if kind == "date" else q.get("unit") or None,
    )
    if isinstance(span, Skip):
        return span
    resolution: Any = None
    if raw in OUT_OF_BOUNDS:
        resolution = raw
    elif raw is not None:
        try:
            resolution = iso_datetime(raw).timestamp() if kind == "date" else float(raw)
        except (TypeError, ValueError):
            return Skip(f"unknown resolution {raw!r}")
    return {"range": span, "resolution": resolution}
