"""Scrape questions (binary, multiple-choice, numeric, date) from a forecasting platform into a questions JSONL.

The driver pages through a source's listing (offset pagination, the next page fetched while the
current one is parsed), turns each item into a :class:`ForecastingQuestion` or a skip reason,
applies the filters every source shares (resolution window, creation date, minimum duration),
and appends kept questions to the output at once, de-duplicated by source id. Its position is
saved (about once a second) in ``<out>.scrape.json`` so ``resume`` carries on where a run stopped;
pages that cannot be used are recorded there with their URL and reason and skipped.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, field_validator

from ..errors import InputError
from ..jsonl import AppendLog, parse_json, write_json
from ..models import ForecastingQuestion
from ..paths import cache_dir
from ..store.layout import scrape_state_file
from .http import FatalHTTPError, FetchError, HttpSettings, MalformedPage, PageCache, WebClient, full_url

log = logging.getLogger(__name__)

#: Namespace of scraped questions' ids: the same source question always gets the same id.
NAMESPACE = uuid.UUID("6b1f3c52-9d0e-4a7b-8f41-3e2d5c7a9b10")

Status = Literal["resolved", "open", "all"]
ScrapedType = Literal["binary", "multiple_choice", "numeric", "date"]
#: Every type a scrape can keep, in the order ``--types`` lists them.
ALL_TYPES: tuple[ScrapedType, ...] = ("binary", "multiple_choice", "numeric", "date")
#: Questions of a page completed (detail requests) before they are written: an interrupted run keeps them.
COMPLETE_BATCH = 50


class ScrapeOptions(BaseModel):
    """What to keep. Dates are inclusive days in UTC."""

    status: Status = "resolved"
    resolved_after: date | None = None
    resolved_before: date | None = None
    created_after: date | None = None
    min_forecasters: int | None = None
    min_volume: float | None = None
    min_traders: int | None = None
    search: str | None = None
    #: Metaculus only: a tournament's (or question series') id or slug, as in its page's URL
    tournament: str | None = None
    min_days: float = 3.0  # questions resolving sooner than this after creation are dropped (as the paper did)
    #: a closed question's ``market_prob`` (a binary one's) or ``crowd_forecast`` (a multiple-choice or
    #: numeric one's) is the crowd's forecast this many days before it closed or resolved (whichever came
    #: first), read from the source's history; 0: none (for a binary question, ``final_prob`` only)
    market_lead_days: float = 7.0
    #: the question types kept (a platform's discrete questions are numeric ones)
    types: tuple[ScrapedType, ...] = ALL_TYPES

    @field_validator("types", mode="after")
    @classmethod
    def _known_order(cls, value: tuple[ScrapedType, ...]) -> tuple[ScrapedType, ...]:
        if not value:
            raise ValueError("choose at least one question type")
        return tuple(t for t in ALL_TYPES if t in value)  # one order, so equal selections resume alike


class Skip(str):
    """Why an item was not kept (a short, countable reason)."""


class Source(Protocol):
    name: str
    default_base_url: str
    default_rpm: float

    def check(self, opts: ScrapeOptions) -> None:
        """Raise ValueError (one sentence) for options this source cannot honour."""

    def headers(self) -> dict[str, str]: ...

    def queries(self, opts: ScrapeOptions) -> list[dict[str, Any]]:
        """The listing passes to make (most sources: one)."""

    def page(self, base_url: str, query: dict[str, Any], offset: int) -> tuple[str, dict[str, Any]]: ...

    def parse_page(self, data: Any) -> tuple[list[dict[str, Any]], bool]:
        """The page's items and whether more pages follow; raise ValueError when it is not a page.

        A source with ``keyset = True`` pages by cursor instead of offset: ``page`` gets 0 for the
        first page, then the cursor ``parse_page`` returned in place of the bool (None at the end)."""

    # optional: ``past_window(items, opts) -> bool``, true when the listing (sorted by resolution,
    # newest first) has left the --resolved-after window, so the rest need not be fetched

    def question(
        self, item: dict[str, Any], opts: ScrapeOptions, now: datetime
    ) -> ForecastingQuestion | Skip | list[ForecastingQuestion | Skip]:
        """The item's question (a list for an item holding several, e.g. a Metaculus group post)."""

    async def complete(self, q: ForecastingQuestion, web: WebClient, base_url: str) -> ForecastingQuestion | Skip:
        """Anything the listing lacks (e.g. a description from a detail page)."""


