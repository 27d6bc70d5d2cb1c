"""Evaluating a forecaster: on consistency tuples (``evaluate``/``resume``) or on resolved questions."""

from .asking import Ask, RunOptions, Tally
from .benchmark import TupleSet, bundled_tuples, fingerprint, load_benchmark
from .estimate import Estimate, EstimateError, estimate, estimate_questions, estimate_resume
from .rundir import RunDir, RunDirError
from .runner import EvaluationResult, evaluate, plan, reopen_run, resume, start_run

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
