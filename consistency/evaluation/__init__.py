"""Evaluating a forecaster: on consistency tuples (``evaluate``/``resume``) or on resolved questions; and
scoring and comparing what runs wrote (:mod:`.scoring`, :mod:`.diff`).

Imports are lazy: scoring files or comparing runs (``cc score``, ``cc diff``, ``cc report``) must not load
the LLM client that asking a forecaster needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..names import lazy_exports

if TYPE_CHECKING:
    from .asking import Ask, RunOptions, Tally
    from .benchmark import TupleSet, bundled_tuples, fingerprint, load_benchmark
    from .estimation import Estimate, EstimateError, estimate, estimate_questions, estimate_resume
    from .rundir import RunDir, RunDirError
    from .runner import EvaluationResult, evaluate, plan, reopen_run, resume, start_run

_EXPORTS = {
    "Ask": ".asking",
    "RunOptions": ".asking",
    "Tally": ".asking",
    "TupleSet": ".benchmark",
    "bundled_tuples": ".benchmark",
    "fingerprint": ".benchmark",
    "load_benchmark": ".benchmark",
    "Estimate": ".estimation",
    "EstimateError": ".estimation",
    "estimate": ".estimation",
    "estimate_questions": ".estimation",
    "estimate_resume": ".estimation",
    "RunDir": ".rundir",
    "RunDirError": ".rundir",
    "EvaluationResult": ".runner",
    "evaluate": ".runner",
    "plan": ".runner",
    "reopen_run": ".runner",
    "resume": ".runner",
    "start_run": ".runner",
}

__all__ = [
    "Ask",
    "Estimate",
    "EstimateError",
    "EvaluationResult",
    "RunDir",
    "RunDirError",
    "RunOptions",
    "Tally",
    "TupleSet",
    "bundled_tuples",
    "estimate",
    "estimate_questions",
    "estimate_resume",
    "evaluate",
    "fingerprint",
    "load_benchmark",
    "plan",
    "reopen_run",
    "resume",
    "start_run",
]

__getattr__ = lazy_exports(__name__, _EXPORTS)
