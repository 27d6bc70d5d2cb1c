"""News articles, the input of question making from news (:mod:`consistency.questions.news`).

Articles come from RSS/Atom feeds, a NewsAPI-compatible ``/v2/everything`` endpoint (one request
per day, the key in the ``X-Api-Key`` header, never in the URL) or a JSONL file. They are
de-duplicated newest first (an article sharing at least ``dedupe`` of its named entities with a
newer one is dropped).
"""

from __future__ import annotations

import logging
import re
import xml.etree.ElementTree as ET
from datetime import UTC, date, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..jsonl import LineError, read_jsonl
from .http import FatalHTTPError, FetchError, WebClient
from .scraper import iso_datetime

log = logging.getLogger(__name__)

NEWSAPI_VARIABLE = "NEWSAPI_KEY"


class Article(BaseModel):
    """A news article as NewsAPI returns it (``publishedAt``, ``source.name``) or as a JSONL line."""

    model_config = ConfigDict(extra="ignore")

    title: str = Field(min_length=1)
    url: str = Field(min_length=1)
    published_at: datetime = Field(validation_alias=AliasChoices("published_at", "publishedAt", "date"))
    description: str | None = None
    content: str | None = None
    source: str | None = None

    @field_validator("source", mode="before")
    @classmethod
    def _source_name(cls, value: Any) -> Any:
        return value.get("name") if isinstance(value, dict) else value

    @field_validator("published_at", mode="after")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


# ----------------------------------------------------------------------------------- articles


def _text(node: ET.Element | None) -> str:
    return "".join(node.itertext()).strip() if node is not None else ""


def parse_feed(text: str) -> list[Article]:
    """Items of an RSS 2.0 feed or entries of an Atom feed; those without title, link or date are left out."""
    root = ET.fromstring(text)
    atom = "{http://www.w3.org/2005/Atom}"
    channel = root.find("channel")
    name = _text(channel.find("title")) if channel is not None else _text(root.find(f"{atom}title"))
    out = []
    for item in root.iter("item"):
        when = _text(item.find("pubDate"))
        try:
            published = parsedate_to_datetime(when) if when else None
        except (TypeError, ValueError):
            published = None
        title, link = _text(item.find("title")), _text(item.find("link"))
        if title and link and published:
            summary = _text(item.find("description"))
            out.append(Article(title=title, url=link, published_at=published, description=summary, source=name))
    for entry in root.iter(f"{atom}entry"):
        link = entry.find(f"{atom}link")
        href = link.get("href", "") if link is not None else ""
        when = _text(entry.find(f"{atom}published")) or _text(entry.find(f"{atom}updated"))
        title = _text(entry.find(f"{atom}title"))
        if title and href and when:
            summary = _text(entry.find(f"{atom}summary")) or _text(entry.find(f"{atom}content"))
            out.append(
                Article(title=title, url=href, published_at=iso_datetime(when), description=summary, source=name)
            )
    return out


def _check_feed(text: str) -> None:
    try:
        ET.fromstring(text)
    except ET.ParseError as exc:
        raise ValueError(f"not a well-formed RSS/Atom feed ({exc})") from None


async def fetch_feeds(urls: list[str], web: WebClient) -> tuple[list[Article], list[str]]:
    """Articles of every feed, and one problem line per feed that could not be read."""
    articles, problems = [], []
    for url in urls:
        try:
            articles += parse_feed(await web.get_text(url, check=_check_feed))
        except FetchError as exc:
            problems.append(f"{exc.url}: {exc.reason}")
    return articles, problems


def newsapi_fatal(response: Any) -> str | None:
    """NewsAPI's 429 is a daily quota (``rateLimited``): retrying cannot help."""
    try:
        code = response.json().get("code")
    except ValueError:
        return None
    if code == "rateLimited":
        return "NewsAPI's request quota is used up (rateLimited); try again tomorrow or with another plan"
    if response.status_code in (401, 403) or code in ("apiKeyMissing", "apiKeyInvalid", "apiKeyDisabled"):
        return f"NewsAPI refused the key ({code}): set {NEWSAPI_VARIABLE} to a valid key"
    return None


async def fetch_newsapi(
    web: WebClient,
    base_url: str,
    query: str,
    days: list[date],
    *,
    domains: str | None = None,
    language: str = "en",
) -> tuple[list[Article], list[str]]:
    """One ``/v2/everything`` request per day (most popular first, 100 articles); stops at a used-up quota."""
    articles, problems = [], []
    for day in days:
        params = {"q": query, "from": str(day), "to": str(day), "language": language, "sortBy": "popularity",
                  "pageSize": 100, "domains": domains}  # fmt: skip
        try:
            data = await web.get_json(f"{base_url.rstrip('/')}/v2/everything", params)
        except FatalHTTPError as exc:
            problems.append(f"{day}: {exc.reason}")
            break
        except FetchError as exc:
            problems.append(f"{day}: {exc.reason}")
            continue
        if not isinstance(data, dict) or data.get("status") != "ok" or not isinstance(data.get("articles"), list):
            problems.append(f"{day}: unexpected answer ({str(data)[:120]})")
            continue
        for raw in data["articles"]:
            try:
                articles.append(Article.model_validate(raw))
            except ValidationError:
                continue  # NewsAPI lists removed articles with empty fields
    return articles, problems


def load_articles(path: str | Path) -> tuple[list[Article], list[LineError]]:
    articles, errors = [], []
    for _, item in read_jsonl(path, Article):
        if isinstance(item, list):
            errors += item
        else:
            articles.append(item)
    return articles, errors


_ENTITY = re.compile(r"\b[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*")
_NOT_NAMES = {"the", "a", "an", "in", "on", "at", "for", "and", "but", "it", "its", "this", "that", "he", "she",
              "they", "we", "i", "as", "after", "before", "with"}  # fmt: skip


def entities(article: Article) -> set[str]:
    """Capitalised names in the title, description and content (a named-entity stand-in; the
    first word of a sentence counts too, which matters little for overlap between articles)."""
    text = " ".join(t for t in (article.title, article.description, article.content) if t)
    return {m.group(0).lower() for m in _ENTITY.finditer(text)} - _NOT_NAMES


def dedupe_articles(articles: list[Article], threshold: float = 0.25) -> tuple[list[Article], int]:
    """Newest first; an article whose entity Jaccard with a kept newer one is ``>= threshold`` is dropped."""
    kept: list[tuple[Article, set[str]]] = []
    seen_urls: set[str] = set()
    dropped = 0
    for article in sorted(articles, key=lambda a: a.published_at, reverse=True):
        names = entities(article)
        same = article.url in seen_urls or any(
            names and other and len(names & other) / len(names | other) >= threshold for _, other in kept
        )
        if same:
            dropped += 1
            continue
        seen_urls.add(article.url)
        kept.append((article, names))
    return [a for a, _ in kept], dropped
