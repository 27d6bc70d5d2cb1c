"""Forecasting questions from news articles (the consistency-checks paper's appendix K, forward-looking).

The articles come from :mod:`consistency.sources.news` (feeds, a NewsAPI-compatible endpoint, a JSONL
file), de-duplicated. For each: is it suitable → up to ``per_article`` questions about what happens after
its publication date, resolving within ``horizon_days`` → each reworded to stand alone, then re-checked
strictly against the article (the paper's rephrase and re-check) → the project's question verification
(:mod:`.pipeline`) → optionally reference-class spanning (the same question about other entities, same
dates, verified too). The article's URL, title and date stay in each question's metadata.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

from annotated_doc import Doc
from annotated_types import Ge
from pydantic import BaseModel, Field

from consistency.jsonl import AppendLog
from consistency.llm import LLM
from consistency.models import ForecastingQuestion
from consistency.prompts import question_block, render
from consistency.questions.pipeline import Threshold, rejected_lines, rejects_path_for, verify_question
from consistency.sources.news import Article

log = logging.getLogger(__name__)

#: Namespace of the ids of the questions made from news.
NAMESPACE = uuid.UUID("2c8e41d7-5a0b-4f63-9d1e-7b3f0a6c8e52")


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

    def lines(self) -> list[str]:
        """What was written from how many articles, and how many questions each step rejected."""
        earlier = f" ({self.already} article(s) done in an earlier run)" if self.already else ""
        read = self.articles - self.already
        return [
            f"{self.written} new question(s) from {read} article(s) in {self.path}{earlier}",
            *rejected_lines(self.rejected, self.rejects_path),
        ]


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


@dataclass
class NewsSettings:
    """How questions are made from an article (the options of :func:`questions_from_news`)."""

    model: str
    judge: str
    horizon_days: int = 90
    per_article: int = 3
    threshold: int = 6
    span: int = 0
    rephrase: bool = True


class _Maker:
    """One run over articles: each article's steps, writing accepted questions and rejects as they come."""

    def __init__(self, llm: LLM, settings: NewsSettings, accepted: AppendLog, rejects: AppendLog, report: NewsReport):
        self.llm, self.settings, self.accepted, self.rejects, self.report = llm, settings, accepted, rejects, report
        self.written = {q.get("id") for q in accepted.existing}

    def keep(self, q: ForecastingQuestion) -> None:
        if q.id not in self.written:  # the same question from two articles, or two spanned copies
            self.written.add(q.id)
            self.accepted.append(q)
            self.report.written += 1

    def reject(self, article: Article, step: str, reason: str, title: str | None = None, failed: bool = False) -> None:
        record = {"article_url": article.url, "title": title, "step": step, "reason": reason}
        self.rejects.append(record | ({"failed": True} if failed else {}))  # a failed call: retried on resume
        self.report.rejected[step] += 1

    async def ask(self, model: str, prompt: str, schema: type[BaseModel]) -> Any:
        return await self.llm.structured(model, [{"role": "user", "content": prompt}], schema)

    async def verified(self, article: Article, q: ForecastingQuestion) -> bool:
        verdict = await verify_question(self.llm, self.settings.judge, q)
        if isinstance(verdict, str):
            self.reject(article, "verify", verdict, q.title, failed=True)
            return False
        q.metadata["verification"] = verdict.model_dump()
        if verdict.score < self.settings.threshold:
            self.reject(article, "verify", verdict.reasons, q.title)
            return False
        return True

    async def rephrased(self, article: Article, q: ForecastingQuestion) -> ForecastingQuestion | None:
        """The question reworded, then re-checked against the article (None: rejected)."""
        result = await self.ask(
            self.settings.model, render("news_rephrase", question=question_block(q)), RephrasedQuestion
        )
        if not result.ok:
            self.reject(article, "rephrase", result.error or "", q.title, failed=True)
            return None
        title, body = result.value.title.strip(), result.value.body.strip()
        q = q.model_copy(update={"id": str(uuid.uuid5(NAMESPACE, title)), "title": title, "body": body})
        prompt = render("news_recheck", question=question_block(q), **_article_fields(article))
        check = await self.ask(self.settings.judge, prompt, Recheck)
        if not check.ok:
            self.reject(article, "recheck", check.error or "", q.title, failed=True)
            return None
        if check.value.settled_by_article or check.value.mismatched:
            self.reject(article, "recheck", check.value.reasons, q.title)
            return None
        return q

    async def proposed(self, article: Article, meta: dict[str, Any]) -> list[ForecastingQuestion] | None:
        """The questions the model proposes about what follows ``article``, inside the horizon (None: rejected)."""
        fields = _article_fields(article)
        result = await self.ask(self.settings.model, render("news_suitable", **fields), Suitability)
        if not result.ok or not result.value.suitable:
            self.reject(article, "suitable", result.error or result.value.reasons, failed=not result.ok)
            return None
        latest = article.published_at.date() + timedelta(days=self.settings.horizon_days)
        prompt = render("news_questions", n=str(self.settings.per_article), latest=str(latest), **fields)
        result = await self.ask(self.settings.model, prompt, ProposedQuestions)
        if not result.ok:
            self.reject(article, "propose", result.error or "", failed=True)
            return None
        if not result.value.questions:
            self.reject(article, "propose", "no question proposed")
        questions = []
        for p in result.value.questions[: self.settings.per_article]:
            if not article.published_at.date() < p.resolution_date <= latest:
                self.reject(article, "date", f"resolution date {p.resolution_date} outside the horizon", p.title)
                continue
            questions.append(ForecastingQuestion(
                id=str(uuid.uuid5(NAMESPACE, p.title)), title=p.title.strip(), body=p.body.strip(),
                resolution_date=_day(p.resolution_date), created_date=article.published_at, data_source="news",
                metadata=dict(meta),
            ))  # fmt: skip
        return questions

    async def spanned(self, article: Article, q: ForecastingQuestion, meta: dict[str, Any]) -> None:
        """The same question about other entities of its reference class, verified and kept."""
        span = self.settings.span
        spun = await self.ask(self.settings.model, render("news_span", n=str(span), question=question_block(q)),
                              SpannedQuestions)  # fmt: skip
        if not spun.ok:
            self.reject(article, "span", spun.error or "", q.title, failed=True)
            return
        for s in spun.value.questions[:span]:
            variant = q.model_copy(
                update={"id": str(uuid.uuid5(NAMESPACE, s.title)), "title": s.title.strip(),
                        "body": s.body.strip(), "metadata": {**meta, "spanned_from": q.id}}
            )  # fmt: skip
            if variant.id not in self.written and await self.verified(article, variant):
                self.keep(variant)

    async def one(self, article: Article) -> None:
        meta = {"article_url": article.url, "article_title": article.title,
                "article_date": article.published_at.isoformat(), "article_source": article.source}  # fmt: skip
        proposed = await self.proposed(article, meta)
        kept = []
        for q in proposed or []:
            if self.settings.rephrase and (q := await self.rephrased(article, q)) is None:
                continue
            if await self.verified(article, q):
                kept.append(q)
        for q in kept:
            self.keep(q)
        for q in kept if self.settings.span else []:
            await self.spanned(article, q, meta)


