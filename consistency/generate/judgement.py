"""The one answer shape of every model judgement here (tuple verification, relevance, question review)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Judgement(BaseModel):
    """Reasons first, so the model argues before it scores; then a 0-10 score the caller thresholds."""

    reasons: str = Field(description="The reasons for the score.")
    score: int = Field(ge=0, le=10, description="0: clearly not; 10: clearly yes (see the instructions).")


class Verdict(Judgement):
    """Whether generated questions stand in the intended logical relation to their bases."""


class RelevanceAnswer(Judgement):
    """Whether a combination of these questions is worth asking."""


class QuestionVerdict(Judgement):
    """Whether a question is clear, coherent, precisely resolvable and about real-world events."""
