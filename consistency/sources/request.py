"""A platform scrape as the command line states it (``cc questions scrape``): the source by name, what to keep
as text and numbers (:class:`ScrapeFilters`), the HTTP politeness (:class:`ScrapePoliteness`); checked here so
that a Python caller holding the same strings gets the same one-sentence errors before any request. The
documented fields and parameters are the command's options. Light to import (``--help`` reads it)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from annotated_doc import Doc
from annotated_types import Ge, Gt

from ..errors import InputError

if TYPE_CHECKING:
    from .http import HttpSettings
    from .scraper import ScrapeOptions, ScrapeReport


@dataclass(frozen=True)
class ScrapeFilters:
    """What a scrape keeps, as text and numbers (the command's filter options); :meth:`options` checks it into
    a :class:`~.scraper.ScrapeOptions` (one sentence naming the option when a value is wrong)."""

    status: Annotated[str, Doc("resolved, open or all.")] = "resolved"
    types: Annotated[
        str, Doc("Question types kept, comma-separated: binary, multiple_choice, numeric, date (or all).")
    ] = "all"
    resolved_after: Annotated[str | None, Doc("Earliest resolution date kept (YYYY-MM-DD).")] = None
    resolved_before: Annotated[str | None, Doc("Latest resolution date kept (YYYY-MM-DD).")] = None
    created_after: Annotated[str | None, Doc("Earliest creation date kept (YYYY-MM-DD).")] = None
    min_forecasters: Annotated[int | None, Ge(0), Doc("Metaculus: fewest forecasters kept.")] = None
    min_volume: Annotated[float | None, Ge(0), Doc("Manifold/Polymarket: least traded volume kept.")] = None
    min_traders: Annotated[int | None, Ge(0), Doc("Manifold: fewest distinct traders kept.")] = None
    search: Annotated[str | None, Doc("Only questions matching this text.")] = None
    tournament: Annotated[
        str | None, Doc("Metaculus: only this tournament's questions (its id or slug, as in its page's URL).")
    ] = None
    min_days: Annotated[float, Ge(0), Doc("Drop questions resolving sooner than this after creation.")] = 3.0
    market_lead_days: Annotated[
        float,
        Ge(0),
        Doc(
            "Closed questions: the crowd forecast kept (market_prob, crowd_forecast) is the one this many days "
            "before closing (0: none)."
        ),
    ] = 7.0

    def chosen_types(self) -> tuple[str, ...]:
        """The question types kept, checked."""
        from .scraper import ALL_TYPES

        chosen = [t.strip() for t in self.types.split(",") if t.strip()]
        chosen = list(ALL_TYPES) if chosen == ["all"] else chosen
        if [t for t in chosen if t not in ALL_TYPES] or not chosen:
            raise InputError(f"--types takes {', '.join(ALL_TYPES)} or all, got {self.types!r}")
        return tuple(chosen)

    def options(self) -> ScrapeOptions:
        """The filters checked: known types and status, dates that are dates."""
        from ..questions.making import day
        from .scraper import ScrapeOptions

        chosen = self.chosen_types()
        if self.status not in ("resolved", "open", "all"):
            raise InputError(f"--status must be resolved, open or all, got {self.status!r}")
        dates = ("resolved_after", "resolved_before", "created_after")
        when = {name: day(getattr(self, name), "--" + name.replace("_", "-")) for name in dates}
        kept = {k: v for k, v in dataclasses.asdict(self).items() if k not in ("status", "types", *dates)}
        return ScrapeOptions(status=self.status, types=chosen, **when, **kept)


@dataclass(frozen=True)
class ScrapePoliteness:
    """How a source is fetched (the command's HTTP options; none of it changes what is scraped): :meth:`settings`
    makes the :class:`~.http.HttpSettings`, ``rpm`` None meaning the source's polite rate and 0 no limit."""

    rpm: Annotated[float | None, Ge(0), Doc("Requests a minute (default: the source's polite rate; 0: none).")] = None
    concurrency: Annotated[int, Ge(1), Doc("Requests in flight at once.")] = 4
    timeout: Annotated[float, Gt(0), Doc("Seconds per request before it is retried.")] = 30.0
    max_attempts: Annotated[int, Ge(1), Doc("Attempts per page on 429/5xx/timeouts.")] = 6
    offline: Annotated[bool, Doc("Use cached pages only (re-parse without the network).")] = False
    refresh: Annotated[bool, Doc("Fetch pages again even when cached.")] = False

    def settings(self, polite_rpm: float) -> HttpSettings:
        from .http import HttpSettings

        rate = polite_rpm if self.rpm is None else (self.rpm or None)
        rest = {k: v for k, v in dataclasses.asdict(self).items() if k != "rpm"}  # the same names there
        return HttpSettings(requests_per_minute=rate, **rest)


def scrape_request(
    source: str,
    out: Path,
    filters: ScrapeFilters | None = None,
    http: ScrapePoliteness | None = None,
    *,
    n: Annotated[int | None, Ge(1), Doc("Stop after this many new questions (default: all).")] = None,
    resume: Annotated[bool, Doc("Carry on from where the last run on --out stopped.")] = False,
    base_url: Annotated[str | None, Doc("API root (a mirror, or a local fixture server).")] = None,
    cache_dir: Annotated[Path | None, Doc("Raw page cache (default: <cache>/pages).")] = None,
) -> Callable[[Callable[[Any], None] | None], Any]:
    """The scrape of ``source`` (metaculus, manifold, polymarket) into ``out``, checked: a function that runs
    it (with a callback per page) and returns its :class:`~.scraper.ScrapeReport` (``Any`` in the signature,
    which ``cc`` reads at start, so that the scraper is imported only when it runs)."""
    from . import SOURCES, scrape

    filters = filters or ScrapeFilters()
    filters.chosen_types()
    if source not in SOURCES:
        raise InputError(f"unknown source {source!r}; choose one of {', '.join(SOURCES)}")
    options = filters.options()
    src = SOURCES[source]()
    polite = (http or ScrapePoliteness()).settings(src.default_rpm)

    def run(on_page: Callable[[ScrapeReport], None] | None = None) -> ScrapeReport:
        return asyncio.run(scrape(src, out, options, n=n, base_url=base_url, http=polite, cache_root=cache_dir,
                                  resume=resume, on_page=on_page))  # fmt: skip

    return run


def progress_info(report: ScrapeReport) -> str:
    """A scrape's progress in one line: pages read, items skipped, questions already in the output."""
    return f"{report.pages} pages, {sum(report.skipped.values())} skipped, {report.already} already there"
