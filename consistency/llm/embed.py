"""Embeddings through the LLM layer: OpenAI-compatible ``/embeddings`` with cache, retries and accounting.

Each text is cached on its own (key: endpoint, model, text), so a rerun or a text seen twice
costs nothing and only the missing texts are sent, in batches. The client is described by a
protocol of the few members used here, so this module never imports ``client`` (which imports it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from .accounting import RunStats, Usage
from .cache import ResponseCache, cache_key
from .specs import ModelSpec

BATCH = 256


class EmbeddingLayer(Protocol):
    """What ``embed_texts`` needs of :class:`consistency.llm.client.LLM`."""

    cache: ResponseCache | None
    stats: RunStats

    async def endpoint(self, model: str | ModelSpec) -> Any: ...

    async def retried(self, call: Any, spec: Any = None) -> Any: ...


async def embed_texts(llm: EmbeddingLayer, model: str | ModelSpec, texts: Sequence[str]) -> list[list[float]]:
    """One vector per text, in order; raises after the layer's retries are exhausted."""
    ep = await llm.endpoint(model)
    keys = [cache_key(ep.identity, [{"role": "embed", "content": t}], {}, "embedding") for t in texts]
    vectors: dict[int, list[float]] = {}
    if llm.cache is not None:
        for i, key in enumerate(keys):
            hit = llm.cache.get(key)
            if hit is not None:
                vectors[i] = hit["value"]
                llm.stats.cache_hits += 1
    missing = [i for i in range(len(texts)) if i not in vectors]
    for start in range(0, len(missing), BATCH):
        batch = missing[start : start + BATCH]
        async with ep.semaphore:
            llm.breaker.check()

            async def call(batch: list[int] = batch) -> Any:
                llm.stats.calls += 1
                return await ep.pick()[0].embeddings.create(model=ep.model, input=[texts[i] for i in batch])

            try:
                response = await llm.retried(call, ep.spec)
            except Exception:
                llm.breaker.check()  # a wrong key or model: the one-sentence reason, not the raw error
                raise
        llm.stats.add(Usage.of(ep.model, response.usage))
        for i, item in zip(batch, sorted(response.data, key=lambda d: d.index), strict=True):
            vectors[i] = list(item.embedding)
            if llm.cache is not None:
                llm.cache.put(keys[i], ep.identity, {"value": vectors[i]})
    return [vectors[i] for i in range(len(texts))]
