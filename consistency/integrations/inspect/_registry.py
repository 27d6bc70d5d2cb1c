"""inspect's entry point (``[project.entry-points.inspect_ai]``): everything ``inspect eval consistency/...`` finds."""

from .compat import accept_pinned_openai
from .scorer import consistency_metrics, consistency_scorer
from .solvers import forecast_tuple, forecaster_tuple
from .tasks import CHECK_TASKS, all_checks_task

accept_pinned_openai()

globals().update({f"{name}_task": fn for name, fn in CHECK_TASKS.items()})

__all__ = [
    "all_checks_task",
    "consistency_metrics",
    "consistency_scorer",
    "forecast_tuple",
    "forecaster_tuple",
    *(f"{name}_task" for name in CHECK_TASKS),
]