async def questions_from_news(
    articles: list[Article],
    out: str | Path,
    llm: LLM,
    model: str,
    *,
    verifier_model: Annotated[str | None, Doc("Model that verifies the questions (default: --model).")] = None,
    horizon_days: Annotated[int, Ge(1), Doc("Questions resolve within this many days of the article.")] = 90,
    per_article: Annotated[int, Ge(1), Doc("Most questions proposed per article.")] = 3,
    threshold: Threshold = 6,
    span: Annotated[int, Ge(0), Doc("Reference-class variants per question (0: none).")] = 0,
    rephrase: Annotated[
        bool, Doc("Reword each question to stand alone, then reject it if the article settles it.")
    ] = True,
    concurrency: int = 8,
) -> NewsReport:
    """Questions from each article not handled before, appended to ``out``; rejects (with the step
    and reason) to ``*.rejects.jsonl``. With ``rephrase`` (as the paper did) each proposed question is
    reworded to stand alone, then re-checked strictly against the article: one the article already
    settles, or whose dates or entities drifted from it, is rejected before verification. Resumable:
    articles already met in either file are skipped, except those whose every record there is a
    failed model call (an outage): they are read again. The documented parameters are ``cc questions news``'
    options."""
    report = NewsReport(Path(out), rejects_path_for(Path(out)), articles=len(articles))
    settings = NewsSettings(model, verifier_model or model, horizon_days, per_article, threshold, span, rephrase)
    with AppendLog(report.path) as accepted, AppendLog(report.rejects_path) as rejects:
        done = {(q.get("metadata") or {}).get("article_url") for q in accepted.existing}
        done |= {r.get("article_url") for r in rejects.existing if not r.get("failed")}
        todo = [a for a in articles if a.url not in done]
        report.already = len(articles) - len(todo)
        maker = _Maker(llm, settings, accepted, rejects, report)
        gate = asyncio.Semaphore(llm.settings.width(concurrency, len(todo)))

        async def gated(article: Article) -> None:
            async with gate:
                await maker.one(article)

        await asyncio.gather(*(gated(a) for a in todo))
    return report
