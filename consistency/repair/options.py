"""How ``repair_run`` repairs a directory (geometry, joint or per tuple, where to): ``cc repair``'s options.

Light to import (no numpy): ``cc repair --help`` reads these declarations, and :func:`.runs.repair_run`
takes them, so the command line and the Python API share each help text and default.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import Annotated

from annotated_doc import Doc

from ..errors import InputError


@dataclass
class RepairOptions:
    """What a repair does and where it writes; each field is an option of ``cc repair``. ``joint`` left
    out (None) is joint for brier, per tuple for log."""

    score: Annotated[
        str, Doc("Geometry: brier (Euclidean projection) or log (the KL projection: per tuple, the arbitrage prices).")
    ] = "brier"
    joint: Annotated[
        bool | None,
        Doc(
            "One repaired value per question over every tuple that shares it (log: yes/no checks), or each "
            "tuple on its own (default: joint for brier, per tuple for log)."
        ),
    ] = None
    out: Annotated[Path | None, Doc("Where the repaired directory goes (default: PATH-repaired-SCORE-MODE).")] = None
    _: KW_ONLY
    force: Annotated[bool, Doc("Replace OUT when it holds an earlier repair.")] = False
    resolutions: Annotated[
        Path | None,
        Doc("A questions or ground-truth results file: resolutions for questions of the same text."),
    ] = None
    skip_conflicts: Annotated[
        bool,
        Doc(
            "Joint repair of tuples that contradict each other: leave out each conflicting set found (listed) "
            "and repair the rest (default: stop, name the conflicting tuples, write nothing)."
        ),
    ] = False

    def __post_init__(self) -> None:
        if self.score not in ("brier", "log"):
            raise InputError(f"--score must be brier or log, not {self.score}")
        if self.joint is None:
            self.joint = self.score == "brier"
