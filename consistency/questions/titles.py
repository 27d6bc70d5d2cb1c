"""Question titles by few-shot prompting, then de-duplicated by embedding similarity.

Titles come first (cheap; many per call) so duplicates are dropped before any body is written.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence

from pydantic import BaseModel, Field

from ..embeddings import Embedder, deduplicate
from ..llm import LLM
from ..models import ForecastingQuestion
from ..prompts import question_block, render

log = logging.getLogger(__name__)


class Titles(BaseModel):
    titles: list[str] = Field(description="One yes/no question per item, a single sentence each.")


def _examples(examples: Sequence[ForecastingQuestion], k: int, rng: random.Random) -> str:
    chosen = rng.sample(list(examples), min(k, len(examples)))
    return "\n".join(f"- {q.title}" for q in chosen) or "(none given)"


async def _collect(llm: LLM, model: str, prompts: Sequence[str], n: int, embedder: Embedder, threshold: float):
    """Ask prompt after prompt until ``n`` distinct titles, then de-duplicate by similarity."""
    titles: list[str] = []
    for prompt in prompts:
        result = await llm.structured(model, [{"role": "user", "content": prompt}], Titles)
        if not result.ok:
            log.info("title generation failed: %s", result.error)
            continue
        titles += [t.strip() for t in result.value.titles if len(t.strip()) > 10 and t.strip() not in titles]
        kept = await deduplicate(titles, embedder, threshold)
        titles = [titles[i] for i in kept]
        if len(titles) >= n:
            break
    return titles[:n]


async def synthetic_titles(
    llm: LLM,
    model: str,
    *,
    category: str,
    tags: Sequence[str],
    examples: Sequence[ForecastingQuestion],
    created: str,
    resolve_by: str,
    n: int,
    embedder: Embedder,
    threshold: float = 0.9,
    seed: int = 0,
    max_calls: int | None = None,
) -> list[str]:
    """Up to ``n`` distinct titles; each call sees six random examples and up to eight tags."""
    rng = random.Random(seed)
    calls = max_calls or max(4, 2 * n)

    def prompts():
        for _ in range(calls):
            picked = rng.sample(list(tags), min(8, len(tags))) if tags else ["(general)"]
            yield render(
                "synth_titles",
                created=created,
                resolve_by=resolve_by,
                category=category,
                tags=", ".join(picked),
                examples=_examples(examples, 6, rng),
            )

    return await _collect(llm, model, prompts(), n, embedder, threshold)


async def related_titles(
    llm: LLM,
    model: str,
    source: ForecastingQuestion,
    *,
    examples: Sequence[ForecastingQuestion],
    resolve_by: str,
    n: int,
    embedder: Embedder,
    threshold: float = 0.9,
    seed: int = 0,
) -> list[str]:
    """Up to ``n`` titles of questions related to ``source`` (never the source itself)."""
    rng = random.Random(seed)

    def prompts():
        for _ in range(max(3, n // 5 + 2)):
            yield render(
                "related_titles",
                n=str(n),
                resolve_by=resolve_by,
                examples=_examples(examples, 3, rng),
                source=question_block(source),
            )

    titles = await _collect(llm, model, prompts(), n + 1, embedder, threshold)
    kept = await deduplicate([source.title, *titles], embedder, threshold)
    return [titles[i - 1] for i in kept if i > 0][:n]
