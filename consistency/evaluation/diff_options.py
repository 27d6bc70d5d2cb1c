"""What ``diff_runs`` compares with (the metric, the test, the level...): ``cc diff``'s options.

Light to import (no numpy): ``cc diff --help`` reads these declarations, and :func:`.diff.diff_runs`
takes them as its settings, so the command line and the Python API share each help text, default and range.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from annotated_doc import Doc
from annotated_types import Ge, Gt, Lt

from ..errors import InputError
from ..fields import BootstrapSeed

TESTS = ("wilcoxon", "sign")

#: The gate on a comparison (:meth:`.diff.DiffResult.failures`), as ``cc diff`` offers it.
FailIfWorse = Annotated[
    bool,
    Doc(
        "Exit 1 when B is significantly worse than A (overall at --level, or a check at --level / checks), "
        "or when a check of A cannot be compared: B shares none of its tuples, or fewer than --min-shared."
    ),
]


class DiffInputError(InputError):
    """A path that is not a run directory (or two runs that cannot be paired)."""


@dataclass(frozen=True)
class DiffOptions:
    """How two runs are compared; each field is an option of ``cc diff``."""

    metric: Annotated[str, Doc("Violation compared: default (arbitrage), default_scaled or frequentist.")] = "default"
    resamples: Annotated[int, Ge(1), Doc("Paired bootstrap resamples for the intervals.")] = 1000
    seed: BootstrapSeed = 0
    level: Annotated[float, Gt(0), Lt(1), Doc("Significance level of the tests and the intervals.")] = 0.05
    test: Annotated[str, Doc("Paired test deciding 'worse': wilcoxon or sign.")] = "wilcoxon"
    top: Annotated[int, Ge(0), Doc("Tuples that changed most, shown with answers.")] = 5
    min_shared: Annotated[
        int | None,
        Ge(1),
        Doc(
            "Tuples (or resolved questions) each check of A must share with B for --fail-if-worse to pass "
            "(default: the fewest with which the test can find B worse at the check's level: 6 at 0.05)."
        ),
    ] = None

    def __post_init__(self) -> None:
        if self.test not in TESTS:
            raise DiffInputError(f"unknown test {self.test!r} (tests: {', '.join(TESTS)})")
        if not 0 < self.level < 1:  # NaN too: every comparison with it is false
            raise DiffInputError(f"level must be between 0 and 1, got {self.level}")
        if self.min_shared is not None and self.min_shared < 1:
            raise DiffInputError(
                f"min_shared must be at least 1 (a gate must compare something), got {self.min_shared}"
            )
