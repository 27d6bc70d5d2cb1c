"""Resolving questions past their resolution date with a model (one with retrieval is the user's choice).

Only yes/no questions without a resolution are asked (a multiple-choice or numeric one is left as it
is): a resolution a source gave is never overwritten. The model answers yes, no or unknown with a
short justification and a confidence; with several votes the majority of the yes/no answers wins and
a tie is unknown (the paper's code counted a tie as NO). The answer is recorded in
``metadata["model_resolution"]`` with the model used, and sets ``resolution`` only when it is yes or no.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Annotated, Literal

from annotated_doc import Doc
from annotated_types import Ge
from pydantic import BaseModel, Field

from ..llm import LLM
from ..models import ForecastingQuestion
from ..prompts import question_block, render


class ResolutionAnswer(BaseModel):
    justification: str = Field(description="What happened, briefly, and how it meets the criteria or not.")
    answer: Literal["yes", "no", "unknown"]
    confidence: float = Field(ge=0.0, le=1.0)


@dataclass
class ResolveReport:
    asked: int = 0
    outcomes: Counter = field(default_factory=Counter)  # yes / no / unknown / failed
    untouched: Counter = field(default_factory=Counter)  # already resolved / not yet due / no resolution date

    def lines(self, written: int, target: Path) -> list[str]:
        """How many were asked with what outcomes, where ``written`` questions went, and why others were left."""
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items())) or "none"
        lines = [f"{self.asked} question(s) asked ({outcomes}); {written} written to {target}"]
        return lines + [f"  left as they were: {count} {why}" for why, count in sorted(self.untouched.items())]


def _majority(answers: list[ResolutionAnswer]) -> str:
    votes = Counter(a.answer for a in answers if a.answer != "unknown")
    if not votes:
        return "unknown"
    (top, n), *rest = votes.most_common()
    return "unknown" if rest and rest[0][1] == n else top


async def resolve_questions(
    questions: list[ForecastingQuestion],
    llm: LLM,
    model: str,
    *,
    as_of: date,
    votes: Annotated[int, Ge(1), Doc("Model answers per question; the majority of yes/no wins.")] = 1,
    concurrency: int = 8,
) -> tuple[list[ForecastingQuestion], ResolveReport]:
    """The questions in the same order, those due by ``as_of`` and unresolved given a model resolution
    (``votes``: ``cc questions resolve --votes``)."""
    report = ResolveReport()
    gate = asyncio.Semaphore(llm.settings.width(concurrency, len(questions)))

    async def one(q: ForecastingQuestion) -> ForecastingQuestion:
        if q.resolution is not None:
            report.untouched["already resolved"] += 1
            return q
        if q.question_type not in ("binary", "conditional_binary"):  # the model answers yes or no only
            report.untouched[f"not a yes/no question ({q.question_type})"] += 1
            return q
        if q.resolution_date is None:
            report.untouched["no resolution date"] += 1
            return q
        if q.resolution_date.date() > as_of:
            report.untouched["not yet due"] += 1
            return q
        report.asked += 1
        messages = [{"role": "user", "content": render("resolve_question", question=question_block(q))}]
        # distinct samples need distinct requests (and cache keys): a vote number and some temperature
        params = [{} if votes == 1 else {"temperature": 0.7, "user": f"resolve-vote-{i}"} for i in range(votes)]
        async with gate:
            results = await asyncio.gather(*(llm.structured(model, messages, ResolutionAnswer, **p) for p in params))
        answers = [r.value for r in results if r.ok]
        if not answers:
            report.outcomes["failed"] += 1
            errors = "; ".join(sorted({r.error or "" for r in results}))
            record = {"answer": "unknown", "error": errors, "model": model, "as_of": str(as_of)}
            return q.model_copy(update={"metadata": {**(q.metadata or {}), "model_resolution": record}})
        verdict = _majority(answers)
        report.outcomes[verdict] += 1
        agreeing = [a for a in answers if a.answer == verdict] or answers
        record = {
            "answer": verdict,
            "justification": agreeing[0].justification,
            "confidence": round(sum(a.confidence for a in agreeing) / len(agreeing), 4),
            "votes": [a.answer for a in answers],
            "model": model,
            "as_of": str(as_of),
        }
        update = {"metadata": {**(q.metadata or {}), "model_resolution": record}}
        if verdict != "unknown":
            update["resolution"] = verdict == "yes"
        return q.model_copy(update=update)

    resolved = await asyncio.gather(*(one(q) for q in questions))
    return list(resolved), report
