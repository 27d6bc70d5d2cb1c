"""From titles to verified questions, appended to JSONL as they are made (resumable by title)."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Annotated, Any

from annotated_doc import Doc
from annotated_types import Ge, Le
from pydantic import BaseModel, Field

from ..generate.judgement import QuestionVerdict
from ..jsonl import AppendLog
from ..llm import LLM
from ..models import ForecastingQuestion
from ..prompts import question_block, render
from ..store.layout import rejects_file

#: Namespace of the ids of generated questions (same title, same id).
NAMESPACE = uuid.UUID("0d6a4f7e-31c2-4b8e-9f57-2a1e6c9b4d30")

#: The verification score a question needs to be kept (``cc questions synth|related|fill|verify|news``).
Threshold = Annotated[int, Ge(0), Le(10), Doc("Verification score (0-10) a question needs to be kept.")]


@dataclass(frozen=True)
class Window:
    """When questions are asked (``created``) and by when they must resolve (``resolve_by``)."""

    created: date
    resolve_by: date


class QuestionBody(BaseModel):
    body: str = Field(min_length=40, description="Precise resolution criteria.")
    resolution_date: date = Field(description="The day by which the answer is known (YYYY-MM-DD).")


@dataclass
class QuestionReport:
    path: Path
    rejects_path: Path
    already: int = 0
    written: int = 0
    rejected: Counter = field(default_factory=Counter)

    def lines(self) -> list[str]:
        """What was written where, and how many titles each step rejected (the reasons are in a file)."""
        earlier = f" ({self.already} from an earlier run)" if self.already else ""
        return [
            f"{self.written} new question(s) in {self.path}{earlier}",
            *rejected_lines(self.rejected, self.rejects_path),
        ]


def rejected_lines(rejected: Counter, rejects_path: Path) -> list[str]:
    """One line per step that rejected questions, with where the reasons are."""
    return [f"  rejected at {step}: {count} (reasons in {rejects_path})" for step, count in sorted(rejected.items())]


def rejects_path_for(path: Path) -> Path:
    return rejects_file(path)


def _day(d: date) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


async def _body(llm: LLM, model: str, title: str, window: Window) -> tuple[ForecastingQuestion | None, str]:
    prompt = render("question_body", title=title, created=str(window.created), resolve_by=str(window.resolve_by))
    result = await llm.structured(model, [{"role": "user", "content": prompt}], QuestionBody)
    if not result.ok:
        return None, f"body: {result.error}"
    when = result.value.resolution_date
    if not window.created < when <= window.resolve_by:
        return None, f"body: resolution date {when} outside ({window.created}, {window.resolve_by}]"
    q = ForecastingQuestion(
        id=str(uuid.uuid5(NAMESPACE, title)),
        title=title,
        body=result.value.body.strip(),
        resolution_date=_day(when),
        created_date=_day(window.created),
        data_source="synthetic",
    )
    return q, ""


async def verify_question(llm: LLM, model: str, q: ForecastingQuestion) -> QuestionVerdict | str:
    result = await llm.structured(
        model, [{"role": "user", "content": render("question_verify", question=question_block(q))}], QuestionVerdict
    )
    return result.value if result.ok else f"verify: {result.error}"


async def _each(items: Sequence[Any], work: Callable, concurrency: int, record: Callable) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one(item: Any) -> None:
        async with gate:
            record(item, await work(item))

    await asyncio.gather(*(one(i) for i in items))


async def build_questions(
    titles: Sequence[str],
    out: str | Path,
    llm: LLM,
    model: str,
    window: Window,
    *,
    verifier_model: str | None = None,
    threshold: int = 6,
    metadata: dict[str, Any] | None = None,
    concurrency: int = 16,
) -> QuestionReport:
    """A body and resolution date for each title (skipping titles already written or rejected),
    then, with ``verifier_model``, verification; rejected questions go to ``*.rejects.jsonl``."""
    report = QuestionReport(Path(out), rejects_path_for(Path(out)))
    with AppendLog(report.path) as accepted, AppendLog(report.rejects_path) as rejects:
        done = {q["title"] for q in accepted.existing} | {r["title"] for r in rejects.existing}
        report.already = len(accepted.existing)

        async def work(title: str) -> tuple[ForecastingQuestion | None, str, int | None]:
            q, why = await _body(llm, model, title, window)
            if q is None:
                return None, why, None
            q.metadata = dict(metadata or {})
            if verifier_model is None:
                return q, "", None
            verdict = await verify_question(llm, verifier_model, q)
            if isinstance(verdict, str):
                return None, verdict, None
            q.metadata["verification"] = verdict.model_dump()
            if verdict.score < threshold:
                return None, f"verify: {verdict.reasons}", verdict.score
            return q, "", verdict.score

        def record(title: str, outcome: tuple[ForecastingQuestion | None, str, int | None]) -> None:
            q, why, score = outcome
            if q is not None:
                accepted.append(q)
                report.written += 1
            else:
                rejects.append({"title": title, "step": why.split(":")[0], "reason": why, "score": score})
                report.rejected[why.split(":")[0]] += 1

        todo = [t for t in dict.fromkeys(titles) if t not in done]
        await _each(todo, work, llm.settings.width(concurrency, len(todo)), record)
    return report


async def verify_questions(
    questions: Sequence[ForecastingQuestion],
    out: str | Path,
    llm: LLM,
    model: str,
    threshold: Threshold = 6,
    concurrency: int = 16,
) -> QuestionReport:
    """Keep the questions that score at least ``threshold``; the others go to ``*.rejects.jsonl`` with reasons."""
    report = QuestionReport(Path(out), rejects_path_for(Path(out)))
    with AppendLog(report.path) as accepted, AppendLog(report.rejects_path) as rejects:
        done = {q["id"] for q in accepted.existing} | {r["id"] for r in rejects.existing}
        report.already = len(accepted.existing)

        def record(q: ForecastingQuestion, verdict: QuestionVerdict | str) -> None:
            if isinstance(verdict, QuestionVerdict) and verdict.score >= threshold:
                accepted.append(
                    q.model_copy(update={"metadata": {**(q.metadata or {}), "verification": verdict.model_dump()}})
                )
                report.written += 1
                return
            reason = verdict if isinstance(verdict, str) else verdict.reasons
            score = None if isinstance(verdict, str) else verdict.score
            rejects.append({"id": q.id, "title": q.title, "step": "verify", "reason": reason, "score": score})
            report.rejected["verify"] += 1

        todo = [q for q in questions if q.id not in done]
        await _each(todo, lambda q: verify_question(llm, model, q), llm.settings.width(concurrency, len(todo)), record)
    return report