def list_page(data: Any) -> tuple[list[dict[str, Any]], bool]:
    """A page that is a bare JSON list of items (Manifold, Polymarket): more follow until it is empty."""
    if not isinstance(data, list):
        raise ValueError("expected a list of markets")
    return [m for m in data if isinstance(m, dict)], bool(data)


def question_id(source: str, source_id: str) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{source}:{source_id}"))


def join_body(*parts: tuple[str, str | None]) -> str:
    """Body text from labelled parts (label '' for none), empty parts left out."""
    out = []
    for label, text in parts:
        text = (text or "").strip()
        if text:
            out.append(f"{label}: {text}" if label else text)
    return "\n\n".join(out)


def market_probability(open_now: bool, prob: Any) -> dict[str, Any]:
    """The market or community probability as metadata. It is ``market_prob`` only while the
    question is open: once closed or resolved it has moved towards the answer (the paper's
    scraped set leaked it this way), so it is kept as ``final_prob`` instead."""
    try:
        value = float(prob)
    except (TypeError, ValueError):
        return {}
    if not 0.0 <= value <= 1.0:
        return {}
    return {"market_prob": value} if open_now else {"final_prob": value}


def market_cutoff(opts: ScrapeOptions, *times: datetime | None) -> datetime | None:
    """When a closed question's leak-free ``market_prob`` is read: ``market_lead_days`` before the
    earliest of its close and resolution times (None when the option is 0 or no time is known)."""
    known = [t for t in times if t is not None]
    if opts.market_lead_days <= 0 or not known:
        return None
    return min(known) - timedelta(days=opts.market_lead_days)


def market_before_close(prob: Any, at: datetime) -> dict[str, Any]:
    """``market_prob`` as read before the close (with when), or nothing when it is not a probability."""
    found = market_probability(True, prob)
    return found | {"market_prob_at": at.isoformat()} if found else {}


@dataclass
class BadPage:
    url: str
    reason: str
    #: the listing page (query index, offset) it came from: ``resume`` reads from there again
    position: tuple[int, int] | None = None


@dataclass
class ScrapeReport:
    source: str
    path: Path
    written: int = 0
    already: int = 0  # in the output from an earlier run
    skipped: Counter = field(default_factory=Counter)
    pages: int = 0
    bad_pages: list[BadPage] = field(default_factory=list)
    requests: int = 0
    retries: int = 0
    cache_hits: int = 0
    finished: bool = False  # reached the end of the listing (not stopped by -n)

    @property
    def state_path(self) -> Path:
        return state_path_for(self.path)


def state_path_for(path: Path) -> Path:
    return scrape_state_file(path)


