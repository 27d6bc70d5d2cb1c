"""Choosing base questions for multi-question checks: embeddings prefilter, then a model scores relevance.

Candidates are sampled assignments of questions to the check's bases. A cheap similarity (mean
pairwise cosine of the titles' embeddings) keeps the most related ones; a model then scores each
kept group 0-10 with reasons, and the best ``top`` are used. A group is scored once whatever the
order of its questions (COND's ``P, Q`` and ``Q, P`` share one call).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..embeddings import Embedder, similarity
from ..llm import LLM
from ..models import ForecastingQuestion
from ..prompts import render
from .judgement import RelevanceAnswer

log = logging.getLogger(__name__)

Group = Mapping[str, ForecastingQuestion]


@dataclass
class Ranked:
    bases: Group
    similarity: float
    score: int | None = None
    reasons: str = ""

    def metadata(self) -> dict:
        return {"similarity": round(self.similarity, 4), "score": self.score, "reasons": self.reasons}


@dataclass
class RankStats:
    candidates: int = 0
    prefiltered_out: int = 0
    scored: int = 0
    score_failures: int = 0
    below_top: int = 0
    errors: list[str] = field(default_factory=list)


class RelevanceRanker:
    """``prefilter`` groups kept by embedding similarity, then scored by ``model`` (None: embeddings only)."""

    def __init__(self, embedder: Embedder, llm: LLM | None = None, model: str | None = None) -> None:
        self.embedder, self.llm, self.model = embedder, llm, model
        self.stats = RankStats()

    async def rank(self, groups: Sequence[Group], top: int | None, prefilter: int | None = None) -> list[Ranked]:
        """Best first; ``top`` None keeps every scored group (the caller goes down the list as needed)."""
        self.stats.candidates += len(groups)
        if not groups:
            return []
        ranked = sorted(await self._similarities(groups), key=lambda r: -r.similarity)
        keep = prefilter if prefilter is not None else 3 * (top or len(groups))
        self.stats.prefiltered_out += max(0, len(ranked) - keep)
        ranked = ranked[:keep]
        if self.model and self.llm is not None:
            await self._score(ranked)
            ranked.sort(key=lambda r: (-(r.score if r.score is not None else -1), -r.similarity))
            ranked = [r for r in ranked if r.score is not None]
        if top is None:
            return ranked
        self.stats.below_top += max(0, len(ranked) - top)
        return ranked[:top]

    async def _similarities(self, groups: Sequence[Group]) -> list[Ranked]:
        questions = {q.id: q for g in groups for q in g.values()}
        ids = list(questions)
        vectors = await self.embedder.embed([questions[i].title for i in ids])
        sims, index = similarity(vectors), {qid: i for i, qid in enumerate(ids)}
        out = []
        for g in groups:
            rows = [index[q.id] for q in g.values()]
            pairs = list(itertools.combinations(rows, 2))
            out.append(Ranked(g, float(np.mean([sims[a, b] for a, b in pairs])) if pairs else 1.0))
        return out

    async def _score(self, ranked: list[Ranked]) -> None:
        assert self.llm is not None and self.model is not None
        calls: dict[tuple[str, ...], asyncio.Task] = {}
        for r in ranked:
            key = tuple(sorted(q.id for q in r.bases.values()))
            if key not in calls:
                ordered = sorted(r.bases.values(), key=lambda q: q.id)
                calls[key] = asyncio.ensure_future(self._ask(ordered))
        await asyncio.gather(*calls.values())
        self.stats.scored += len(calls)
        for r in ranked:
            answer = calls[tuple(sorted(q.id for q in r.bases.values()))].result()
            if answer is None:
                continue
            r.score, r.reasons = answer.score, answer.reasons
        self.stats.score_failures += sum(t.result() is None for t in calls.values())

    async def _ask(self, questions: list[ForecastingQuestion]) -> RelevanceAnswer | None:
        assert self.llm is not None and self.model is not None
        listing = "\n".join(f"{i + 1}. {q.title}" for i, q in enumerate(questions))
        messages = [
            {"role": "system", "content": render("relevance_system")},
            {"role": "user", "content": render("relevance_user", questions=listing)},
        ]
        result = await self.llm.structured(self.model, messages, RelevanceAnswer)
        if not result.ok:
            self.stats.errors.append(result.error or "")
            log.info("relevance scoring failed: %s", result.error)
        return result.value
