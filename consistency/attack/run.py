"""``attack()``: set up a search (seeds, pool, families, journal), run it, write the attack directory.

The directory holds ``tuples/`` (the most violated tuples: a tuples directory for ``cc evaluate -t``),
``forecasts/`` (the same tuples with the target's forecasts and violations: what ``cc score`` and
``cc report`` read), ``search_log.jsonl`` (every tuple looked at, with its lineage), ``report.md``,
``attack.json`` (settings and summary) and ``journal.jsonl`` (what makes it resumable).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..checks import Check, all_checks, get_check
from ..checks.logic import Var
from ..datasets import benchmark_dir, tuples_source
from ..errors import InputError
from ..evaluation.scoring import forecast_files
from ..files import FileKind, detect, validate_lines
from ..forecasters import Forecaster, load_forecaster
from ..generate import TemplateInstantiator, instantiate_all
from ..jsonl import read_jsonl, write_json
from ..llm import LLM, LLMSettings
from ..llm.secrets import redact
from ..models import ForecastingQuestion, ForecastLine
from ..paths import new_run_dir
from ..store import layout
from .families import Family, bases_of, default_families
from .options import AttackDir, Baseline, Generator, Questions, Resume, SearchSettings, SeedTuples
from .report import summarize, write_outputs
from .search import Evaluated, Search, SearchOptions
from .store import CONFIG, GENERATOR_TRANSCRIPT, JOURNAL, TRANSCRIPT, Journal, read_config, stale_temp

SEEDS_PER_CHECK = 24
#: What an attack writes at its directory's top level (tuples/ and forecasts/ are replaced file by file).
WRITTEN = (CONFIG, JOURNAL, TRANSCRIPT, GENERATOR_TRANSCRIPT, layout.SEARCH_LOG, layout.ATTACK_MARKDOWN)


class AttackError(InputError):
    """Settings or inputs an attack cannot start from (one sentence, names the file or option)."""


@dataclass
class AttackResult:
    out: Path
    found: list[Evaluated]  # the returned tuples, most violated first
    summary: dict[str, Any]


def load_seeds(source: str | Path | None, checks: Sequence[Check]) -> dict[str, list[dict[str, Any]]]:
    """Seed tuples per check from a tuples or forecasts directory or a bundled set (``bundled:typed``; default: the
    bundled benchmark), metadata kept."""
    wanted = {c.name for c in checks}
    seeds: dict[str, list[dict[str, Any]]] = {}
    try:
        where = tuples_source(source) or benchmark_dir() / layout.TUPLES_DIR
    except ValueError as exc:
        raise AttackError(str(exc)) from None
    for path in forecast_files([where]):
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


def _setup(
    chosen: list[Check], questions: str | Path | None, tuples: str | Path | None
) -> tuple[list[ForecastingQuestion], dict[str, list[dict[str, Any]]], list[str]]:
    """The pool of base questions and the seed tuples per check (the seeding phase: no forecast yet), and
    what was skipped building the seeds."""
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
        pool = load_pool(benchmark_dir() / layout.BENCHMARK_QUESTIONS)
    known = {q.id for q in pool}
    for tups in seeds.values():  # the seeds' base questions join the pool
        for tup in tups:
            for q in bases_of(tup).values():
                if q.id not in known:
                    pool.append(q)
                    known.add(q.id)
    if not any(seeds.values()):
        raise AttackError("no seed tuples for the chosen checks: give --tuples, or --questions to build them from")
    return pool, seeds, notes


def attack(
    forecaster: Forecaster | str,
    *,
    budget: int,
    out: AttackDir = None,
    checks: Sequence[str | Check] | None = None,
    questions: Questions = None,
    tuples: SeedTuples = None,
    generator: Generator = None,
    families: Sequence[Family] | None = None,
    forecaster_options: dict[str, str] | None = None,
    options: SearchSettings | None = None,
    llm: LLMSettings | None = None,
    baseline: Baseline = True,
    resume: Resume = False,
    on_round: Callable[[Search], None] | None = None,
) -> AttackResult:
    """Search for the tuples on which ``forecaster`` is most incoherent, spending at most ``budget`` forecasts.

    ``options`` may be the :class:`~.options.SearchSettings` alone (scored with the default parameters).
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
    options = options if isinstance(options, SearchOptions) else SearchOptions(**asdict(options or SearchSettings()))
    options.budget = budget
    chosen = [get_check(c) for c in checks] if checks else list(all_checks())
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
    # Claimed (attack.json written, journal locked) before seeding, so a kill at any later point leaves an
    # attack that --resume finishes; a seeding error in a new attack takes the claim back.
    created = _claim(target, config, budget, resume)
    journal = _open_journal(target, created)
    if not created:  # this process owns the attack now (the journal's lock): it is running again
        write_json(target / CONFIG, {**(read_config(target) or {}), "status": "running", "budget": budget})
    try:
        pool, seeds, notes = _setup(chosen, questions, tuples)
    except BaseException:
        journal.close()
        if created:
            _unclaim(target)
        raise
    families = list(families) if families is not None else default_families(chosen, generator is not None)
    return asyncio.run(
        _run(loaded, families, chosen, pool, seeds, target, journal, options, llm, generator, baseline, on_round, notes)
    )


