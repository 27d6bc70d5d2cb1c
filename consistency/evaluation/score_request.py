"""What ``cc score`` is asked: :class:`ScoreRequest`'s fields are its options (``consistency/cli/declared.py``).
Light to import (no numpy, no pydantic), so that ``cc score --help`` stays fast; the scoring stack loads when
:attr:`ScoreRequest.params` is read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from annotated_doc import Doc

from ..fields import BootstrapSeed, Epsilon, Resamples

if TYPE_CHECKING:
    from ..metrics.scoring import ScoreParams


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
