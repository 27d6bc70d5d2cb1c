"""The adversarial search: spend at most N forecasts of a target where it contradicts itself most.

Rounds of ``width`` tuples. Each slot goes to a candidate family chosen by UCB1 (the mean reward of
its tuples so far plus an exploration bonus; a tuple's reward is its violation, saturating at ten
times the threshold); the family proposes around the violations found so far (at least the ``beam`` worst tuples), and
its first tuple not yet evaluated that fits in the budget is taken. The round's new questions are
forecast together, each tuple is scored, and the rewards update the families.

Why UCB1 and not successive halving: the budget is a hard cap that may end the search at any
round, and families are not stationary (a mutation works on whatever is weakest *now*); UCB1 is
anytime and keeps re-testing families whose luck may turn. It is also deterministic, so a killed
search is resumed by replaying its own steps against the journal (:mod:`.store`), at no cost.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..checks import Check
from ..embeddings import LexicalEmbedder
from ..forecasters import Forecaster
from ..generate.verify import TupleVerifier
from ..llm import LLM
from ..metrics.scoring import ScoreParams, score_forecasts
from ..models import ForecastEntry, ForecastingQuestion, parse_forecast
from ..outcomes import forecast_row
from .families import Candidate, Family, Fits, relation_tuple
from .mutations import Lineage, Variant, model_variant, template_variant
from .options import SearchSettings
from .store import Journal, question_key, tuple_key

log = logging.getLogger(__name__)


@dataclass
class SearchOptions(SearchSettings):
    """How the search spends its budget and scores what it finds (everything here is recorded with the attack)."""

    params: ScoreParams = field(default_factory=ScoreParams)


@dataclass
class Evaluated:
    """A tuple the search looked at: scored, or why not (``error``)."""

    key: str
    check: Check
    tuple: dict[str, Any]
    family: str
    lineage: dict[str, Any]
    round: int
    sampler: str = "search"
    cost: int = 0  # new forecasts charged for it
    probs: list[float] | None = None  # the forecasts in the check's columns (a categorical field: one per outcome)
    forecasts: dict[str, dict[str, Any]] | None = None  # each field's forecast (prob, probs or cdf)
    violation: float | None = None
    frequentist: float | None = None
    error: str | None = None

    def reward(self, threshold: float) -> float:
        return 0.0 if self.violation is None else min(1.0, self.violation / (10 * threshold))


class Arm:
    def __init__(self, family: Family) -> None:
        self.family, self.pulls, self.total = family, 0, 0.0

    def index(self, t: int, c: float) -> float:
        if self.pulls == 0:
            return math.inf
        return self.total / self.pulls + c * math.sqrt(math.log(max(t, 1)) / self.pulls)


class SearchView:
    """The search as its families see it (implements :class:`~.families.SearchState`): the pool, the
    seeds, the weakest tuples, and helpers that journal their work."""

    def __init__(self, search: Search) -> None:
        self._s = search
        self.pool: list[ForecastingQuestion] = search.pool
        self.seeds: dict[str, list[dict[str, Any]]] = search.seeds
        self.check_names = {c.name for c in search.checks}
        self.max_depth = search.options.max_depth
        self._weak: list[Evaluated] = []

    def weak(self) -> list[Evaluated]:
        """Every violation found so far (at least the ``beam`` most violated tuples), worst first."""
        return self._weak

    def refresh(self) -> None:
        scored = [e for e in self._s.evaluated if e.sampler == "search" and e.violation is not None]
        order = sorted(range(len(scored)), key=lambda i: (-(scored[i].violation or 0.0), i))
        threshold = self._s.options.params.arbitrage_threshold
        above = sum((scored[i].violation or 0.0) > threshold for i in order)
        self._weak = [scored[i] for i in order[: max(self._s.options.beam, above)]]

    def companions(
        self, questions: Sequence[ForecastingQuestion], k: int, fits: Fits | None = None
    ) -> list[ForecastingQuestion]:
        """``k`` pool questions most related to ``questions`` (same category first, then by similarity), among
        those ``fits`` accepts."""
        if k <= 0:
            return []
        taken = {q.id for q in questions}
        first = questions[0] if questions else None
        category = Lineage.of(first).category if first else None
        sims = self._s.similarities(first) if first else np.zeros(len(self.pool))
        order = sorted(
            (i for i, q in enumerate(self.pool) if q.id not in taken and (fits is None or fits(q))),
            key=lambda i: ((Lineage.of(self.pool[i]).category != category), -sims[i], i),
        )
        return [self.pool[i] for i in order[:k]]

    def similarity(self, questions: Sequence[ForecastingQuestion]) -> float:
        return self._s.mean_similarity(questions)

    async def variant(self, original: ForecastingQuestion, mutation: str, index: int, *, model: bool) -> Variant | None:
        return await self._s.variant(original, mutation, index, model)


class Search:
    """One attack: the target, where to start, the families, and the journal that makes it resumable."""

    def __init__(
        self,
        forecaster: Forecaster,
        families: Sequence[Family],
        *,
        checks: Sequence[Check],
        pool: list[ForecastingQuestion],
        seeds: dict[str, list[dict[str, Any]]],
        journal: Journal,
        options: SearchOptions,
        target_llm: LLM,
        generator: tuple[LLM, str] | None = None,
        on_round: Callable[[Search], None] | None = None,
    ) -> None:
        self.forecaster, self.checks, self.pool, self.seeds = forecaster, list(checks), pool, seeds
        self.journal, self.options, self.target_llm, self.generator = journal, options, target_llm, generator
        self.arms = [Arm(f) for f in families]
        self.evaluated: list[Evaluated] = []
        self.seen: set[str] = set()
        self.rejected: set[str] = set()  # tuples the verifier turned down (logged once)
        self.spent: dict[str, set[str]] = {"search": set(), "baseline": set()}
        self.asked = 0  # forecasts actually requested in this process
        self.rounds = 0
        self.on_round = on_round
        self.state = SearchView(self)
        self._verifier = TupleVerifier(generator[0], generator[1], options.verify_threshold) if generator else None
        self._vectors: np.ndarray | None = None
        self._index = {q.id: i for i, q in enumerate(pool)}

    # ------------------------------------------------------------------ budget
    def used(self, sampler: str) -> int:
        """Forecasts charged to ``sampler``, this session and earlier ones (the budget's measure)."""
        return len(self.spent[sampler] | self.journal.charged[sampler])

    def _fits(self, sampler: str, keys: set[str], pending: set[str]) -> bool:
        fresh = keys - self.spent[sampler] - pending
        if len(self.spent[sampler]) + len(pending) + len(fresh) > self.options.budget:
            return False  # the replayed path: as in the session that first made this step
        union = self.spent[sampler] | self.journal.charged[sampler] | pending | keys
        return len(union) <= self.options.budget  # the hard cap, whatever happened before a restart

    # ------------------------------------------------------------------ the search
    async def run(self) -> None:
        await self._embed()
        # The loop measures this session's own path, not the journal's charges: a resumed search first
        # replays the steps the journal already paid for (answers read back), then goes on; _fits keeps
        # the hard cap over both.
        while len(self.spent["search"]) < self.options.budget:
            batch = await self._choose()
            if not batch:
                break
            await self._evaluate(batch, "search")
            self.rounds += 1
            if self.on_round is not None:
                self.on_round(self)
        log.info("search: %d rounds, %d forecasts", self.rounds, self.used("search"))

    async def _choose(self) -> list[tuple[Arm, Candidate, set[str]]]:
        self.state.refresh()
        batch: list[tuple[Arm, Candidate, set[str]]] = []
        pending: set[str] = set()
        closed: set[int] = set()
        while len(batch) < self.options.width and len(closed) < len(self.arms):
            t = sum(a.pulls for a in self.arms) + 1
            i = max(
                (j for j in range(len(self.arms)) if j not in closed),
                key=lambda j: (self.arms[j].index(t, self.options.exploration), -j),
            )
            found = await self._next(self.arms[i], pending)
            if found is None:
                closed.add(i)
                continue
            candidate, keys = found
            self.arms[i].pulls += 1  # counted now, so one round spreads over families
            pending |= keys - self.spent["search"]
            batch.append((self.arms[i], candidate, keys))
        return batch

    async def _next(self, arm: Arm, pending: set[str], scan: int = 400) -> tuple[Candidate, set[str]] | None:
        proposals = arm.family.propose(self.state)
        iterator = proposals.__aiter__() if hasattr(proposals, "__aiter__") else _aiter(proposals)
        for _ in range(scan):
            try:
                candidate = await iterator.__anext__()
            except StopAsyncIteration:
                return None
            questions = candidate.questions()
            key = tuple_key(candidate.check, questions)
            if key in self.seen:
                continue
            keys = {question_key(q) for q in questions}
            if not self._fits("search", keys, pending):
                continue
            self.seen.add(key)
            if key in self.journal.verdicts:  # a model-written pair verified when its variant was made
                candidate.tuple["metadata"]["verification"] = self.journal.verdicts[key]
            if candidate.verify and not await self._verified(candidate, key):
                continue
            return candidate, keys
        return None

    async def _verified(self, candidate: Candidate, key: str) -> bool:
        verdict = self.journal.verdicts.get(key)
        if verdict is None:
            assert self._verifier is not None
            result = await self._verifier.verify(candidate.check, candidate.tuple)
            verdict = result.model_dump()
            self.journal.verdict(key, verdict)
        candidate.tuple["metadata"]["verification"] = verdict
        if not verdict["passed"] and key not in self.rejected:
            self.rejected.add(key)
            reason = f"verification: score {verdict['score']} ({verdict['reasons'][:200]})"
            self.evaluated.append(
                Evaluated(
                    key,
                    candidate.check,
                    candidate.tuple,
                    candidate.family,
                    candidate.lineage,
                    self.rounds,
                    error=reason,
                )
            )
        return bool(verdict["passed"])

    # ------------------------------------------------------------------ forecasting and scoring
    async def _evaluate(self, batch: list[tuple[Arm | None, Candidate, set[str]]], sampler: str) -> None:
        new = [k for _, _, keys in batch for k in sorted(keys) if k not in self.spent[sampler]]
        new = list(dict.fromkeys(new))
        self.journal.charge(sampler, new)
        self.spent[sampler].update(new)
        questions = {question_key(q): q for _, c, _ in batch for q in c.questions()}
        todo = [questions[k] for k in sorted(questions) if k not in self.journal.answers]
        if todo:
            await self._ask(todo)
        for arm, candidate, keys in batch:
            questions_ = candidate.questions()
            record = Evaluated(
                tuple_key(candidate.check, questions_), candidate.check, candidate.tuple, candidate.family,
                candidate.lineage, self.rounds, sampler, cost=len(set(new) & keys),
            )  # fmt: skip
            answers = [self.journal.answers[question_key(q)] for q in questions_]
            failed = [a["error"] for a in answers if a["forecast"] is None]
            if failed:
                record.error = f"no forecast: {failed[0]}"
            else:
                self._score(record, questions_, [a["forecast"] for a in answers])
            self.evaluated.append(record)
            if arm is not None:
                arm.total += record.reward(self.options.params.arbitrage_threshold)

    def _score(self, record: Evaluated, questions: list[ForecastingQuestion], forecasts: list[dict[str, Any]]) -> None:
        """The tuple's forecasts in its check's columns, scored; a tuple they do not fit is recorded as an error."""
        check = record.check
        try:
            entries = {
                f: ForecastEntry(question=q, forecast=parse_forecast(q, forecast))
                for f, q, forecast in zip(check.field_names, questions, forecasts, strict=True)
            }
            row = forecast_row(check, entries)
        except ValueError as exc:  # TupleShapeError, or a forecast of the wrong kind for its question
            record.error = f"unscorable: {exc}"
            return
        record.forecasts = dict(zip(check.field_names, forecasts, strict=True))
        record.probs = [float(v) for v in row]
        scores = score_forecasts(check, [record.probs], params=self.options.params)
        record.violation = _clean(float(scores.values("default")[0]))
        record.frequentist = _clean(float(scores.values("frequentist")[0]))

    async def _ask(self, questions: list[ForecastingQuestion]) -> None:
        def journal(outcome) -> None:
            forecast = outcome.forecast.model_dump(mode="json", exclude={"metadata"}) if outcome.forecast else None
            self.journal.answer(question_key(outcome.question), forecast, outcome.error, outcome.question.title)

        self.asked += len(questions)
        await self.forecaster.forecast_many(
            questions, concurrency=self.options.concurrency, timeout=self.options.timeout, on_outcome=journal
        )

    # ------------------------------------------------------------------ uniform baseline
    async def baseline(self) -> None:
        """Seed tuples drawn uniformly (all checks pooled) until the same budget is spent: the comparison."""
        everything = [(name, i) for name in sorted(self.seeds) for i in range(len(self.seeds[name]))]
        rng = np.random.default_rng([self.options.seed, 1])
        order = rng.permutation(len(everything))
        by_name = {c.name: c for c in self.checks}
        pending: set[str] = set()
        batch: list[tuple[Arm | None, Candidate, set[str]]] = []
        for j in order:
            name, i = everything[int(j)]
            candidate = Candidate(by_name[name], self.seeds[name][i], "uniform", {"seed": i})
            keys = {question_key(q) for q in candidate.questions()}
            if not self._fits("baseline", keys, pending):
                continue
            pending |= keys - self.spent["baseline"]
            batch.append((None, candidate, keys))
            if len(batch) >= 4 * self.options.width:
                await self._evaluate(batch, "baseline")
                batch, pending = [], set()
        if batch:
            await self._evaluate(batch, "baseline")

    # ------------------------------------------------------------------ variants and relevance
    async def variant(self, original: ForecastingQuestion, mutation: str, index: int, model: bool) -> Variant | None:
        if not model:
            return template_variant(original, mutation, self.pool, index)
        if index > 0 or self.generator is None:
            return None
        key = f"{mutation}|{question_key(original)}|{original.id}"
        if key not in self.journal.variants:
            made = await model_variant(self.generator[0], self.generator[1], original, mutation)
            if isinstance(made, str):
                self.journal.variant(key, None, made)
            else:
                value = {
                    "question": made.question.model_dump(mode="json"),
                    "relation": made.relation,
                    "source": made.source,
                }
                self.journal.variant(key, value)
        stored = self.journal.variants[key]
        if stored is None:
            return None
        question = ForecastingQuestion.model_validate(stored["question"])
        variant = Variant(question, mutation, stored["relation"], stored["source"], original.id)
        pair = relation_tuple(original, variant)
        if pair is None:
            return variant  # a different question: each tuple that uses it is verified instead
        # A variant that should mean the same (or the opposite) is verified once, paired with its original,
        # before any tuple uses it: a drifted variant would make false alarms wherever it goes.
        candidate = Candidate(
            pair[0], pair[1], f"llm:{mutation}", {"weak_question": {"id": original.id}, "role": "pair"}
        )
        return variant if await self._verified(candidate, tuple_key(pair[0], candidate.questions())) else None

    async def _embed(self) -> None:
        if self.pool:
            self._vectors = await LexicalEmbedder().embed([q.title for q in self.pool])

    def similarities(self, question: ForecastingQuestion) -> np.ndarray:
        if self._vectors is None or question.id not in self._index:
            return np.zeros(len(self.pool))
        return self._vectors @ self._vectors[self._index[question.id]]

    def mean_similarity(self, questions: Sequence[ForecastingQuestion]) -> float:
        rows = [self._index[q.id] for q in questions if q.id in self._index]
        if self._vectors is None or len(rows) < 2:
            return 1.0
        sims = [float(self._vectors[a] @ self._vectors[b]) for n, a in enumerate(rows) for b in rows[n + 1 :]]
        return round(float(np.mean(sims)), 4)


def _clean(value: float) -> float:
    """Rounding noise of a coherent forecast (1e-17) is no violation: it would make ratios meaningless."""
    return 0.0 if abs(value) < 1e-12 else value


async def _aiter(items):
    for item in items:
        yield item
        await asyncio.sleep(0)