def check_out(target: Path) -> None:
    """Refuse an ``--out`` that cannot be an attack directory, in one sentence. A symbolic link to a
    directory is followed (the attack is written where it points); a dangling one is refused."""
    if target.is_symlink() and not target.exists():
        raise AttackError(
            f"{target} is a symbolic link to {os.readlink(target)}, which does not exist; choose another --out"
        )
    if target.exists() and not target.is_dir():
        raise AttackError(f"{target} is a file, not a directory; choose another --out")


def _claim(target: Path, config: dict[str, Any], budget: int, resume: bool) -> bool:
    """Make ``target`` this attack's directory, or check it is this attack's; True when it is new.

    A directory is only ever written by the attack it holds: anything else there (an evaluate run, an
    attack of another target) is refused rather than appended to."""
    check_out(target)
    recorded = read_config(target)
    if recorded is None:
        leftovers = sorted(p.name for p in target.iterdir() if not stale_temp(p)) if target.is_dir() else []
        if leftovers:
            raise AttackError(
                f"{target} is not empty and holds no attack ({CONFIG} is missing, found {leftovers[0]}); "
                "choose an empty or new --out"
            )
        if resume:
            raise AttackError(f"{target}: no attack to resume (nothing was started there); run without --resume")
        try:
            target.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise AttackError(f"{target}: cannot create the attack directory ({exc.strerror or exc})") from None
        write_json(target / CONFIG, {**config, "status": "running", "budget": budget})
        return True
    same_target = all(recorded.get(k) == config[k] for k in ("forecaster", "forecaster_spec", "forecaster_options"))
    if not same_target:
        raise AttackError(
            f"{target} holds an attack of another target ({recorded.get('forecaster_spec')!r}, now "
            f"{config['forecaster_spec']!r}); choose another --out"
        )
    if not resume:
        raise AttackError(f"{target} already holds an attack: pass --resume to continue it, or choose another --out")
    for name in WRITTEN:  # appended to or replaced: only ever inside the attack directory
        if (target / name).is_symlink():
            raise AttackError(
                f"{target / name} is a symbolic link; an attack writes only inside its directory, so replace it "
                "with the file itself"
            )
    for name, value in config.items():
        if recorded.get(name) != value:
            raise AttackError(
                f"{target}: {name} differs from what the attack recorded ({recorded.get(name)!r}, now {value!r}); "
                "a resume continues an attack as it began (only --budget may change)"
            )
    before = recorded.get("budget")
    if isinstance(before, int) and not isinstance(before, bool) and budget < before:
        raise AttackError(
            f"{target}: --budget {budget} is below the {before} this attack was run with; a resume replays or "
            f"extends a search, so give --budget {before} or more"
        )
    return False


def _open_journal(target: Path, created: bool) -> Journal:
    """The journal, locked for this process; then the temporary files a killed writer left are removed."""
    try:
        journal = Journal.open(target)
    except BaseException:
        if created:
            _unclaim(target)
        raise
    for path in target.rglob(".*.tmp"):
        if stale_temp(path):
            path.unlink(missing_ok=True)
    return journal


def _unclaim(target: Path) -> None:
    """Take back the claim of a new attack that could not start (its seeds did not load)."""
    for name in (CONFIG, JOURNAL):
        (target / name).unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        target.rmdir()  # only if nothing else is there


async def _run(
    forecaster, families, checks, pool, seeds, target, journal, options, settings, generator, baseline, on_round, notes
):
    settings = settings or LLMSettings()
    try:
        async with LLM(settings, transcript=target / TRANSCRIPT) as target_llm:
            gen_llm = LLM(settings, transcript=target / GENERATOR_TRANSCRIPT) if generator else None
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
