"""A platform scrape as the command line states it (``cc questions scrape``): the source by name, dates
and types as text, the HTTP politeness as numbers; checked here so that a Python caller holding the same
strings gets the same one-sentence errors before any request."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..questions.making import day


def scrape_request(
    source: str,
    out: Path,
    *,
    n: int | None = None,
    types: str = "all",
    status: str = "resolved",
    dates: dict[str, str | None] | None = None,
    filters: dict[str, Any] | None = None,
    http: dict[str, Any] | None = None,
    base_url: str | None = None,
    cache_dir: Path | None = None,
    resume: bool = False,
) -> Callable[[Callable[[Any], None] | None], Any]:
    """The scrape of ``source`` (metaculus, manifold, polymarket) into ``out``, checked: a function that runs
    it (with a callback per page) and returns its :class:`~.scraper.ScrapeReport`.

    ``types``: comma-separated question types or ``all``; ``dates``: ``resolved_after``, ``resolved_before``,
    ``created_after`` as ``YYYY-MM-DD``; ``filters``: the other fields of :class:`~.scraper.ScrapeOptions`;
    ``http``: :class:`~.http.HttpSettings` fields, with ``rpm`` None meaning the source's polite rate and 0
    no limit."""
    from . import SOURCES, HttpSettings, ScrapeOptions, scrape
    from .scraper import ALL_TYPES

    chosen = [t.strip() for t in types.split(",") if t.strip()]
    chosen = list(ALL_TYPES) if chosen == ["all"] else chosen
    unknown = [t for t in chosen if t not in ALL_TYPES]
    if unknown or not chosen:
        raise InputError(f"--types takes {', '.join(ALL_TYPES)} or all, got {types!r}")
    if source not in SOURCES:
        raise InputError(f"unknown source {source!r}; choose one of {', '.join(SOURCES)}")
    if status not in ("resolved", "open", "all"):
        raise InputError(f"--status must be resolved, open or all, got {status!r}")
    when = {name: day(value, "--" + name.replace("_", "-")) for name, value in (dates or {}).items()}
    options = ScrapeOptions(status=status, types=tuple(chosen), **when, **(filters or {}))
    src = SOURCES[source]()
    settings = dict(http or {})
    rpm = settings.pop("rpm", None)
    polite = HttpSettings(requests_per_minute=src.default_rpm if rpm is None else (rpm or None), **settings)

    def run(on_page: Callable[[Any], None] | None = None) -> Any:
        return asyncio.run(scrape(src, out, options, n=n, base_url=base_url, http=polite, cache_root=cache_dir,
                                  resume=resume, on_page=on_page))  # fmt: skip

    return run
