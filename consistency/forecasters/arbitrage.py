"""ArbitrageForecaster (paper §5, appendix G): make a forecaster more consistent by arbitraging
its answer on x against its answers on questions logically related to x.

For each check in order, a tuple of the check is built with x in its first field, the base
forecaster is asked every other field, and x's forecast becomes the price an arbitrageur with
weight ``w`` on x (1 on the others) would set; ``w`` then grows by the number of other fields.
``depth = r`` wraps the forecaster r times (⟨F⟩ʳ asks ⟨F⟩ʳ⁻¹ for every field). One memo is
shared by the whole tree, so a question is forecast at most once per depth in a run and the
base model never sees the same prompt twice.

Each forecast's metadata is its call tree in the shape of the paper's published files (a list:
x's own answer, then per check the other fields with their answers and nested trees) plus the
weights, prices, violation and certificate of each step. In a run directory the nested trees are
kept out of ``forecasts.jsonl``: ``arbitrage_steps.jsonl`` has one line per (depth, question)
holding that node's one-level tree, and a child's ``elicitation_metadata`` refers to its line.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from ..checks import Check, get_check
from ..jsonl import AppendLog, read_jsonl
from ..metrics import ARBITRAGE_THRESHOLD
from ..metrics.arbitraging import Step, arbitrage_step, step_weights, weight_rule
from ..models import Forecast, ForecastingQuestion
from ..prompts import question_block, render
from ..store.layout import SIDECAR
from .base import Forecaster, ForecastError, note_call

log = logging.getLogger(__name__)

#: Namespace of the ids of generated related questions.
NAMESPACE = uuid.UUID("8c7f6b1e-2a44-4f0b-b7a9-3e5d1c0f9a27")
_SHORT = {"NEGATION": "N", "PARAPHRASE": "P", "EXPEVIDENCE": "EE"}


class RelatedQuestion(BaseModel):
    title: str = Field(min_length=8, description="A self-contained yes/no question.")
    body: str = Field(min_length=20, description="Precise resolution criteria.")


class RelatedQuestions(BaseModel):
    """Questions about the same events as a source question, to combine with it logically."""

    questions: list[RelatedQuestion] = Field(min_length=1)


class BudgetExceeded(ForecastError):
    """More base forecasts than ``max_calls`` were needed for one question."""


@dataclass
class _Budget:
    limit: int | None
    spent: int = 0

    def spend(self) -> None:
        self.spent += 1
        if self.limit is not None and self.spent > self.limit:
            raise BudgetExceeded(
                f"call budget exhausted: the tree needs more than max_calls={self.limit} base forecasts"
            )


_budget: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar("arbitrage_budget", default=None)


@dataclass(frozen=True)
class Node:
    """⟨F⟩ʳ on one question: its probability and its call tree (the base's metadata at r = 0)."""

    prob: float
    tree: Any


@dataclass
class ArbitrageStats:
    """Counts over the forecaster's lifetime, for benchmarks and the cost table."""

    base_calls: int = 0  # distinct base forecasts made (memo misses at depth 0)
    memo_hits: int = 0  # node requests answered from the memo, at any depth
    tuples: int = 0  # tuples built


def text_key(question: ForecastingQuestion) -> str:
    """Questions are the same for the memo when forecasters see the same text."""
    return hashlib.sha256(question_block(question).encode()).hexdigest()[:16]


class ArbitrageForecaster(Forecaster):
    """⟨base⟩ʳ arbitraged on ``checks`` (in order, repeats allowed: ``["expev"] * 4``).

    ``instantiator`` is ``"llm"`` (fields written by ``model``), ``"template"`` (exact fixed
    wordings, no model) or any object with ``bases_for``/``instantiate``. Checks whose tuples need
    more base questions (Q, R) take them from ``related``: ``"generate"`` (written around x by
    ``model``, resolving when x does) or a questions file to draw from. ``weights`` is
    ``accumulate`` (the paper's rule), ``equal``, or ``cf`` (the published code's rule, only for
    reproducing its files). ``only_if_violated`` leaves x alone when a tuple's violation is below
    the metric's threshold. ``max_calls`` caps the base forecasts one question may need.
    ``arbitrage:SPEC`` means base SPEC.
    """

    name = "arbitrage"

    def __init__(
        self,
        base: Forecaster | str | None = None,
        checks: Sequence[str] = ("neg",),
        depth: int = 1,
        instantiator: Any = "llm",
        related: str = "generate",
        weights: str = "accumulate",
        only_if_violated: bool = False,
        seed: int = 0,
        model: str | None = None,
        max_calls: int | None = None,
    ) -> None:
        from .loading import load_forecaster

        if base is None and model is None:
            raise ValueError("ArbitrageForecaster needs a base forecaster (-F base=SPEC, or arbitrage:SPEC)")
        if base is None:  # arbitrage:SPEC
            base, model = model, None
        self.base = base if isinstance(base, Forecaster) else load_forecaster(base)
        base_model = self.base.config().get("model")
        self.model = model or (base_model if isinstance(base_model, str) else None)
        if isinstance(checks, str):
            checks = [c.strip() for c in checks.replace(";", ",").split(",") if c.strip()]
        self.checks: list[Check] = [get_check(c) for c in checks]
        if not self.checks:
            raise ValueError("give at least one check (e.g. -F checks=neg)")
        if depth < 0:
            raise ValueError(f"depth must be 0 or more, got {depth}")
        self.depth, self.seed = int(depth), int(seed)
        self.weights = weight_rule(weights)
        self.only_if_violated = only_if_violated
        self.max_calls = max_calls
        if isinstance(instantiator, str) and instantiator not in ("llm", "template"):
            raise ValueError(f"instantiator must be 'llm', 'template' or an Instantiator object, got {instantiator!r}")
        if isinstance(instantiator, str) and instantiator == "llm" and self.model is None:
            raise ValueError("the llm instantiator needs a model: pass -F model=SPEC or -F instantiator=template")
        self.instantiator = instantiator
        self.related = related
        self.pool = _load_pool(related) if related != "generate" else None
        self.stats = ArbitrageStats()
        self._memo: dict[tuple[int, str], asyncio.Future[Node]] = {}
        self._tuples: dict[tuple[str, int], asyncio.Future[dict[str, ForecastingQuestion]]] = {}
        self._groups: dict[tuple[str, int], asyncio.Future[list[list[ForecastingQuestion]]]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sidecar: AppendLog | None = None
        self._written: set[tuple[int, str]] = set()

    # ----------------------------------------------------------------- identity and plumbing
    @property
    def label(self) -> str:
        codes = [_SHORT.get(c.name, c.name.lower()) for c in self.checks]
        runs: list[tuple[int, str]] = []
        for code in codes:  # four EXPEVIDENCE in a row read 4xEE
            if runs and runs[-1][1] == code:
                runs[-1] = (runs[-1][0] + 1, code)
            else:
                runs.append((1, code))
        name = "".join(code if n == 1 else f"{n}x{code}" for n, code in runs)
        return f"arbitrage-{name}{self.depth}_{self.base.label}"

    def children(self) -> Sequence[Forecaster]:
        return [self.base]

    def use_run_dir(self, path: Path | None) -> None:
        super().use_run_dir(path)
        if self._sidecar is not None:
            self._sidecar.close()
            self._sidecar = None
        if path is not None:
            self._sidecar = AppendLog(Path(path) / SIDECAR, lock=False)  # the run directory's lock covers it
            self._written = {(line["depth"], line["key"]) for line in self._sidecar.existing}

    # ----------------------------------------------------------------- forecasting
    async def forecast(self, question: ForecastingQuestion) -> Forecast:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # futures belong to one event loop: a new loop is a new run
            self._loop, self._memo, self._tuples, self._groups = loop, {}, {}, {}
        token = _budget.set(_Budget(self.max_calls))
        try:
            node = await self._node(question, self.depth)
        finally:
            _budget.reset(token)
        return Forecast(prob=node.prob, metadata=node.tree)

    async def _node(self, question: ForecastingQuestion, r: int) -> Node:
        key = (r, text_key(question))
        future = self._memo.get(key)
        if future is None:
            future = self._memo[key] = asyncio.ensure_future(self._compute(question, r))
        else:
            self.stats.memo_hits += 1
        try:  # shielded: one question timing out must not cancel work another one shares
            return await asyncio.shield(future)
        except BudgetExceeded:
            if self._memo.get(key) is future:  # another question's budget may well allow it
                del self._memo[key]
            raise

    async def _compute(self, question: ForecastingQuestion, r: int) -> Node:
        if r == 0:
            return await self._base(question)
        x = await self._node(question, r - 1)
        p, w = x.prob, 1.0
        tree: list[dict[str, Any]] = [
            {
                "name": self.checks[0].field_names[0],
                "elicited_prob": x.prob,
                "elicitation_metadata": self._sub(x, question, r - 1),
            }
        ]
        for j, check in enumerate(self.checks):
            slot, others = check.field_names[0], check.field_names[1:]
            if check.question_types[slot] != question.question_type:  # e.g. a conditional question in NEGATION
                reason = f"{check.name} takes a {check.question_types[slot]} question, x is {question.question_type}"
                tree.append({"name": check.class_name, "check": check.name, "data": {}, "skipped": reason})
                continue
            fields = await self._tuple(question, j, check)
            answers = await asyncio.gather(*(self._node(fields[f], r - 1) for f in others))
            weights, w_next = step_weights(self.weights, check.field_names, w)
            step = arbitrage_step(
                check, {slot: p, **{f: a.prob for f, a in zip(others, answers, strict=True)}}, weights
            )
            applied = not (self.only_if_violated and step.violation <= ARBITRAGE_THRESHOLD)
            metas = [self._sub(a, fields[f], r - 1) for f, a in zip(others, answers, strict=True)]
            tree.append(_step_entry(check, fields, others, answers, metas, step, applied))
            p, w = (step.after if applied else p), w_next
        self._write_sidecar(r, question, p, tree)
        return Node(p, tree)

    async def _base(self, question: ForecastingQuestion) -> Node:
        budget = _budget.get()
        if budget is not None:
            budget.spend()
        self.stats.base_calls += 1
        outcome = await self.base.forecast_safely(question)
        if outcome.forecast is None:
            raise ForecastError(f"base forecast failed for {question.title[:80]!r}: {outcome.error}", outcome.raw)
        return Node(outcome.forecast.prob, outcome.forecast.metadata)

    # ----------------------------------------------------------------- tuples
    async def _tuple(self, question: ForecastingQuestion, j: int, check: Check) -> dict[str, ForecastingQuestion]:
        key = (text_key(question), j)
        future = self._tuples.get(key)
        if future is None:
            future = self._tuples[key] = asyncio.ensure_future(self._build_tuple(question, j, check))
        return await asyncio.shield(future)

    def _instantiator(self) -> Any:
        if not isinstance(self.instantiator, str):
            return self.instantiator
        if self.instantiator == "template":
            from ..generate.template import TemplateInstantiator

            return TemplateInstantiator()
        from ..generate.llm import LLMInstantiator

        if getattr(self, "llm", None) is None:
            raise ForecastError("no LLM session for the llm instantiator")
        return LLMInstantiator(self.llm, self.model)  # type: ignore[arg-type]

    async def _build_tuple(self, question: ForecastingQuestion, j: int, check: Check) -> dict[str, ForecastingQuestion]:
        instantiator = self._instantiator()
        names = instantiator.bases_for(check)
        slot_base = check.formulas[check.field_names[0]].name  # type: ignore[attr-defined]  # x is a bare base
        # x's own resolution must not leak into the fields written from it
        x = question.model_copy(update={"resolution": None})
        others = [b for b in names if b != slot_base]
        related = await self._related(question, j, len(others)) if others else []
        bases = {slot_base: x, **dict(zip(others, related, strict=True))}
        try:
            made = await instantiator.instantiate(check, bases)
        except ForecastError:
            raise
        except Exception as exc:
            raise ForecastError(f"could not build the {check.name} tuple (check {j + 1}): {exc}") from None
        self.stats.tuples += 1
        fields = {f: ForecastingQuestion.model_validate(made[f]) for f in check.field_names}
        fields[check.field_names[0]] = question
        return fields

    async def _related(self, question: ForecastingQuestion, j: int, k: int) -> list[ForecastingQuestion]:
        """``k`` questions about the same events as x; check ``j`` gets its own (seeded by ``j``)."""
        if self.pool is not None:
            key = (text_key(question), k)
            if key not in self._groups:  # ranked once per question, shared by its checks
                seed = [self.seed, int(key[0], 16)]
                self._groups[key] = asyncio.ensure_future(_ranked_groups(self.pool, question, k, seed))
            groups = await asyncio.shield(self._groups[key])
            return groups[j % len(groups)]  # the j-th most related group: repeated checks differ
        if self.model is None or getattr(self, "llm", None) is None:
            raise ForecastError("related questions need a model (-F model=SPEC) or a pool (-F related=FILE)")
        prompt = render(
            "arbitrage_related",
            n=str(k),
            resolve_by=question.resolution_date.date().isoformat()
            if question.resolution_date
            else "its resolution date",
            variant=str(j + 1 + 1000 * self.seed),
            source=question_block(question),
        )
        result = await self.llm.structured(self.model, [{"role": "user", "content": prompt}], RelatedQuestions)
        note_call(result)
        if not result.ok:
            raise ForecastError(f"related questions for check {j + 1}: {result.error}", result.raw)
        found = [q for q in result.value.questions if q.title.strip() != question.title.strip()][:k]
        if len(found) < k:
            raise ForecastError(f"related questions for check {j + 1}: the model wrote {len(found)}, {k} needed")
        return [
            ForecastingQuestion(
                id=str(uuid.uuid5(NAMESPACE, f"{q.title}\x00{q.body}")),
                title=q.title.strip(),
                body=q.body.strip(),
                resolution_date=question.resolution_date,
                created_date=question.created_date,
                data_source="arbitrage-related",
            )
            for q in found
        ]

    # ----------------------------------------------------------------- sidecar
    def _sub(self, node: Node, question: ForecastingQuestion, depth: int) -> Any:
        """A child's tree as recorded: in a run directory, trees below the top level are the
        sidecar's lines, referred to by (depth, key); outside one, the whole tree inline."""
        if self._sidecar is None or depth < 1:
            return node.tree
        return {"arbitrage_steps": SIDECAR, "depth": depth, "key": text_key(question)}

    def _write_sidecar(self, r: int, question: ForecastingQuestion, prob: float, tree: list[dict[str, Any]]) -> None:
        key = text_key(question)
        if self._sidecar is None or (r, key) in self._written:
            return
        self._written.add((r, key))
        line = {"depth": r, "key": key, "question_id": question.id, "title": question.title, "prob": prob}
        self._sidecar.append(line | {"tree": tree})


def _step_entry(
    check: Check,
    fields: dict[str, ForecastingQuestion],
    others: Sequence[str],
    answers: Sequence[Node],
    metas: Sequence[Any],
    step: Step,
    applied: bool,
) -> dict[str, Any]:
    """One check of a call tree: the published shape (``name``, ``data``) plus how the step went."""
    data = {
        f: {**fields[f].model_dump(mode="json"), "elicited_prob": a.prob, "elicitation_metadata": m}
        for f, a, m in zip(others, answers, metas, strict=True)
    }
    return {
        "name": check.class_name,
        "check": check.name,
        "data": data,
        "weights": step.weights,
        "prices": step.prices,
        "violation": step.violation,
        "certificate": {"gap": step.gap},
        "prob_before": step.before,
        "prob_after": step.after if applied else step.before,
        "applied": applied,
    }


def _load_pool(path: str) -> list[ForecastingQuestion]:
    source = Path(path)
    if not source.is_file():
        raise ValueError(f"related={path!r}: give 'generate' or a questions file (JSONL); {source} is not a file")
    pool: list[ForecastingQuestion] = []
    for _, item in read_jsonl(source, ForecastingQuestion):
        if isinstance(item, list):
            raise ValueError(str(item[0]))
        pool.append(item)
    if not pool:
        raise ValueError(f"{source}: no questions")
    log.info("related questions drawn from %s (%d questions)", source, len(pool))
    return pool


#: Candidate groups of related questions drawn from a pool before ranking them by similarity to x.
POOL_CANDIDATES = 64


async def _ranked_groups(
    pool: Sequence[ForecastingQuestion], x: ForecastingQuestion, k: int, seed: list[int]
) -> list[list[ForecastingQuestion]]:
    """Groups of ``k`` distinct pool questions other than x (from x's category when it has enough),
    most related to x first: a seeded sample ranked by the generators' relevance ranking
    (embedding similarity of the titles, lexical: no model call)."""
    from ..embeddings import LexicalEmbedder
    from ..generate.relevance import RelevanceRanker

    others = [q for q in pool if q.id != x.id and q.title != x.title]
    category = (x.metadata or {}).get("category")
    near = [q for q in others if category is not None and (q.metadata or {}).get("category") == category]
    candidates = near if len(near) >= k else others
    if len(candidates) < k:
        raise ForecastError(f"the related-question pool has {len(candidates)} questions besides x, {k} needed")
    rng = np.random.default_rng(seed)
    seen, groups = set(), []
    for _ in range(4 * POOL_CANDIDATES):
        picked = tuple(int(i) for i in rng.choice(len(candidates), size=k, replace=False))
        if picked not in seen:
            seen.add(picked)
            groups.append({"P": x, **{f"B{n}": candidates[i] for n, i in enumerate(picked)}})
        if len(groups) >= POOL_CANDIDATES:
            break
    ranked = await RelevanceRanker(LexicalEmbedder()).rank(groups, None, len(groups))
    return [[r.bases[f"B{n}"] for n in range(k)] for r in ranked]
