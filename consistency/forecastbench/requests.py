"""What the ForecastBench commands ask, each field documented once: the fields are the commands' options
(``consistency/cli/declared.py``), and each request's method reads what they name and does the work.
:class:`BoardRequest` is ``cc leaderboard --forecastbench`` (ForecastBench's leaderboard columns for runs on its
questions), :class:`ImportRequest` ``cc questions import forecastbench``, :class:`SubmissionRequest`
``cc export forecastbench``. Light to import (no numpy), so that ``--help`` stays fast.
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
    from .export import Submission
    from .importing import Loaded
    from .leaderboard import Leaderboard
    from .outputs import CombinationRun


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
        fits = {"bootstrap": self.bootstrap, "seed": self.seed, "all_rounds": self.all_rounds}
        return leaderboard(pool, runs, baselines=self.baselines, fixed_effects=effects, **fits)


@dataclass(frozen=True)
class ImportRequest:
    """Where ``fb:`` references are found, what is attached, and where the combination tuples and runs go."""

    datasets: Annotated[
        str | None,
        Doc(
            "Where fb: references are found: a local copy of the datasets (folder) or its URL "
            "(default: ForecastBench's datasets on GitHub)."
        ),
    ] = None
    resolutions: Annotated[bool, Doc("Attach outcomes from the resolution sets.")] = True
    freeze_values: Annotated[bool, Doc("Show market questions' freeze-date market value in their bodies, too.")] = False
    tuples: Annotated[Path | None, Doc("Folder for COMBINATION tuples of the sets' combination questions.")] = None
    runs: Annotated[
        Path | None, Doc("Folder for forecast sets given among the sources: COMBINATION forecast lines each.")
    ] = None
    offline: Annotated[bool, Doc("Downloaded files from the cache only.")] = False
    refresh: Annotated[bool, Doc("Download question sets again even when cached.")] = False

    def load(self, sources: list[str]) -> Loaded:
        """The questions (and forecast sets) of ``sources``: files, folders, URLs, ``fb:`` references."""
        from .importing import load

        return load(
            sources,
            datasets=self.datasets,
            offline=self.offline,
            refresh=self.refresh,
            resolutions=self.resolutions,
            freeze_values=self.freeze_values,
        )

    def write(self, loaded: Loaded, out: Path) -> list[CombinationRun | str]:
        """The questions written to ``out``, the tuples and runs to their folders (see ``outputs.write_import``)."""
        from .outputs import write_import

        return write_import(loaded, out, self.tuples, self.runs)


@dataclass(frozen=True)
class SubmissionRequest:
    """Who submits which model, from which questions, and where the files go; ``force`` writes a file
    ForecastBench would not take every row of."""

    organization: Annotated[str, Doc("Your team, as ForecastBench lists it.")]
    model: Annotated[str, Doc("The forecaster's name (the file is named after it).")]
    model_organization: Annotated[str | None, Doc("Who made the model (default: --organization).")] = None
    reasoning: Annotated[bool, Doc("Include each forecast's reasoning (ForecastBench keeps none).")] = False
    questions: Annotated[
        Path | None, Doc("The imported questions (JSONL) the run forecast (default: the run's own questions file).")
    ] = None
    out_dir: Annotated[Path, Doc("Folder to write the file(s) to.")] = Path(".")
    force: Annotated[bool, Doc("Write even what ForecastBench would drop rows of or rank no file.")] = False

    def submissions(self, run: Path) -> list[Submission]:
        """``run``'s forecasts as forecast sets, one per question set, each checked by ForecastBench's rules."""
        from .export import question_sets, submissions
        from .forecasts import read_run
        from .outputs import run_questions

        forecasts = read_run(run)
        sets = question_sets(run_questions(run, self.questions))
        who = {"organization": self.organization, "model": self.model, "model_organization": self.model_organization}
        return submissions(forecasts, sets, **who, reasoning=self.reasoning)