def _fingerprint(source: str, base_url: str, opts: ScrapeOptions) -> str:
    text = json.dumps([source, base_url, opts.model_dump(mode="json")], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _shared_filter(q: ForecastingQuestion, opts: ScrapeOptions) -> Skip | None:
    if q.question_type not in opts.types:
        return Skip(f"{q.question_type} not selected (--types)")
    if opts.status == "resolved" and q.resolution is None:
        return Skip("not resolved")
    if opts.status == "open" and q.resolution is not None:
        return Skip("already resolved")
    when = q.resolution_date.date() if q.resolution_date else None
    if (opts.resolved_after or opts.resolved_before) and when is None:
        return Skip("no resolution date")
    if opts.resolved_after and when < opts.resolved_after:
        return Skip("resolution date before the window")
    if opts.resolved_before and when > opts.resolved_before:
        return Skip("resolution date after the window")
    if opts.created_after and (q.created_date is None or q.created_date.date() < opts.created_after):
        return Skip("created before --created-after")
    if q.created_date and q.resolution_date and q.resolution_date - q.created_date < timedelta(days=opts.min_days):
        return Skip(f"resolves within {opts.min_days:g} days of creation")
    return None


async def scrape(
    source: Source,
    out: str | Path,
    opts: ScrapeOptions,
    *,
    n: int | None = None,
    base_url: str | None = None,
    http: HttpSettings | None = None,
    cache_root: str | Path | None = None,
    resume: bool = False,
    on_page: Callable[[ScrapeReport], None] | None = None,
    now: datetime | None = None,
) -> ScrapeReport:
    """Append up to ``n`` new questions (all, when None) from ``source`` to ``out``.

    ``now`` (default: the clock) decides which questions are still open, and is recorded as
    ``scraped_at``. Raises :class:`FatalHTTPError` for answers no retry can change (e.g. a missing token) and
    ValueError for options the source cannot honour; pages that fail otherwise are recorded in
    the report and skipped, and everything written before stays written.
    """
    source.check(opts)
    base = (base_url or source.default_base_url).rstrip("/")
    http = http or HttpSettings(requests_per_minute=source.default_rpm)
    root = Path(cache_root) if cache_root else cache_dir() / "pages"
    report = ScrapeReport(source.name, Path(out))
    fingerprint = _fingerprint(source.name, base, opts)
    position = _resumed_position(report, fingerprint) if resume and report.state_path.exists() else (0, 0)
    queries = source.queries(opts)
    async with WebClient(source.name, http, PageCache(root / source.name), source.headers()) as web:
        with AppendLog(report.path) as log_out:
            run = _Scrape(source, opts, base, fingerprint, queries, n, now or datetime.now(UTC), report, web, log_out)
            run.query_index, run.offset = position
            await run.consume(on_page)
    report.requests, report.retries, report.cache_hits = web.stats.requests, web.stats.retries, web.stats.cache_hits
    return report


def _resumed_position(report: ScrapeReport, fingerprint: str) -> tuple[int, Any]:
    """Where a resumed scrape reads on (query index, offset or cursor), from its saved state; the bad pages
    without a position are kept in ``report``, those with one are read again (the listing from the first on)."""
    try:
        state = parse_json(report.state_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(
            f"{report.state_path}: not a scrape position ({exc}); delete it to start over (written questions stay)"
        ) from None
    if not isinstance(state, dict) or state.get("fingerprint") != fingerprint:
        raise InputError(
            f"{report.state_path} was written by a scrape with other options or source; "
            "rerun without --resume or with the same options"
        )
    query_index, offset = state["query_index"], state["offset"]
    bad = [BadPage(**b) for b in state.get("bad_pages", [])]
    # unusable pages are tried again: the listing is read from the first of them on (pages read
    # before come from the page cache, questions written before count as already there)
    again = [tuple(b.position) for b in bad if b.position is not None]
    report.bad_pages = [b for b in bad if b.position is None]
    if again:  # recorded in listing order; cursors (keyset sources) cannot be compared
        ints = all(isinstance(o, int) for _, o in again) and isinstance(offset, int)
        query_index, offset = min([(query_index, offset), *again]) if ints else again[0]
    return query_index, offset


#: What a producer hands the consumer per listing page: the page (or why it is unusable), its items, its
#: position and the position after it; then None at the end, or the fatal error that stopped it.
_Entry = tuple[Any, list[dict[str, Any]], tuple[int, Any], tuple[int, Any]]


@dataclass
class _Scrape:
    """One scrape under way: the listing read page by page (:meth:`produce` or :meth:`produce_keyset`, ahead of
    the parsing), each page's items made into questions and filtered (:meth:`candidates`), completed and
    written (:meth:`write`), and the position saved (:meth:`save`) as :meth:`consume` goes."""

    source: Source
    opts: ScrapeOptions
    base: str
    fingerprint: str
    queries: list[Any]
    n: int | None
    now: datetime
    report: ScrapeReport
    web: WebClient
    out: AppendLog
    query_index: int = 0
    offset: Any = 0  # a listing offset, or a keyset source's cursor
    seen: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.seen = {str(obj.get("id")) for obj in self.out.existing}

    def save(self, done: bool) -> None:
        write_json(
            self.report.state_path,
            {
                "source": self.source.name,
                "base_url": self.base,
                "options": self.opts.model_dump(mode="json"),
                "fingerprint": self.fingerprint,
                "query_index": self.query_index,
                "offset": self.offset,
                "finished": done,
                "bad_pages": [b.__dict__ for b in self.report.bad_pages],
            },
        )

    async def fetch(self, qi: int, off: Any) -> tuple[list[dict[str, Any]], Any] | BadPage:
        """A listing page parsed into (items, what follows), or why it cannot be used."""
        url, params = self.source.page(self.base, self.queries[qi], off)
        try:
            data = await self.web.get_json(url, params)
            return self.source.parse_page(data)
        except FatalHTTPError as exc:
            hint = getattr(self.source, "auth_hint", None)
            if exc.status in (401, 403) and hint is not None:
                raise FatalHTTPError(exc.url, f"{hint()} (HTTP {exc.status})", exc.status) from None
            raise
        except FetchError as exc:
            return BadPage(exc.url, exc.reason, (qi, off))
        except (ValueError, KeyError, TypeError) as exc:
            return BadPage(full_url(url, params), f"not a {self.source.name} page: {exc}", (qi, off))

    async def complete(self, q: ForecastingQuestion, here: tuple[int, Any]) -> ForecastingQuestion | Skip:
        """The question with what its detail page adds, or why it is skipped (an unusable page is recorded)."""
        try:
            return await self.source.complete(q, self.web, self.base)
        except MalformedPage as exc:
            self.report.bad_pages.append(BadPage(exc.url, exc.reason, here))
            return Skip("detail page unusable")
        except FatalHTTPError as exc:
            if exc.status in (404, 410):  # this one item is gone (401/403 would concern them all)
                log.info("%s: skipped %s (HTTP %s)", self.source.name, exc.url, exc.status)
                return Skip(f"detail page not found (HTTP {exc.status})")
            raise
        except FetchError as exc:
            self.report.bad_pages.append(BadPage(exc.url, exc.reason, here))
            return Skip("detail page unavailable")

    def _past_window(self, items: list[dict[str, Any]]) -> bool:
        past = getattr(self.source, "past_window", None)
        return bool(past and past(items, self.opts))

    async def produce_keyset(self, queue: asyncio.Queue) -> None:
        """Cursor pages come one after the other (each names the next); an unusable one ends
        the scrape there, position kept, since the pages after it cannot be reached."""
        qi, cursor = self.query_index, self.offset
        try:
            while qi < len(self.queries):
                result = await self.fetch(qi, cursor)
                if isinstance(result, BadPage):
                    await queue.put((result, [], (qi, cursor), (qi, cursor)))
                    break
                items, after = result
                more = bool(after) and bool(items) and not self._past_window(items)
                await queue.put((result, items, (qi, cursor), (qi, after) if more else (qi + 1, 0)))
                qi, cursor = (qi, after) if more else (qi + 1, 0)
            await queue.put(None)
        except Exception as exc:  # a fatal answer: handed to the consumer, which raises it
            await queue.put(exc)

    async def produce(self, queue: asyncio.Queue, concurrency: int) -> None:
        """Offset pages: once the page size is known, up to ``concurrency`` pages (consecutive offsets) are
        in flight at once; a short page re-synchronises, an unusable one is stepped over by the page size."""
        qi, off = self.query_index, self.offset
        try:
            while qi < len(self.queries):
                step, ahead, inflight = 0, off, deque()
                while True:
                    while not inflight or (step and len(inflight) < concurrency):
                        inflight.append((ahead, asyncio.ensure_future(self.fetch(qi, ahead))))
                        ahead += step
                    here, task = inflight.popleft()
                    result = await task
                    if isinstance(result, BadPage):
                        items, more, size = [], step > 0, step  # step over it by the page size
                    else:
                        items, more = result
                        size = len(items)
                        more = more and size > 0 and not self._past_window(items)
                    if more and size != step:  # first page, or a short one: re-synchronise
                        for _, t in inflight:
                            t.cancel()
                        inflight.clear()
                        step, ahead = size, here + size
                    await queue.put((result, items, (qi, here), (qi, here + size) if more else (qi + 1, 0)))
                    if not more:
                        for _, t in inflight:
                            t.cancel()
                        break
                qi, off = qi + 1, 0
            await queue.put(None)
        except Exception as exc:  # a fatal answer: handed to the consumer, which raises it
            await queue.put(exc)

    def candidates(self, items: list[dict[str, Any]]) -> list[ForecastingQuestion]:
        """A page's items as questions that pass the filters and are not in the output yet (skips counted)."""
        found = []
        for item in items:
            try:
                made = self.source.question(item, self.opts, self.now)
            except (ValueError, KeyError, TypeError) as exc:
                made = Skip(f"malformed item ({type(exc).__name__})")
                log.info("%s: malformed item at offset %s: %s", self.source.name, self.offset, exc)
            for q in made if isinstance(made, list) else [made]:
                if not isinstance(q, Skip):
                    q = _shared_filter(q, self.opts) or q
                if isinstance(q, Skip):
                    self.report.skipped[str(q)] += 1
                elif q.id in self.seen:
                    self.report.already += 1
                else:
                    self.seen.add(q.id)
                    found.append(q)
        return found

    async def write(self, candidates: list[ForecastingQuestion], here: tuple[int, Any]) -> None:
        """Complete (e.g. a detail page each) no more than ``n`` still needs, a batch at a time so a long page
        is written as it goes; a failed one makes room for the next candidate."""
        report = self.report
        while candidates and (self.n is None or report.written < self.n):
            batch = COMPLETE_BATCH if self.n is None else min(COMPLETE_BATCH, self.n - report.written)
            take, candidates = candidates[:batch], candidates[batch:]
            kept = []
            for q in await asyncio.gather(*(self.complete(q, here) for q in take)):
                if isinstance(q, Skip):
                    report.skipped[str(q)] += 1
                else:
                    kept.append(q)
            self.out.extend(kept)
            report.written += len(kept)

    async def consume(self, on_page: Callable[[ScrapeReport], None] | None) -> None:
        """Read the pages the producer hands over until the listing ends or ``n`` questions are written."""
        report = self.report
        queue: asyncio.Queue = asyncio.Queue(maxsize=max(1, self.web.settings.concurrency))
        keyset = getattr(self.source, "keyset", False)
        producer = asyncio.ensure_future(
            self.produce_keyset(queue) if keyset else self.produce(queue, self.web.settings.concurrency)
        )
        saved_at = time.monotonic()
        full = False
        try:
            while (entry := await queue.get()) is not None:
                if isinstance(entry, Exception):
                    raise entry
                result, items, page_pos, next_pos = entry
                report.pages += 1
                if isinstance(result, BadPage):
                    report.bad_pages.append(result)
                    log.info("%s: skipped page %s (%s)", self.source.name, result.url, result.reason)
                await self.write(self.candidates(items), page_pos)
                full = self.n is not None and report.written >= self.n
                if not full:
                    self.query_index, self.offset = next_pos
                report.finished = not full and self.query_index >= len(self.queries)
                # the position is saved about once a second (re-reading a page on resume is harmless)
                if full or report.finished or time.monotonic() - saved_at > 1.0:
                    self.save(report.finished)
                    saved_at = time.monotonic()
                if on_page:
                    on_page(report)
                if full:
                    break
            # the listing ended (or stopped at an unusable cursor page): the position is saved either
            # way, bad pages included, and a scrape resumed after its end is finished, not "more remain"
            report.finished = not full and self.query_index >= len(self.queries)
            self.save(report.finished)
        finally:
            producer.cancel()
            await asyncio.gather(producer, return_exceptions=True)


def ms_datetime(value: Any) -> datetime | None:
    """A UTC datetime from milliseconds since the epoch (Manifold's timestamps)."""
    if value is None:
        return None
    return datetime.fromtimestamp(float(value) / 1000.0, tz=UTC)


def iso_datetime(value: Any) -> datetime | None:
    """A UTC datetime from ISO 8601 text (``Z`` or an offset; ``+00`` too, as Polymarket writes it)."""
    if not value:
        return None
    text = str(value).strip().replace("Z", "+00:00")
    if len(text) >= 3 and text[-3] in "+-" and text[-3:].lstrip("+-").isdigit():
        text += ":00"
    parsed = datetime.fromisoformat(text)
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
