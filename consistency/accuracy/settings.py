"""What the accuracy commands are asked: the settings :func:`.ranking.rank_paths` (``cc leaderboard``),
:func:`.ranking.compare` (``cc compare``), :func:`.correlation.correlate` (``cc correlate``) and
:func:`.proxy_study.proxy_study` (``cc proxy``) take, each field documented once: the fields are the commands'
options (``consistency/cli/declared.py``). Light to import (no numpy), so that ``--help`` stays fast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from annotated_doc import Doc
from annotated_types import Ge, Gt, Le

from ..fields import BootstrapSeed
from ..store.layout import GROUND_TRUTH

#: What to do with a question one forecaster answered twice with different forecasts (see :mod:`.table`).
DUPLICATES = ("error", "mean", "first", "last")
#: Kept in step with ``.aggregates.AGGREGATORS`` and ``.ranking.METHODS`` (checked by tests): listed here so
#: that ``--help`` imports no numpy.
AGGREGATORS = ("mean", "median", "extremized_mean", "logit_pool")
METHODS = ("brier", "log", "difficulty", "peer", *(f"proxy-{name}" for name in AGGREGATORS))

#: The long tables a command reads (its PATHS).
SOURCES = f"Long tables (CSV/JSONL: forecaster, question_id, prob, resolution, ...) or {GROUND_TRUTH} files/dirs."
Duplicates = Annotated[
    str, Doc(f"A question one forecaster answered twice differently (the paper re-asked): {'|'.join(DUPLICATES)}.")
]
AsOf = Annotated[datetime | None, Doc("Hold back questions that resolved before their scheduled date.")]


@dataclass(frozen=True)
class Board:
    """How ``cc leaderboard`` ranks (its options)."""

    method: Annotated[str, Doc(f"One of: {', '.join(METHODS)}.")] = "brier"
    as_of: AsOf = None
    duplicates: Duplicates = "error"


@dataclass(frozen=True)
class Comparing:
    """How ``cc compare`` reads and tests two forecasters (its options)."""

    resamples: Annotated[int, Ge(1), Doc("Bootstrap resamples.")] = 10_000
    seed: BootstrapSeed = 0
    as_of: AsOf = None
    duplicates: Duplicates = "error"


@dataclass(frozen=True)
class Correlating:
    """Which forecasters ``cc correlate`` pairs and keeps, and how (its options)."""

    pairs: Annotated[
        list[str] | None,
        Doc("NAME=DIR: pair forecaster NAME with this `cc score` output (overrides the automatic pairing)."),
    ] = None
    splits: Annotated[
        list[str] | None,
        Doc(
            "TUPLES=SPLIT: pair tuple runs named *_tuples_TUPLES with ground-truth runs named *_SPLIT, e.g. "
            "scraped=20240501_20240815 (default: the ground-truth run whose questions the tuples were built from)."
        ),
    ] = None
    checks: Annotated[
        str | None, Doc("Comma-separated checks the aggregate averages over; forecasters lacking one are left out.")
    ] = None
    max_brier: Annotated[float, Ge(0), Le(1), Doc("Leave out forecasters worse than this Brier (the paper: 0.25).")] = (
        0.25
    )
    min_questions: Annotated[int, Ge(1), Doc("Leave out forecasters with fewer resolved questions.")] = 1
    duplicates: Duplicates = "error"
    bootstrap: Annotated[int, Ge(1), Doc("Bootstrap resamples over forecasters.")] = 1000


@dataclass(frozen=True)
class Proxying:
    """How ``cc proxy`` forms batches, aggregates and scores (its options); ``aggregators`` and ``future``
    are comma-separated, as typed."""

    aggregators: Annotated[str, Doc(f"Comma-separated, from: {', '.join(AGGREGATORS)}.")] = ",".join(AGGREGATORS)
    loo: Annotated[
        bool, Doc("Leave each forecaster out of its own aggregate (proper), or include it (the paper's main table).")
    ] = True
    batches: Annotated[
        str,
        Doc(
            "Where batches come from: `batch` (the table's batch column), `source` (each PATH is a batch), "
            "`split` (the paper's directory names: forecaster_<split>, e.g. _20240501_20240815), `none` (one batch)."
        ),
    ] = "batch"
    zscore: Annotated[bool, Doc("Standardise scores within each batch before pooling (the paper).")] = True
    extremize: Annotated[float, Ge(0), Doc("α of the extremized mean.")] = 2.0
    logit_d: Annotated[float, Gt(0), Doc("d of the logit pool.")] = math.sqrt(3.0)
    loss: Annotated[str, Doc("Ground-truth loss: brier, log, absolute or zero_one.")] = "brier"
    future: Annotated[
        str | None,
        Doc(
            "Batches in time order (comma-separated) for predicting the next batch; default: sorted, "
            "whenever there are two or more."
        ),
    ] = None
    duplicates: Duplicates = "error"
    bootstrap: Annotated[int, Ge(1), Doc("Bootstrap resamples for the intervals.")] = 1000
    seed: BootstrapSeed = 0

    @property
    def aggregator_list(self) -> list[str]:
        return [m.strip() for m in self.aggregators.split(",") if m.strip()]

    @property
    def future_list(self) -> list[str] | None:
        return [b.strip() for b in self.future.split(",")] if self.future else None
