"""What ``cc score`` is asked: :class:`ScoreRequest`'s fields are its options (``consistency/cli/declared.py``),
and its methods score what PATHS name. Light to import (no numpy, no pydantic), so that ``cc score --help``
stays fast; the scoring stack loads when a method runs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from annotated_doc import Doc

from ..fields import BootstrapSeed, Epsilon, Resamples

if TYPE_CHECKING:
    from ..metrics.scoring import ScoreParams
    from .scoring import ScoreReport


@dataclass(frozen=True)
class ScoreRequest:
    """Where the scores go, which check the files hold, and the scoring parameters."""

    out_dir: Annotated[Path | None, Doc("Output directory (default: runs/<time>_score_<name>).")] = None
    check: Annotated[str | None, Doc("Check of the given file(s) (default: detect).")] = None
    epsilon: Epsilon = 1e-3
    bootstrap: Resamples = 1000
    seed: BootstrapSeed = 0

    @property
    def params(self) -> ScoreParams:
        from ..metrics.scoring import ScoreParams

        return ScoreParams(epsilon=self.epsilon, bootstrap=self.bootstrap, seed=self.seed)

    def run_directories(self, paths: Sequence[Path]) -> list[Path] | None:
        """The run directories PATHS name, to score one by one; ``None`` for one set of forecasts (or a log)."""
        from ..integrations.inspect.logs import is_log_among
        from .scoring import run_directories

        return None if is_log_among(paths) else run_directories(paths)

    def score_files(self, paths: Sequence[Path]) -> tuple[ScoreReport, Path]:
        """PATHS scored together (forecast files, or one inspect log), and the directory written."""
        from ..integrations.inspect.logs import score_paths

        return score_paths(paths, self.params, self.check, self.out_dir)
