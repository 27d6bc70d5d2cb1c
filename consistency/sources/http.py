"""A polite JSON client for public web APIs: one async HTTP client, a per-source rate limit,
the LLM layer's retry policy, and an on-disk cache of raw pages.

Pages are cached by URL (never by header, so tokens stay out of the cache): a re-run, or a run
after a parser fix, reads them back without the network (``offline``), and ``refresh`` fetches
them anew. Only pages that parse as JSON are cached, so a truncated page is fetched again next time.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from ..errors import RunFailed
from ..llm.limits import RateLimiter
from ..llm.retry import backoff, retried, transient_status
from ..llm.secrets import redact

log = logging.getLogger(__name__)


class FetchError(RunFailed):
    """A page that could not be had: ``url`` and a one-line ``reason`` (no secrets)."""

    def __init__(self, url: str, reason: str, status: int | None = None) -> None:
        super().__init__(f"{redact(reason)} ({url})")  # the sentence first: it is what ``cc`` prints
        self.url, self.reason, self.status = url, redact(reason), status


class MalformedPage(FetchError):
    """The server answered 200 with a body that is not the JSON we expect (truncated, HTML, ...)."""


class FatalHTTPError(FetchError):
    """An answer no retry can change (401, 403, 404, ...): the run stops."""


class _Transient(RunFailed):
    def __init__(self, status: int, response: httpx2.Response) -> None:
        super().__init__(f"HTTP {status}")
        self.status, self.response = status, response


class PageCache:
    """Raw response bodies on disk, one file per URL (``<root>/<sha256 of url>.json``)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def _path(self, url: str) -> Path:
        digest = hashlib.sha256(url.encode("utf-8")).hexdigest()
        return self.root / digest[:2] / f"{digest}.json"

    def get(self, url: str) -> str | None:
        try:
            data = json.loads(self._path(url).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data.get("body") if data.get("url") == url else None

    def put(self, url: str, body: str) -> None:
        path = self._path(url)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"url": url, "fetched_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "body": body}, fh)
        os.replace(tmp, path)


@dataclass
class FetchStats:
    requests: int = 0
    retries: int = 0
    cache_hits: int = 0


@dataclass
class HttpSettings:
    """How a source is fetched; none of it changes what is scraped."""

    requests_per_minute: float | None = None  # None: no limit
    concurrency: int = 4
    timeout: float = 30.0
    max_attempts: int = 6
    max_backoff: float = 60.0
    offline: bool = False  # cached pages only
    refresh: bool = False  # ignore cached pages (still write them)


def full_url(url: str, params: dict[str, Any] | None = None) -> str:
    """The URL with its query string, as sent (also the cache key)."""
    clean = {k: v for k, v in (params or {}).items() if v is not None}
    return str(httpx2.Request("GET", url, params=clean).url)


class WebClient:
    """GET JSON pages politely. Use ``async with WebClient(...) as web``."""

    def __init__(
        self,
        name: str,
        settings: HttpSettings,
        cache: PageCache | None,
        headers: dict[str, str] | None = None,
        fatal: Callable[[httpx2.Response], str | None] | None = None,
    ) -> None:
        """``fatal(response)`` names answers that look transient but are not (e.g. a daily quota's 429)."""
        self.name, self.settings, self.cache, self._fatal = name, settings, cache, fatal
        self.stats = FetchStats()
        self._headers = {"Accept": "application/json", "User-Agent": "consistency-scraper", **(headers or {})}
        self._client: httpx2.AsyncClient | None = None
        self._gate = asyncio.Semaphore(max(1, settings.concurrency))
        rpm = settings.requests_per_minute
        self._rate = RateLimiter(rpm) if rpm else None

    async def __aenter__(self) -> WebClient:
        if not self.settings.offline:
            self._client = httpx2.AsyncClient(
                timeout=httpx2.Timeout(self.settings.timeout),
                limits=httpx2.Limits(max_connections=max(1, self.settings.concurrency) + 2),
                headers=self._headers,
                follow_redirects=True,
            )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._client is not None:
            await self._client.aclose()

    async def get_json(self, url: str, params: dict[str, Any] | None = None) -> Any:
        """The decoded page at ``url``: from the cache, or fetched (with retries) and cached."""
        return await self._get(url, params, _decode_json)

    async def get_text(self, url: str, params: dict[str, Any] | None = None, check=None) -> str:
        """The page's text; ``check(text)`` raises ValueError when it is not what we expect."""
        return await self._get(url, params, lambda text: (check(text) if check else None, text)[1])

    async def _get(self, url: str, params: dict[str, Any] | None, decode) -> Any:
        target = full_url(url, params)
        if self.cache is not None and not self.settings.refresh:
            body = self.cache.get(target)
            if body is not None:
                self.stats.cache_hits += 1
                return decode(body)
        if self.settings.offline or self._client is None:
            raise FatalHTTPError(target, "not in the page cache and --offline was given")
        body = await self._fetch(target)
        try:
            value = decode(body)
        except ValueError as exc:
            raise MalformedPage(target, str(exc)) from None
        if self.cache is not None:
            self.cache.put(target, body)
        return value

    async def _fetch(self, target: str) -> str:
        async def attempt(_: int) -> str:
            if self._rate:
                await self._rate.acquire()
            self.stats.requests += 1
            response = await self._client.get(target)  # type: ignore[union-attr]
            if response.status_code == 200:
                return response.text
            why = self._fatal(response) if self._fatal else None
            if why:
                raise FatalHTTPError(target, why, response.status_code)
            if transient_status(response.status_code):
                raise _Transient(response.status_code, response)
            raise FatalHTTPError(target, _status_reason(response), response.status_code)

        async with self._gate:
            try:
                return await retried(
                    attempt, self.settings.max_attempts, lambda exc, _: _transient(exc),
                    lambda exc, n: backoff(exc, n, self.settings.max_backoff), self._count_retry,
                )  # fmt: skip
            except _Transient as exc:
                raise FetchError(target, f"HTTP {exc.status} after {self.settings.max_attempts} attempts") from None
            except httpx2.TransportError as exc:
                kind = type(exc).__name__
                raise FetchError(target, f"{kind} after {self.settings.max_attempts} attempts: {exc}") from None

    def _count_retry(self, exc: BaseException | None, attempt: int) -> None:
        self.stats.retries += 1
        log.info("%s: retrying after %s (attempt %d)", self.name, redact(str(exc)), attempt)


def _decode_json(body: str) -> Any:
    try:
        return json.loads(body)
    except ValueError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at char {exc.pos} of {len(body)})") from None


def _transient(exc: BaseException) -> bool:
    return isinstance(exc, (_Transient, httpx2.TransportError))


def _status_reason(response: httpx2.Response) -> str:
    text = " ".join(response.text.split())[:200]
    return f"HTTP {response.status_code}" + (f": {text}" if text else "")
