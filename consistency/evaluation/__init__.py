"""Evaluating a forecaster: on consistency tuples (``evaluate``/``resume``) or on resolved questions."""

from .asking import Ask, RunOptions, Tally
from .benchmark import TupleSet, bundled_tuples, fingerprint, load_benchmark
from .rundir import RunDir, RunDirError
from .runner import EvaluationResult, default_run_dir, evaluate, plan, resume

__all__ = [
    "Ask",
    "EvaluationResult",
    "RunDir",
    "RunDirError",
    "RunOptions",
    "Tally",
    "TupleSet",
    "bundled_tuples",
    "default_run_dir",
    "evaluate",
    "fingerprint",
    "load_benchmark",
    "plan",
    "resume",
]
