"""What ``cc generate`` is asked (checks, questions, how many) and who makes the tuples: its options,
declared once.

Light to import (no numpy): ``cc generate --help`` reads these declarations. :class:`GenerateSettings` is
the part of :class:`.pipeline.GenerateOptions` a user sets, :func:`choose_makers`' parameters choose the
makers, and the aliases type :mod:`.run`'s functions, so the command line and the Python API share each
help text and range.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from annotated_doc import Doc
from annotated_types import Ge, Le

CheckSpec = Annotated[str, Doc("Check name or alias (neg, cond, mono, ...), a comma-separated list, or 'all'.")]
QuestionsFile = Annotated[Path, Doc("Base questions (JSONL, one per line).")]
OutDir = Annotated[Path, Doc("Directory for <Checker>.jsonl and rejects/.")]
AroundId = Annotated[str | None, Doc("Id of a question in --questions that every tuple must contain (appendix J).")]


@dataclass
class GenerateSettings:
    """How many tuples, from how many candidates; the documented fields are options of ``cc generate``."""

    n: Annotated[int, Ge(1), Doc("Tuples wanted per check (those already in the file count).")] = 50
    candidates: Annotated[int, Ge(1), Doc("Base assignments sampled for multi-question checks.")] = 2000
    top: Annotated[
        int | None, Ge(1), Doc("Best-ranked candidates used (default: down the ranking until n are kept).")
    ] = None
    prefilter: Annotated[
        int | None, Ge(0), Doc("Kept by embedding similarity before the model scores (default 3 x (top or n)).")
    ] = None
    seed: Annotated[int, Ge(0), Doc("Seed of the candidate sampling.")] = 0
    concurrency: int = 16  # tuples in progress at once


@dataclass(frozen=True)
class Makers:
    """Who makes, checks and ranks the tuples."""

    model: str  # writes the fields (llm instantiator)
    instantiator: str = "template"  # llm or template
    verify: bool = False
    threshold: int = 6  # verifier score (0-10) a tuple needs
    judge: str | None = None  # verifies and scores relevance (default: model)
    relevance: str = "embeddings"  # llm, embeddings or off
    embeddings: str = "auto"


def choose_makers(
    model: str,
    instantiator: Annotated[
        Literal["auto", "llm", "template"],
        Doc("llm writes fields with the model; template is exact and model-free."),
    ] = "auto",
    verify: Annotated[bool | None, Doc("Have a model verify each tuple (default: with llm).")] = None,
    threshold: Annotated[int, Ge(0), Le(10), Doc("Verifier score (0-10) a tuple needs to be kept.")] = 6,
    verifier_model: Annotated[str | None, Doc("Model for verification and relevance (default: --model).")] = None,
    relevance: Annotated[
        Literal["auto", "llm", "embeddings", "off"],
        Doc("How multi-question bases are ranked (auto: llm with the llm instantiator)."),
    ] = "auto",
    embeddings: Annotated[
        str, Doc("auto, lexical, minilm, or an embeddings model spec (openai/text-embedding-3-small).")
    ] = "auto",
) -> tuple[Makers, str | None]:
    """The makers, ``auto`` resolved: the llm instantiator with a hosted model, templates with only the bundled
    local one; verification with the llm instantiator; relevance by llm with it, else by embeddings. Also
    why the instantiator was chosen, when it was (None when ``instantiator`` was given). The documented
    parameters are options of ``cc generate``."""
    why = None
    if instantiator == "auto":
        from ..llm.secrets import redact

        hosted = model != "local"
        instantiator = "llm" if hosted else "template"
        why = f"model {redact(model)} is hosted" if hosted else "the only model is the bundled local one"
    if relevance == "auto":
        relevance = "llm" if instantiator == "llm" else "embeddings"
    verify = instantiator == "llm" if verify is None else verify
    return Makers(model, instantiator, verify, threshold, verifier_model, relevance, embeddings), why
