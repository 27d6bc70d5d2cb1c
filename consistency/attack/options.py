"""What an attack is given and how its search spends the budget: ``cc attack``'s options, declared once.

Light to import (no numpy, no forecasters): ``cc attack --help`` reads these declarations.
:class:`SearchSettings` is the part of :class:`.search.SearchOptions` a user sets; the aliases type
:func:`.run.attack`'s own parameters, so the command line and the Python API share each help text and range.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from annotated_doc import Doc
from annotated_types import Ge, Le

from ..fields import Concurrency

Questions = Annotated[Path | None, Doc("Base questions (JSONL): the pool, and the seeds when no --tuples.")]
SeedTuples = Annotated[
    Path | None, Doc("Seed tuples: a tuples or forecasts directory, or bundled:typed (default: bundled).")
]
Generator = Annotated[
    str | None, Doc("Generator model that writes and verifies question variants (default: templates only).")
]
AttackDir = Annotated[Path | None, Doc("Attack directory (default: attacks/<time>_attack_<forecaster>).")]
Resume = Annotated[bool, Doc("Continue the attack in --out (after a kill, or with a larger --budget).")]
Baseline = Annotated[
    bool,
    Doc(
        "Also sample seed tuples uniformly with the same budget, for the comparison (forecasts the "
        "search already bought cost no call)."
    ),
]


@dataclass
class SearchSettings:
    """How the search spends its budget (everything here is recorded with the attack); the documented
    fields are options of ``cc attack``."""

    budget: Annotated[int, Ge(1), Doc("Most forecasts of the target the search spends (a hard cap).")] = 200
    keep: Annotated[int, Ge(1), Doc("Most violated tuples returned.")] = 20
    width: Annotated[int, Ge(1), Doc("Tuples evaluated per round.")] = 8
    beam: int = 8  # the most violated tuples proposals grow around
    exploration: float = 0.5  # UCB1's bonus weight
    seed: Annotated[int, Ge(0), Doc("Seed of the seed-tuple order and the baseline sample.")] = 0
    verify_threshold: Annotated[
        int, Ge(0), Le(10), Doc("Verifier score (0-10) a tuple with model-written text needs.")
    ] = 6
    max_depth: int = 2  # mutations applied on top of each other at most
    concurrency: Concurrency = 16
    timeout: float | None = 300.0
