"""Forecasting questions from news (the consistency-checks paper's appendix K, forward-looking).

Articles come from RSS/Atom feeds, a NewsAPI-compatible ``/v2/everything`` endpoint (one request
per day, the key in the ``X-Api-Key`` header, never in the URL) or a JSONL file. They are
de-duplicated newest first (an article sharing at least ``dedupe`` of its named entities with a
newer one is dropped), then for each: is it suitable → up to ``per_article`` questions about what
happens after its publication date, resolving within ``horizon_days`` → each reworded to stand
alone, then re-checked strictly against the article (the paper's rephrase and re-check) → the project's question
verification → optionally reference-class spanning (the same question about other entities, same
dates, verified too). The article's URL, title and date stay in each question's metadata.
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..jsonl import AppendLog, LineError, read_jsonl
from ..llm import LLM
from ..models import ForecastingQuestion
from ..prompts import question_block, render
from ..questions.pipeline import rejects_path_for, verify_question
from .http import FatalHTTPError, FetchError, WebClient
from .scraper import iso_datetime

log = logging.getLogger(__name__)

NAMESPACE = uuid.UUID("2c8e41d7-5a0b-4f63-9d1e-7b3f0a6c8e52")
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


# ---------------------------------------------------------------------------------- questions


class Suitability(BaseModel):
    reasons: str = Field(description="Why the article does or does not invite questions about what comes next.")
    suitable: bool


class ProposedQuestion(BaseModel):
    title: str = Field(min_length=10)
    body: str = Field(min_length=40, description="Precise resolution criteria.")
    resolution_date: date = Field(description="The day by which the answer is known (YYYY-MM-DD).")


class ProposedQuestions(BaseModel):
    questions: list[ProposedQuestion]


class RephrasedQuestion(BaseModel):
    title: str = Field(min_length=10)
    body: str = Field(min_length=40, description="Precise resolution criteria.")


class Recheck(BaseModel):
    reasons: str = Field(description="What the article says that bears on the question.")
    settled_by_article: bool = Field(description="The article already settles the answer.")
    mismatched: bool = Field(description="The question's dates or entities do not match the article.")


class SpannedQuestion(BaseModel):
    title: str = Field(min_length=10)
    body: str = Field(min_length=40)


class SpannedQuestions(BaseModel):
    questions: list[SpannedQuestion]


@dataclass
class NewsReport:
    path: Path
    rejects_path: Path
    articles: int = 0
    duplicates: int = 0
    already: int = 0  # articles handled by an earlier run
    written: int = 0
    rejected: Counter = field(default_factory=Counter)


def _article_fields(a: Article) -> dict[str, str]:
    return {
        "published": a.published_at.date().isoformat(),
        "source": a.source or "unknown",
        "title": a.title,
        "description": a.description or "",
        "content": a.content or "",
    }


def _day(d: date) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


async def questions_from_news(
    articles: list[Article],
    out: str | Path,
    llm: LLM,
    model: str,
    *,
    verifier_model: str | None = None,
    horizon_days: int = 90,
    per_article: int = 3,
    threshold: int = 6,
    span: int = 0,
    rephrase: bool = True,
    concurrency: int = 8,
) -> NewsReport:
    """Questions from each article not handled before, appended to ``out``; rejects (with the step
    and reason) to ``*.rejects.jsonl``. With ``rephrase`` (as the paper did) each proposed question is
    reworded to stand alone, then re-checked strictly against the article: one the article already
    settles, or whose dates or entities drifted from it, is rejected before verification. Resumable:
    articles already met in either file are skipped, except those whose every record there is a
    failed model call (an outage): they are read again."""
    report = NewsReport(Path(out), rejects_path_for(Path(out)), articles=len(articles))
    judge = verifier_model or model
    with AppendLog(report.path) as accepted, AppendLog(report.rejects_path) as rejects:
        done = {(q.get("metadata") or {}).get("article_url") for q in accepted.existing}
        done |= {r.get("article_url") for r in rejects.existing if not r.get("failed")}
        todo = [a for a in articles if a.url not in done]
        written = {q.get("id") for q in accepted.existing}

        def keep(q: ForecastingQuestion) -> None:
            if q.id not in written:  # the same question from two articles, or two spanned copies
                written.add(q.id)
                accepted.append(q)
                report.written += 1

        report.already = len(articles) - len(todo)

        def reject(article: Article, step: str, reason: str, title: str | None = None, failed: bool = False) -> None:
            record = {"article_url": article.url, "title": title, "step": step, "reason": reason}
            rejects.append(record | ({"failed": True} if failed else {}))  # a failed call: retried on resume
            report.rejected[step] += 1

        async def verified(article: Article, q: ForecastingQuestion) -> bool:
            verdict = await verify_question(llm, judge, q)
            if isinstance(verdict, str):
                reject(article, "verify", verdict, q.title, failed=True)
                return False
            q.metadata["verification"] = verdict.model_dump()
            if verdict.score < threshold:
                reject(article, "verify", verdict.reasons, q.title)
                return False
            return True

        async def rephrased(article: Article, q: ForecastingQuestion) -> ForecastingQuestion | None:
            """The question reworded, then re-checked against the article (None: rejected)."""
            prompt = render("news_rephrase", question=question_block(q))
            result = await llm.structured(model, [{"role": "user", "content": prompt}], RephrasedQuestion)
            if not result.ok:
                reject(article, "rephrase", result.error or "", q.title, failed=True)
                return None
            title, body = result.value.title.strip(), result.value.body.strip()
            q = q.model_copy(update={"id": str(uuid.uuid5(NAMESPACE, title)), "title": title, "body": body})
            prompt = render("news_recheck", question=question_block(q), **_article_fields(article))
            check = await llm.structured(judge, [{"role": "user", "content": prompt}], Recheck)
            if not check.ok:
                reject(article, "recheck", check.error or "", q.title, failed=True)
                return None
            if check.value.settled_by_article or check.value.mismatched:
                reject(article, "recheck", check.value.reasons, q.title)
                return None
            return q

        async def one(article: Article) -> None:
            fields = _article_fields(article)
            result = await llm.structured(model, [{"role": "user", "content": render("news_suitable", **fields)}],
                                          Suitability)  # fmt: skip
            if not result.ok or not result.value.suitable:
                reject(article, "suitable", result.error or result.value.reasons, failed=not result.ok)
                return
            latest = article.published_at.date() + timedelta(days=horizon_days)
            prompt = render("news_questions", n=str(per_article), latest=str(latest), **fields)
            result = await llm.structured(model, [{"role": "user", "content": prompt}], ProposedQuestions)
            if not result.ok:
                reject(article, "propose", result.error or "", failed=True)
                return
            meta = {"article_url": article.url, "article_title": article.title,
                    "article_date": article.published_at.isoformat(), "article_source": article.source}  # fmt: skip
            kept = []
            for p in result.value.questions[:per_article]:
                if not article.published_at.date() < p.resolution_date <= latest:
                    reject(article, "date", f"resolution date {p.resolution_date} outside the horizon", p.title)
                    continue
                q = ForecastingQuestion(
                    id=str(uuid.uuid5(NAMESPACE, p.title)), title=p.title.strip(), body=p.body.strip(),
                    resolution_date=_day(p.resolution_date), created_date=article.published_at, data_source="news",
                    metadata=dict(meta),
                )  # fmt: skip
                if rephrase and (q := await rephrased(article, q)) is None:
                    continue
                if await verified(article, q):
                    kept.append(q)
            for q in kept:
                keep(q)
            if not kept and not result.value.questions:
                reject(article, "propose", "no question proposed")
            for q in kept if span else []:
                prompt = render("news_span", n=str(span), question=question_block(q))
                spun = await llm.structured(model, [{"role": "user", "content": prompt}], SpannedQuestions)
                if not spun.ok:
                    reject(article, "span", spun.error or "", q.title, failed=True)
                    continue
                for s in spun.value.questions[:span]:
                    variant = q.model_copy(
                        update={"id": str(uuid.uuid5(NAMESPACE, s.title)), "title": s.title.strip(),
                                "body": s.body.strip(), "metadata": {**meta, "spanned_from": q.id}}
                    )  # fmt: skip
                    if variant.id not in written and await verified(article, variant):
                        keep(variant)

        gate = asyncio.Semaphore(llm.settings.width(concurrency, len(todo)))

        async def gated(article: Article) -> None:
            async with gate:
                await one(article)

        await asyncio.gather(*(gated(a) for a in todo))
    return report
