"""``generate``: candidate bases → relevance ranking → instantiation → verification → JSONL.

Accepted tuples are appended to ``<out>/<Checker>.jsonl`` (the paper's layout, what
``cc evaluate --tuples`` reads) as they are made, rejected ones with their reason to
``<out>/rejects/<Checker>.jsonl``. Both files are keyed by check and base ids, so a run that was
killed picks up where it stopped, without duplicates.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from ..checks import Check
from ..errors import InputError
from ..jsonl import AppendLog
from ..models import ForecastingQuestion
from .chains import NO_HORIZON, NoHorizon
from .llm import InstantiationError
from .options import GenerateSettings
from .relevance import Ranked, RelevanceRanker
from .tuples import Instantiator, choose_around, choose_bases
from .verify import TupleVerifier

log = logging.getLogger(__name__)

Bases = Mapping[str, ForecastingQuestion]
SKIPPED = "skipped"  # the step of a base the instantiator cannot use: counted apart from the rejected


@dataclass
class GenerateOptions(GenerateSettings):
    """How many tuples, from how many candidates, how many at once, and around which question."""

    around: ForecastingQuestion | None = None  # every tuple contains this question (appendix J)


@dataclass
class GenerateReport:
    check: str
    path: Path
    rejects_path: Path
    already: int = 0
    written: int = 0
    candidates: int = 0
    rejected: Counter = field(default_factory=Counter)  # step → count, this run
    skipped: int = 0  # bases the instantiator cannot use (a chain's source with no deadline to move), this run
    surplus: int = 0  # accepted once n were already written (made in parallel; cached, not written)

    @property
    def total(self) -> int:
        return self.already + self.written

    @property
    def refused(self) -> int:
        """Tuples rejected for a reason worth reading (relevance ranking drops candidates by design)."""
        return sum(v for k, v in self.rejected.items() if not k.startswith("relevance"))

    def progress_text(self) -> str:
        return f"{self.refused} rejected" + (f", {self.skipped} skipped" if self.skipped else "")

    def lines(self) -> list[str]:
        """What was written where, then what was skipped or rejected at which step, and where the reasons are."""
        earlier = f" ({self.already} from an earlier run)" if self.already else ""
        lines = [
            f"{self.check}: {self.written} new tuple(s), {self.total} in {self.path}{earlier}; "
            f"{self.candidates} candidate base assignment(s)"
        ]
        if self.skipped:
            lines.append(f"  skipped {self.skipped} question(s): {NO_HORIZON}")
        lines += [f"  rejected at {step}: {count}" for step, count in sorted(self.rejected.items()) if count]
        if self.skipped or self.refused:
            lines.append(f"  reasons: {self.rejects_path}")
        return lines


def tuple_key(check: Check, bases: Mapping[str, Any]) -> str:
    """Identifies a tuple by its check and base ids in position (bases as questions or dicts)."""
    ids = [f"{name}={q['id'] if isinstance(q, Mapping) else q.id}" for name, q in sorted(bases.items())]
    return "|".join([check.name, *ids])


def output_paths(check: Check, out_dir: str | Path) -> tuple[Path, Path]:
    out = Path(out_dir)
    return out / f"{check.class_name}.jsonl", out / "rejects" / f"{check.class_name}.jsonl"


def candidate_bases(
    check: Check, names: Sequence[str], questions: Sequence[ForecastingQuestion], options: GenerateOptions
) -> list[dict[str, ForecastingQuestion]]:
    rng = np.random.default_rng([options.seed, sum(check.name.encode())])
    if check.outcomes:  # made from one multiple-choice or numeric question: the others are no candidates
        from .categorical import fits, wanted_source

        pool = [q for q in questions if fits(check, q)]
        if not pool:
            raise InputError(f"its source is {wanted_source(check)}, and none of the {len(questions)} question(s) is")
        questions = pool
    k = len(names)
    if options.around is not None:
        return choose_around(options.around, questions, names, options.candidates, rng)
    if k == 1:
        order = rng.permutation(len(questions))
        return [{names[0]: questions[int(i)]} for i in order]
    possible = math.perm(len(questions), k)
    return choose_bases(questions, names, min(options.candidates, possible), rng)


async def generate(
    check: Check,
    questions: Sequence[ForecastingQuestion],
    instantiator: Instantiator,
    out_dir: str | Path,
    options: GenerateOptions,
    *,
    ranker: RelevanceRanker | None = None,
    verifier: TupleVerifier | None = None,
    on_progress: Callable[[GenerateReport], None] | None = None,
) -> GenerateReport:
    """Write up to ``options.n`` accepted tuples of ``check`` (counting those already in the file)."""
    path, rejects_path = output_paths(check, out_dir)
    report = GenerateReport(check.name, path, rejects_path)
    names = instantiator.bases_for(check)
    groups = candidate_bases(check, names, questions, options)  # too few questions: ValueError, no file written
    with AppendLog(path) as accepted, AppendLog(rejects_path) as rejects:
        done = {tuple_key(check, t["metadata"]["base_sentences"]) for t in accepted.existing}
        done |= {r["key"] for r in rejects.existing}
        report.already = len(accepted.existing)
        report.candidates = len(groups)
        if ranker is not None and len(names) > 1:
            prefilter = options.prefilter if options.prefilter is not None else 3 * (options.top or options.n)
            ranked = await ranker.rank(groups, options.top, prefilter)
            stats = ranker.stats
            report.rejected["relevance: below the embedding prefilter"] += stats.prefiltered_out
            report.rejected["relevance: not in the top"] += stats.below_top
            report.rejected["relevance: scoring failed"] += stats.score_failures
        else:
            ranked = [Ranked(g, 1.0) for g in groups]
        todo = iter(r for r in ranked if tuple_key(check, r.bases) not in done)
        if on_progress:
            on_progress(report)

        async def one(r: Ranked) -> tuple[str, dict[str, Any]]:
            return await _make(check, instantiator, verifier, r)

        running: set[asyncio.Task] = set()
        finished: set[asyncio.Task] = set()
        launched: dict[asyncio.Task, int] = {}  # task -> its place in the ranking
        tried = 0
        try:
            while True:
                # Keep enough in flight to fill the missing tuples at the acceptance rate seen so far, so the
                # last ones do not trickle through one round-trip at a time; extras beyond n are not written.
                rate = max(report.written / tried, 0.05) if tried >= 8 else 1.0
                wanted = math.ceil((options.n - report.total) / rate)
                while report.total < options.n and len(running) < min(wanted, options.concurrency):
                    r = next(todo, None)
                    if r is None:
                        break
                    task = asyncio.ensure_future(one(r))
                    running.add(task)
                    launched[task] = len(launched)
                if not running:
                    break
                if report.total >= options.n:  # done: what is still in flight is surplus, not waited for
                    break
                finished, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                # in ranking order: a set's order follows memory addresses, which differ between versions of the code
                for task in sorted(finished, key=launched.__getitem__):
                    _record(report, options.n, *task.result(), accepted=accepted, rejects=rejects)
                    tried += 1
                if on_progress:
                    on_progress(report)
        finally:  # done, or stopped by an error: what is in flight is cancelled, every failure is collected
            for task in running:
                task.cancel()
            await asyncio.gather(*running, *finished, return_exceptions=True)
    return report


def _record(
    report: GenerateReport, n: int, step: str, line: dict[str, Any], *, accepted: AppendLog, rejects: AppendLog
) -> None:
    """Count one finished candidate and write it to its file (an accepted tuple beyond ``n`` is surplus)."""
    if step == "accepted":
        if report.total >= n:
            report.surplus += 1
            return
        accepted.append(line)
        report.written += 1
    elif step == SKIPPED:  # recorded with its reason, so a resumed run does not try it again
        rejects.append(line)
        report.skipped += 1
    else:
        rejects.append(line)
        report.rejected[step] += 1


async def _make(
    check: Check, instantiator: Instantiator, verifier: TupleVerifier | None, ranked: Ranked
) -> tuple[str, dict[str, Any]]:
    """("accepted", tuple) or (step, reject line)."""
    bases = ranked.bases
    reject: dict[str, Any] = {
        "key": tuple_key(check, bases),
        "check": check.name,
        "bases": {name: {"id": q.id, "title": q.title} for name, q in bases.items()},
        "instantiator": instantiator.name,
    }
    try:
        tup = await instantiator.instantiate(check, bases)
    except NoHorizon as exc:
        return SKIPPED, reject | {"step": "skipped", "reason": f"{NO_HORIZON}: {exc}"}
    except InstantiationError as exc:
        return "instantiate: model answer unusable", reject | {
            "step": "instantiate",
            "reason": str(exc),
            "raw": exc.raw,
        }
    except (ValidationError, ValueError, KeyError) as exc:
        return "instantiate: invalid tuple", reject | {"step": "instantiate", "reason": str(exc)}
    if len(bases) > 1:
        tup["metadata"]["relevance"] = ranked.metadata()
    if verifier is not None:
        verdict = await verifier.verify(check, tup)
        tup["metadata"]["verification"] = verdict.model_dump()
        if not verdict.passed:
            step = "verify: verifier failed" if verdict.score is None else "verify: below threshold"
            return step, reject | {"step": "verify", "reason": verdict.reasons, "score": verdict.score, "tuple": tup}
    return "accepted", tup
