"""ForecastBench's leaderboard columns for runs on its questions, as ``cc leaderboard --forecastbench`` asks:
:class:`BoardRequest`'s fields are that command's options (see ``consistency/cli/declared.py``), and
:meth:`BoardRequest.board` reads what they name and builds the board. Light to import (no numpy), so that
``--help`` stays fast.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from annotated_doc import Doc
from annotated_types import Ge

if TYPE_CHECKING:
    from ..jsonl import LineError
    from .leaderboard import Leaderboard


@dataclass(frozen=True)
class BoardRequest:
    """Which questions, fixed effects and bootstrap the board uses (``questions``: ``--forecastbench``)."""

    questions: Annotated[
        str | None, Doc("ForecastBench's columns instead: its imported questions (JSONL) or sets, with outcomes.")
    ] = None
    fixed_effects: Annotated[
        Path | None, Doc("With --forecastbench: ForecastBench's question fixed effects (its scale).")
    ] = None
    baselines: Annotated[bool, Doc("With --forecastbench: add Always 0, Always 1 and Always 0.5.")] = True
    bootstrap: Annotated[int, Ge(0), Doc("With --forecastbench: bootstrap replicates (0: none).")] = 1999
    seed: Annotated[int, Ge(0), Doc("With --forecastbench: seed of the bootstrap.")] = 0
    all_rounds: Annotated[bool, Doc("With --forecastbench: also rounds ForecastBench does not rank yet.")] = False

    def board(self, paths: Sequence[Path], skipped: list[LineError] | None = None) -> Leaderboard:
        """The board of the forecast sets and run directories ``paths`` on the pool of :attr:`questions` (a
        questions JSONL, whose invalid lines go to ``skipped``, or ForecastBench's sets)."""
        from ..evaluation.ground_truth import read_questions
        from . import load
        from .fixed_effects import read_fixed_effects
        from .forecasts import read_forecasts
        from .leaderboard import leaderboard

        if self.questions is None:
            raise ValueError("no questions: give the imported questions or ForecastBench's sets")
        if self.questions.endswith(".jsonl"):
            pool, bad = read_questions(self.questions, strict=False)
            if skipped is not None:
                skipped += bad
        else:
            pool = load([self.questions]).imported.questions
        effects = read_fixed_effects(self.fixed_effects) if self.fixed_effects is not None else None
        runs = [read_forecasts(p) for p in paths]
        fits = {"fixed_effects": effects, "bootstrap": self.bootstrap, "seed": self.seed, "all_rounds": self.all_rounds}
        return leaderboard(pool, runs, baselines=self.baselines, **fits)
