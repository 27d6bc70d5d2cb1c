"""``attack()``: set up a search (seeds, pool, families, journal), run it, write the attack directory.

The directory holds ``tuples/`` (the most violated tuples: a tuples directory for ``cc evaluate -t``),
``forecasts/`` (the same tuples with the target's forecasts and violations: what ``cc score`` and
``cc report`` read), ``search_log.jsonl`` (every tuple looked at, with its lineage), ``report.md``,
``attack.json`` (settings and summary) and ``journal.jsonl`` (what makes it resumable).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..checks import Check, all_checks, get_check
from ..checks.logic import Var
from ..datasets import benchmark_dir
from ..files import FileKind, detect, validate_lines
from ..forecasters import Forecaster, load_forecaster
from ..generate import TemplateInstantiator, instantiate_all
from ..jsonl import read_jsonl, write_json
from ..llm import LLM, LLMSettings
from ..llm.secrets import redact
from ..metrics.forecast_files import forecast_files
from ..models import ForecastingQuestion, ForecastLine
from ..paths import new_run_dir
from .families import Family, bases_of, default_families
from .report import summarize, write_outputs
from .search import Evaluated, Search, SearchOptions
from .store import CONFIG, JOURNAL, Journal, read_config

SEEDS_PER_CHECK = 24


class AttackError(ValueError):
    """Settings or inputs an attack cannot start from (one sentence, names the file or option)."""


@dataclass
class AttackResult:
    out: Path
    found: list[Evaluated]  # the returned tuples, most violated first
    summary: dict[str, Any]


def load_seeds(source: str | Path | None, checks: Sequence[Check]) -> dict[str, list[dict[str, Any]]]:
    """Seed tuples per check from a tuples or forecasts directory (default: the bundled benchmark), metadata kept."""
    wanted = {c.name for c in checks}
    seeds: dict[str, list[dict[str, Any]]] = {}
    for path in forecast_files([source or benchmark_dir() / "tuples"]):
        info = detect(path)
        if info.check is None or info.kind not in (FileKind.TUPLES, FileKind.FORECASTS):
            raise AttackError(f"{path}: holds {info.kind}, not tuples of a check")
        if info.check.name not in wanted:
            continue
        items = seeds.setdefault(info.check.name, [])
        for _, item in validate_lines(info):
            if isinstance(item, list):
                continue  # a bad line is no seed; cc validate names it
            if isinstance(item, ForecastLine):
                tup = {f: item.line[f].question.model_dump(mode="json") for f in info.check.field_names}
                tup["metadata"] = dict((item.model_extra or {}).get("metadata") or {})
            else:
                tup = item.model_dump(mode="json")
                tup["metadata"] = dict(tup.get("metadata") or {})
            if not tup["metadata"].get("base_sentences"):
                plain = {
                    f: tup[f]
                    for f, formula in info.check.formulas.items()
                    if isinstance(formula, Var) and formula.name == f
                }
                tup["metadata"]["base_sentences"] = plain
            items.append(tup)
    return seeds


def load_pool(path: str | Path) -> list[ForecastingQuestion]:
    pool = []
    for _, item in read_jsonl(Path(path), ForecastingQuestion):
        if isinstance(item, list):
            raise AttackError(str(item[0]))
        pool.append(item)
    if not pool:
        raise AttackError(f"{path}: no questions (the file is empty)")
    return pool


def _setup(checks, questions, tuples) -> tuple[list[Check], list[ForecastingQuestion], dict[str, list], list[str]]:
    """The checks, the question pool, the seed tuples per check, and what was skipped building the seeds."""
    chosen = [get_check(c) for c in checks] if checks else list(all_checks())
    pool = load_pool(questions) if questions else []
    notes: list[str] = []
    if tuples is not None or not questions:
        seeds = load_seeds(tuples, chosen)
    else:  # questions only: the seeds are template tuples over them (a chain only from a deadline it can move)
        seeds = {}
        for check in chosen:
            try:
                made = asyncio.run(instantiate_all(TemplateInstantiator(), check, pool, SEEDS_PER_CHECK))
            except ValueError as exc:  # too few (usable) questions for this check's bases
                notes.append(f"{check.name}: no seed tuples: {exc}")
                continue
            notes += [made.note(check)] if made.skipped else []
            seeds[check.name] = made.tuples
    if tuples is None and not questions:
        pool = load_pool(benchmark_dir() / "questions.jsonl")
    known = {q.id for q in pool}
    for tups in seeds.values():  # the seeds' base questions join the pool
        for tup in tups:
            for q in bases_of(tup).values():
                if q.id not in known:
                    pool.append(q)
                    known.add(q.id)
    if not any(seeds.values()):
        raise AttackError("no seed tuples for the chosen checks: give --tuples, or --questions to build them from")
    return chosen, pool, seeds, notes


def attack(
    forecaster: Forecaster | str,
    *,
    budget: int,
    out: str | Path | None = None,
    checks: Sequence[str | Check] | None = None,
    questions: str | Path | None = None,
    tuples: str | Path | None = None,
    generator: str | None = None,
    families: Sequence[Family] | None = None,
    forecaster_options: dict[str, str] | None = None,
    options: SearchOptions | None = None,
    llm: LLMSettings | None = None,
    baseline: bool = True,
    resume: bool = False,
    on_round: Callable[[Search], None] | None = None,
) -> AttackResult:
    """Search for the tuples on which ``forecaster`` is most incoherent, spending at most ``budget`` forecasts.

    ``families`` replaces the built-in candidate families (:func:`default_families`) with your own
    proposal strategies. ``baseline`` also spends up to ``budget`` forecasts on uniformly sampled seed
    tuples (questions the search already forecast cost no call), for the report's comparison.
    """
    if budget < 1:
        raise AttackError(f"--budget must be at least 1, got {budget}")
    if llm is not None and llm.batch:
        raise AttackError(
            "--batch does not fit an adaptive search (each round waits for the last one's answers); run without it"
        )
    options = options or SearchOptions()
    options.budget = budget
    chosen, pool, seeds, notes = _setup(checks, questions, tuples)
    loaded = load_forecaster(forecaster, forecaster_options)
    spec = forecaster if isinstance(forecaster, str) else type(forecaster).__name__
    target = Path(out) if out is not None else new_run_dir(f"attack_{loaded.label}", root="attacks")
    config = {
        "forecaster": loaded.describe(),
        "forecaster_spec": redact(spec),
        "forecaster_options": {k: redact(str(v)) for k, v in (forecaster_options or {}).items()},
        "checks": [c.name for c in chosen],
        "questions": str(questions) if questions else None,
        "tuples": str(tuples) if tuples else None,
        "generator": redact(generator) if generator else None,
        "families": None if families is None else [f.name for f in families],
        "options": {
            k: v for k, v in asdict(options).items() if k not in ("budget", "params", "concurrency", "timeout")
        },
        "parameters": options.params.model_dump(),
    }
    _claim(target, config, resume)
    families = list(families) if families is not None else default_families(chosen, generator is not None)
    result = asyncio.run(
        _run(loaded, families, chosen, pool, seeds, target, options, llm, generator, baseline, on_round, notes)
    )
    return result


def _claim(target: Path, config: dict[str, Any], resume: bool) -> None:
    recorded = read_config(target)
    if recorded is None:
        if resume:
            raise AttackError(f"{target}: no attack to resume ({CONFIG} is missing)")
        if (target / JOURNAL).exists():
            raise AttackError(f"{target}: holds a journal but no {CONFIG}; use another --out")
        target.mkdir(parents=True, exist_ok=True)
        write_json(target / CONFIG, {**config, "status": "running"})
        return
    if not resume:
        raise AttackError(f"{target} already holds an attack: pass --resume to continue it, or choose another --out")
    for name, value in config.items():
        if recorded.get(name) != value:
            raise AttackError(
                f"{target}: {name} differs from what the attack recorded ({recorded.get(name)!r}, now {value!r}); "
                "a resume continues an attack as it began (only --budget may change)"
            )


async def _run(
    forecaster, families, checks, pool, seeds, target, options, settings, generator, baseline, on_round, notes
):
    journal = Journal.open(target)
    settings = settings or LLMSettings()
    try:
        async with LLM(settings, transcript=target / "llm_calls.jsonl") as target_llm:
            gen_llm = LLM(settings, transcript=target / "generator_calls.jsonl") if generator else None
            forecaster.attach(target_llm)
            try:
                search = Search(
                    forecaster, families, checks=checks, pool=pool, seeds=seeds, journal=journal, options=options,
                    target_llm=target_llm, generator=(gen_llm, generator) if gen_llm else None, on_round=on_round,
                )  # fmt: skip
                await search.run()
                if baseline:
                    await search.baseline()
            finally:
                forecaster.attach(None)
                if gen_llm is not None:
                    await gen_llm.aclose()
        summary = summarize(search, target_llm.stats, gen_llm.stats if gen_llm else None, baseline)
        summary["seeds_skipped"] = notes
        found = write_outputs(search, target, summary)
    finally:
        journal.close()
    recorded = read_config(target) or {}
    write_json(target / CONFIG, {**recorded, "status": "complete", "budget": options.budget, "summary": summary})
    return AttackResult(target, found, summary)
