"""Generating the tuples of several checks in one session: which checks, which makers, and what fell short.

:func:`generate_checks` is what ``cc generate`` runs: one LLM session for every check, the instantiator,
verifier and relevance ranker chosen once, a check that cannot be made from the questions given skipped
with its reason while the others go on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ..checks import Check, UnknownCheckError, all_checks, get_check
from ..embeddings import make_embedder
from ..errors import InputError
from ..llm import LLM
from ..models import ForecastingQuestion
from .chains import NO_HORIZON
from .llm import LLMInstantiator
from .options import AroundId, CheckSpec, Makers, OutDir
from .pipeline import GenerateOptions, GenerateReport, generate
from .relevance import RelevanceRanker
from .template import TemplateInstantiator
from .verify import TupleVerifier

#: Called as a check starts; returns what is called with its report as tuples are made.
Track = Callable[[Check], Callable[[GenerateReport], None]]


def choose_checks(spec: CheckSpec) -> list[Check]:
    """``all``, one name, or a comma-separated list (``neg,cond``), in the order given, without repeats."""
    names = [part.strip() for part in spec.replace(";", ",").split(",") if part.strip()]
    if not names:
        raise UnknownCheckError("--check names no check (give a name such as neg, a list such as neg,cond, or all)")
    if any(name.lower() == "all" for name in names):
        return list(all_checks())
    return list({c.name: c for c in (get_check(name) for name in names)}.values())


async def generate_checks(
    checks: Sequence[Check],
    pool: Sequence[ForecastingQuestion],
    out_dir: OutDir,
    options: GenerateOptions,
    makers: Makers,
    llm: LLM,
    track: Track | None = None,
) -> tuple[list[GenerateReport], list[tuple[str, str]]]:
    """The reports of the checks generated, and ``(check, reason)`` for those the questions cannot make
    (fewer base questions than the check needs): the others go on."""
    judge = makers.judge or makers.model
    inst = LLMInstantiator(llm, makers.model) if makers.instantiator == "llm" else TemplateInstantiator()
    verifier = TupleVerifier(llm, judge, makers.threshold) if makers.verify else None
    scorer = (llm, judge) if makers.relevance == "llm" else (None, None)
    reports, skipped = [], []
    for check in checks:
        ranker = None if makers.relevance == "off" else RelevanceRanker(make_embedder(makers.embeddings, llm), *scorer)
        shown = track(check) if track is not None else None
        try:
            report = await generate(check, pool, inst, out_dir, options, ranker=ranker, verifier=verifier,
                                    on_progress=shown)  # fmt: skip
        except InputError as exc:  # e.g. fewer base questions than the check needs
            skipped.append((check.name, str(exc)))
            continue
        reports.append(report)
    return reports, skipped


def shortfall(report: GenerateReport, options: GenerateOptions, questions: int) -> str | None:
    """One sentence when fewer tuples than asked were made, saying which limit was reached (None: enough)."""
    if report.total >= options.n:
        return None
    why = []
    cut = report.rejected.get("relevance: below the embedding prefilter", 0)
    if cut:
        kept = report.candidates - cut
        why.append(f"the relevance prefilter kept {kept} of {report.candidates} candidates (3 x n unless --prefilter)")
    if report.rejected.get("relevance: not in the top", 0):
        why.append(f"--top {options.top} kept only the best {options.top}")
    failures = report.rejected.get("relevance: scoring failed", 0)
    if failures:
        why.append(f"{failures} relevance scoring(s) failed")
    rejected = sum(v for k, v in report.rejected.items() if not k.startswith("relevance"))
    if rejected:
        why.append(f"{rejected} made this run were rejected (reasons in {report.rejects_path})")
    if report.skipped:
        why.append(f"{report.skipped} skipped: {NO_HORIZON} (--instantiator llm writes chains for others)")
    if not cut and not report.rejected.get("relevance: not in the top", 0):
        why.append(
            f"only {report.candidates} candidate base assignment(s) from {questions} question(s) "
            "(give more questions, or --candidates)"
        )
    return f"{report.check}: {report.total} of the {options.n} tuples asked for; the candidates ran out: " + "; ".join(
        why
    )


def out_directory(out_dir: OutDir) -> Path:
    """``out_dir``, refused in one sentence when it is a file (it is made when the first tuple is written)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"{out_dir} is a file, not a directory: --out takes a directory")
    return out_dir


def around_question(
    pool: Sequence[ForecastingQuestion], question_id: AroundId, where: str | Path
) -> ForecastingQuestion | None:
    """The question every tuple must contain (appendix J), found by id in the pool read from ``where``
    (None when there is no ``question_id``)."""
    if question_id is None:
        return None
    found = next((q for q in pool if q.id == question_id), None)
    if found is None:
        raise InputError(f"no question with id {question_id} in {where}")
    return found
