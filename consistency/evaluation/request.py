"""One evaluation as the command line states it: what to measure (:class:`Request`), started, resumed or
only priced (:func:`run_request`). ``cc evaluate`` is options -> this -> print; a Python caller that holds
the same strings (a spec, ``-F key=value`` items, a comma-separated check list) gets the same behaviour.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from annotated_doc import Doc
from annotated_types import Ge

from ..fields import CheckNames, Epsilon, ForecasterOptionItems, ForecasterSpec, Resamples
from .asking import RunOptions
from .estimation import Estimate
from .runner import EvaluationResult

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Request:
    """What a run measures: the names are those of :data:`.resuming.FIXED` (a resume refuses changing them),
    and ``cc evaluate``'s options are these fields.

    ``tuples``/``questions`` may be ``paper:NAME`` or ``hf://`` references; with ``questions`` the run is
    scored against outcomes, else on consistency tuples (``checks`` comma-separated, default all)."""

    forecaster: ForecasterSpec = "local"
    forecaster_option: ForecasterOptionItems = None
    tuples: Annotated[
        Path | None,
        Doc(
            "Directory of <Checker>.jsonl tuple files, or one file; bundled:typed for the multiple-choice and "
            "numeric checks (default: the bundled yes/no benchmark)."
        ),
    ] = None
    checks: CheckNames = None
    limit: Annotated[int | None, Ge(1), Doc("At most N tuples per check (sampled).")] = None
    seed: Annotated[int, Ge(0), Doc("Seed of the --limit sample.")] = 0
    questions: Annotated[Path | None, Doc("Resolved questions: score against outcomes (Brier, log score).")] = None
    out_dir: Annotated[Path | None, Doc("Run directory (default: runs/<time>_<forecaster>_<benchmark>).")] = None
    epsilon: Epsilon = 1e-3
    bootstrap: Resamples = 1000

    @property
    def check_list(self) -> list[str] | None:
        return [c for c in self.checks.split(",") if c.strip()] if self.checks else None

    @property
    def forecaster_options(self) -> dict[str, str]:
        from ..forecasters.loading import parse_options

        return parse_options(self.forecaster_option or [])


@dataclass(frozen=True)
class Gates:
    """When a finished run still fails (exit 1 of ``cc evaluate``): more failed questions than ``fail_on_error``
    (a fraction below 1, else a count), or a mean arbitrage violation above ``max_violation`` (``per_check``:
    every check's). A limit that could never fail (NaN, infinite, negative) is refused at once, before any
    question is asked."""

    fail_on_error: Annotated[
        float | None,
        Ge(0),
        Doc("Exit 1 when more questions than this failed: a fraction (below 1) or a count (default: exit 0)."),
    ] = None
    max_violation: Annotated[
        float | None,
        Ge(0),
        Doc("Exit 1 (after writing the run) when the mean arbitrage violation over checks is above this."),
    ] = None
    per_check: Annotated[bool, Doc("With --max-violation: hold every check to the limit, not the mean.")] = False

    def __post_init__(self) -> None:
        from .gate import checked_limit

        for flag, limit in (("--max-violation", self.max_violation), ("--fail-on-error", self.fail_on_error)):
            if limit is not None:
                checked_limit(flag, limit)

    def failures(self, result: EvaluationResult) -> list[str]:
        """One sentence per gate the run fails."""
        from .gate import failed_gates

        return failed_gates(result, fail_on_error=self.fail_on_error, max_violation=self.max_violation,
                            per_check=self.per_check)  # fmt: skip


@dataclass(frozen=True)
class Priced:
    """A dry run's answer: the estimate, and the spending cap the run would have (on a resume: as resumed)."""

    estimate: Estimate
    max_cost: float | None


def run_request(
    request: Request,
    options: RunOptions,
    *,
    resume_dir: Annotated[Path | None, Doc("Finish an interrupted run directory without re-asking.")] = None,
    explicit: frozenset[str] | set[str] = frozenset(),
    dry_run: Annotated[
        bool,
        Doc(
            "Print the model calls, prompt and completion tokens and dollars the run would cost; "
            "call no model, write no run directory."
        ),
    ] = False,
    say: Callable[[str], None] = log.info,
) -> EvaluationResult | Priced:
    """Start the run (or finish ``resume_dir``); with ``dry_run``, only what it would cost (:class:`Priced`).

    On a resume, ``explicit`` names the options the caller set on purpose (see
    :func:`.resuming.resume_options`); each recorded option they replace is told through ``say``."""
    from ..sources.paper import dataset_path  # paper:NAME and hf:// references -> local files

    request = dataclasses.replace(
        request, tuples=dataset_path(request.tuples), questions=dataset_path(request.questions)
    )
    if resume_dir is not None:
        return _resume(request, options, resume_dir, explicit, dry_run, say)
    if dry_run:
        return Priced(_estimate(request, options), options.max_cost)
    from .ground_truth import evaluate_questions
    from .runner import evaluate

    if request.questions is not None:
        return evaluate_questions(request.forecaster, request.questions, limit=request.limit, seed=request.seed,
                                  out=request.out_dir, forecaster_options=request.forecaster_options,
                                  options=options)  # fmt: skip
    from ..metrics.scoring import ScoreParams

    return evaluate(request.forecaster, tuples=request.tuples, checks=request.check_list, limit=request.limit,
                    seed=request.seed, out=request.out_dir, forecaster_options=request.forecaster_options,
                    params=ScoreParams(epsilon=request.epsilon, bootstrap=request.bootstrap),
                    options=options)  # fmt: skip


def _estimate(request: Request, options: RunOptions) -> Estimate:
    from .estimation import estimate, estimate_questions

    if request.questions is not None:
        return estimate_questions(request.forecaster, request.questions, limit=request.limit, seed=request.seed,
                                  forecaster_options=request.forecaster_options, options=options)  # fmt: skip
    return estimate(request.forecaster, tuples=request.tuples, checks=request.check_list, limit=request.limit,
                    seed=request.seed, forecaster_options=request.forecaster_options, options=options)  # fmt: skip


def _resume(
    request: Request,
    options: RunOptions,
    resume_dir: Path,
    explicit: frozenset[str] | set[str],
    dry_run: bool,
    say: Callable[[str], None],
) -> EvaluationResult | Priced:
    from ..forecasters import load_forecaster
    from ..llm.secrets import redact
    from .estimation import estimate_resume
    from .ground_truth import resume_questions
    from .resuming import resume_options
    from .rundir import RunDir
    from .runner import QuestionsRecord, resume

    recorded = RunDir(resume_dir).meta()
    options, notices = resume_options(recorded, options, dataclasses.asdict(request), set(explicit), resume_dir)
    for notice in notices:
        say(notice)
    again = None  # a spec with a key in its URL was stored scrubbed: the caller gives it again
    spec = request.forecaster
    if redact(spec) != spec and redact(spec) == recorded.forecaster_spec:
        again = load_forecaster(spec, recorded.forecaster_options)
    if dry_run:
        return Priced(estimate_resume(resume_dir, forecaster=again, options=options), options.max_cost)
    finish = resume_questions if recorded.kind == QuestionsRecord.kind else resume
    return finish(resume_dir, forecaster=again, options=options)
