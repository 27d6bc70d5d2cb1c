"""What may change when a run is resumed: the options that tune how the remaining calls are made, and those
that say what the run measures (which must stay as recorded).

The rule is the library's, so ``cc evaluate --resume`` and a Python caller get the same answer: an option
given again that changes what is measured (forecaster, tuples, checks, sample, scoring) is an
:class:`~consistency.errors.InputError`; a tuning option given again replaces the recorded value from this
resume on, and the change is said.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from ..checks import get_check
from ..errors import InputError
from ..forecasters.loading import parse_options
from ..llm import LLMSettings
from ..llm.secrets import redact
from ..metrics.scoring import ScoreParams
from ..store.meta import BenchmarkRecord, RunMeta
from .asking import RunOptions, options_of

#: Options that change how a resumed run's remaining calls are made: the run's recorded value is kept
#: unless the option is given again, and then the new value is used (and recorded for later resumes).
#: Parameter -> (RunOptions or LLMSettings field, how the command line spells it).
TUNABLE = {
    "concurrency": ("concurrency", "--concurrency"),
    "forecast_timeout": ("timeout", "--forecast-timeout"),
    "max_connections": ("llm.max_connections", "--max-connections"),
    "requests_per_minute": ("llm.requests_per_minute", "--rpm"),
    "tokens_per_minute": ("llm.tokens_per_minute", "--tpm"),
    "timeout": ("llm.timeout", "--timeout"),
    "max_attempts": ("llm.max_attempts", "--max-attempts"),
    "cache": ("llm.cache", "--no-cache"),
    "cost_limit": ("llm.cost_limit", "--cost-limit"),
    "max_cost": ("max_cost", "--max-cost"),
    "batch": ("llm.batch", "--batch"),
    "batch_fallback": ("llm.batch_fallback", "--batch-fallback"),
    "batch_poll": ("llm.batch_poll", "--batch-poll"),
}

#: Options that say what the run measures: given again on a resume, they must equal what the run recorded.
FIXED = {
    "forecaster": "--forecaster",
    "forecaster_option": "--forecaster-option",
    "tuples": "--tuples",
    "checks": "--checks",
    "limit": "--limit",
    "seed": "--seed",
    "questions": "--questions",
    "out_dir": "--out",
    "epsilon": "--epsilon",
    "bootstrap": "--bootstrap",
}


def recorded_fixed(meta: RunMeta, run_dir: Path) -> dict[str, Any]:
    """The values of :data:`FIXED` that the run's ``run.json`` (``meta``) recorded."""
    bench = meta.benchmark or BenchmarkRecord()
    params = meta.part("parameters", ScoreParams) if meta.parameters is not None else None  # ground truth: none
    sampled = bench.model_fields_set  # a consistency run's sample is its benchmark's; a ground-truth run's its own
    return {
        "forecaster": meta.forecaster_spec,
        "forecaster_option": meta.forecaster_options or {},
        "tuples": bench.tuples,
        "checks": bench.checks,
        "limit": bench.limit if "limit" in sampled else meta.limit,
        "seed": bench.seed if "seed" in sampled else meta.seed,
        "questions": meta.questions_file,
        "out_dir": str(run_dir),
        "epsilon": params.epsilon if params else None,
        "bootstrap": params.bootstrap if params else None,
    }


def same(name: str, given: Any, recorded: Any) -> bool:
    """Whether a value given again equals the recorded one (paths by file, checks by name, keys scrubbed)."""
    if given is None or recorded is None:
        return given == recorded
    if name in ("tuples", "questions", "out_dir"):
        try:
            return os.path.samefile(given, recorded)
        except OSError:
            return str(given) == str(recorded)
    if name == "checks":
        try:
            return sorted(get_check(c.strip()).name for c in given.split(",") if c.strip()) == sorted(recorded)
        except KeyError:
            return False
    if name == "forecaster":
        return redact(given) == recorded
    if name == "forecaster_option":
        return {k: redact(str(v)) for k, v in parse_options(given).items()} == recorded
    return given == recorded


def resume_options(
    meta: RunMeta, options: RunOptions, given: dict[str, Any], explicit: set[str], run_dir: Path
) -> tuple[RunOptions, list[str]]:
    """The options to finish the run with, and one sentence per recorded option replaced.

    ``given``: the values of :data:`FIXED` as the caller has them; ``explicit``: the names (of :data:`FIXED`
    and :data:`TUNABLE`) the caller set on purpose rather than left at their defaults. The recorded options
    are kept except those in ``explicit``; one in :data:`FIXED` that differs from the record is refused.
    ``meta``: the run's record (:meth:`~.rundir.RunDir.meta`)."""
    recorded = recorded_fixed(meta, run_dir)
    for name, flag in FIXED.items():
        if name in explicit and not same(name, given[name], recorded[name]):
            shown = given[name] if not isinstance(given[name], list) else " ".join(given[name])
            raise InputError(
                f"{flag} {redact(str(shown))} differs from what {run_dir} recorded "
                f"({redact(str(recorded[name]))}): a resume finishes a run as it began, so drop {flag} "
                "or start a new run without --resume"
            )
    kept = options_of(meta)
    llm = kept.llm.model_dump()
    run = {"concurrency": kept.concurrency, "timeout": kept.timeout, "max_cost": kept.max_cost}
    notices = []
    for name, (field, flag) in TUNABLE.items():
        if name not in explicit:
            continue
        where, key = (llm, field[4:]) if field.startswith("llm.") else (run, field)
        value = getattr(options.llm, key) if where is llm else getattr(options, key)
        if value != where[key] and key == "cache":
            typed, now, was = ("--cache", "on", "off") if value else ("--no-cache", "off", "on")
            notices.append(f"{typed}: the response cache is {now} from this resume on (the run had it {was})")
        elif value != where[key]:
            notices.append(f"{flag} {value}: used from this resume on (the run had {where[key]})")
        where[key] = value
    return dataclasses.replace(options, llm=LLMSettings.model_validate(llm), **run), notices
