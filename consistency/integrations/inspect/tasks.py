"""The inspect tasks: ``consistency/<check>`` for each builtin check (the paper's ten and ``consistency/monotone``),
and ``consistency/all``.

Task parameters (``-T name=value``): ``tuples`` (a directory or file of tuples, ``paper:NAME`` or an
``hf://`` path; default: the bundled benchmark), ``limit`` (tuples per check, sampled with ``seed``
as ``cc evaluate`` does), ``checks`` (``all`` only: a comma list), ``epsilon`` (as ``cc score --epsilon``),
``forecaster`` (one of our forecasters on inspect's model instead of the plain question, e.g. ``cot``
or ``arbitrage:basic``) and ``forecaster_options`` (its ``-F`` options as a mapping or ``k=v,k=v``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from inspect_ai import Task, task

from ...checks import all_checks
from ...metrics import DEFAULT_EPSILON
from .compat import registered_name
from .dataset import samples, split_checks, tuple_sets
from .scorer import consistency_scorer
from .solvers import forecast_tuple, forecaster_tuple


def consistency_task(
    checks: Sequence[str] | None,
    tuples: str | None = None,
    limit: int | None = None,
    seed: int = 0,
    epsilon: float = DEFAULT_EPSILON,
    forecaster: str | None = None,
    forecaster_options: dict[str, Any] | list[str] | str | None = None,
) -> Task:
    """A task over the tuples of ``checks`` (all when None); the registered tasks are thin wrappers."""
    sets = tuple_sets(tuples, checks, limit, seed)
    if not any(ts.tuples for ts in sets):
        raise ValueError(f"no tuples to evaluate in {tuples or 'the bundled benchmark'}")
    options = _options(forecaster_options)
    solve = forecaster_tuple(forecaster, options) if forecaster else forecast_tuple()
    return Task(
        dataset=samples(sets),
        solver=solve,
        scorer=consistency_scorer(epsilon=epsilon),
        metadata={
            "consistency": {
                "checks": [ts.check.class_name for ts in sets],
                "tuples": str(tuples) if tuples is not None else "bundled benchmark",
                "limit": limit,
                "seed": seed,
                "epsilon": epsilon,
                "forecaster": forecaster,
                "forecaster_options": options,
            }
        },
    )


def _options(raw: dict[str, Any] | list[str] | str | None) -> dict[str, Any]:
    if raw is None or isinstance(raw, dict):
        return dict(raw or {})
    items = raw.split(",") if isinstance(raw, str) else [str(item) for item in raw]
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"forecaster_options: expected key=value[,key=value...], got {raw!r}")
        out[key.strip()] = value.strip()
    return out


def _check_task(name: str, class_name: str) -> Callable[..., Task]:
    def check_task(
        tuples: str | None = None,
        limit: int | None = None,
        seed: int = 0,
        epsilon: float = DEFAULT_EPSILON,
        forecaster: str | None = None,
        forecaster_options: dict[str, Any] | list[str] | str | None = None,
    ) -> Task:
        return consistency_task([class_name], tuples, limit, seed, epsilon, forecaster, forecaster_options)

    check_task.__name__ = check_task.__qualname__ = f"{name}_task"
    check_task.__doc__ = f"Consistency of the model's forecasts on {name} tuples."
    return task(name=registered_name(name))(check_task)


#: One task per check, named by the check's lower-case name (``negation``, ``cond``...).
CHECK_TASKS = {c.name.lower(): _check_task(c.name.lower(), c.class_name) for c in all_checks()}


@task(name=registered_name("all"))
def all_checks_task(
    tuples: str | None = None,
    limit: int | None = None,
    checks: str | list[str] | None = None,
    seed: int = 0,
    epsilon: float = DEFAULT_EPSILON,
    forecaster: str | None = None,
    forecaster_options: dict[str, Any] | list[str] | str | None = None,
) -> Task:
    """Consistency of the model's forecasts over every check (or ``checks``) in one task."""
    return consistency_task(split_checks(checks), tuples, limit, seed, epsilon, forecaster, forecaster_options)
