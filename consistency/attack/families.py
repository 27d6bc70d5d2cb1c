"""Candidate families: where the search looks next, around the most violated tuples found so far.

A family is anything with a ``name`` and a ``propose(state)`` method yielding :class:`Candidate`
tuples (a plain or an async generator), best first; the search takes the first one it has not
evaluated yet. Built in: one family per check (that check over the weak tuples' base questions,
then its seed tuples; a MONOTONE chain over those with a "by DATE" deadline; a check of a multiple-choice or
numeric question over such a question) and one per mutation (a variant of a weak question put in its place,
and the variant paired with its original: PARAPHRASE, NEGATION, or NUMERIC_PARAPHRASE for a numeric
question's). Write your own to plug in another proposal strategy.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..checks import Check, get_check
from ..generate import TemplateInstantiator
from ..generate import categorical as made_from_one
from ..generate.chains import NoHorizon
from ..generate.tuples import assemble_tuple
from ..models import ForecastingQuestion
from .mutations import MODEL_MUTATIONS, TEMPLATE_MUTATIONS, Lineage, Variant, applies, depth

_TEMPLATE = TemplateInstantiator()

#: Whether a question may be a base of some check (:func:`base_fits`).
Fits = Callable[[ForecastingQuestion], bool]


@dataclass
class Candidate:
    """A tuple to evaluate: its check, the tuple (fields + ``metadata``), where it came from.

    ``verify`` asks for the model verifier before any forecast is spent (tuples with model-written text).
    """

    check: Check
    tuple: dict[str, Any]
    family: str
    lineage: dict[str, Any] = field(default_factory=dict)
    verify: bool = False

    def questions(self) -> list[ForecastingQuestion]:
        return [ForecastingQuestion.model_validate(self.tuple[f]) for f in self.check.field_names]


class WeakTuple(Protocol):
    """A violated tuple the search found (the search's ``Evaluated``): what a family builds around."""

    key: str
    check: Check
    tuple: dict[str, Any]  # last: the name shadows the builtin in this class body


class SearchState(Protocol):
    """What a family sees of the search driving it. Declared here, by its consumer, so the families
    never import the search that implements it (``search.SearchView``)."""

    seeds: dict[str, list[dict[str, Any]]]
    check_names: set[str]
    max_depth: int

    def weak(self) -> Sequence[WeakTuple]:
        """Every violation found so far, worst first."""
        ...

    def companions(
        self, questions: Sequence[ForecastingQuestion], k: int, fits: Fits | None = None
    ) -> list[ForecastingQuestion]:
        """``k`` pool questions most related to ``questions`` (among those ``fits`` accepts)."""
        ...

    def similarity(self, questions: Sequence[ForecastingQuestion]) -> float:
        """How related ``questions`` are (mean pairwise similarity)."""
        ...

    async def variant(self, original: ForecastingQuestion, mutation: str, index: int, *, model: bool) -> Variant | None:
        """The ``index``-th variant of ``original`` by ``mutation`` (None: no more)."""
        ...


class Family(Protocol):
    name: str

    def propose(self, state: SearchState) -> Iterable[Candidate] | AsyncIterator[Candidate]: ...


def bases_of(tup: Mapping[str, Any]) -> dict[str, ForecastingQuestion]:
    return {
        k: ForecastingQuestion.model_validate(v)
        for k, v in (tup.get("metadata") or {}).get("base_sentences", {}).items()
    }


_MADE: dict[tuple, dict[str, Any]] = {}


def template_tuple(check: Check, bases: Mapping[str, ForecastingQuestion], **metadata: Any) -> dict[str, Any]:
    """The template instantiator's tuple (remembered: families propose the same tuples round after round)."""
    key = (check.name, *((name, q.id, q.title, q.body) for name, q in sorted(bases.items())))
    made = _MADE.get(key)
    if made is None:
        if len(_MADE) > 100_000:
            _MADE.clear()
        made = _MADE[key] = _TEMPLATE.instantiate_sync(check, bases)
    return {**made, "metadata": {**made["metadata"], **metadata}}


def base_fits(check: Check) -> Fits:
    """Which questions the template takes as a base of ``check``: the multiple-choice or numeric source of a check
    made from one (:func:`consistency.generate.categorical.fits`), a yes/no question for the others."""
    if check.outcomes:
        return lambda q: made_from_one.fits(check, q)
    return lambda q: q.question_type in ("binary", "conditional_binary")


class CheckFamily:
    """Tuples of one check: over the base questions of the weakest tuples found that the check takes (with
    related questions of the pool where the check needs more), then the check's seed tuples in a random order."""

    def __init__(self, check: str | Check) -> None:
        self.check = get_check(check)
        self.name = f"check:{self.check.name}"

    def propose(self, state: SearchState) -> Iterable[Candidate]:
        names = _TEMPLATE.bases_for(self.check)
        fits = base_fits(self.check)
        for weak in state.weak():
            own = [q for q in {q.id: q for q in bases_of(weak.tuple).values()}.values() if fits(q)]
            if not own:
                continue  # nothing of this tuple's questions fits the check: no tuple around it
            for order in _orders(own, len(names)):
                chosen = order + state.companions(order, len(names) - len(order), fits)
                if len(chosen) < len(names):
                    continue
                bases = dict(zip(names, chosen, strict=False))
                relevance = {"similarity": state.similarity(list(bases.values()))}
                try:
                    tup = template_tuple(self.check, bases, relevance=relevance)
                except (NoHorizon, made_from_one.NeedsWording):  # a chain needs a deadline to move; a second
                    continue  # wording of a numeric question needs a model
                lineage = {"parent": weak.key, "weak_questions": [q.id for q in own], "mutation": "other check"}
                yield Candidate(self.check, tup, self.name, lineage)
        for i, tup in enumerate(state.seeds.get(self.check.name, ())):
            yield Candidate(self.check, tup, self.name, {"seed": i})


def _orders(questions: Sequence[ForecastingQuestion], k: int) -> list[list[ForecastingQuestion]]:
    """The weak tuple's questions as the first bases: as they are, then rotated (P becomes Q ...)."""
    head = list(questions[:k])
    return [head[i:] + head[:i] for i in range(len(head))] or [[]]


class MutationFamily:
    """Variants of the weak tuples' questions (one mutation): each put in its original's place in the
    weak tuple, and paired with its original (PARAPHRASE for same-meaning variants, NEGATION for
    negations). ``model`` None: the deterministic template mutation; else the generator model's."""

    def __init__(self, mutation: str, model: bool = False) -> None:
        known = MODEL_MUTATIONS if model else TEMPLATE_MUTATIONS
        if mutation not in known:
            kind = "model" if model else "template"
            raise KeyError(f"unknown {kind} mutation {mutation!r}; known: {', '.join(known)}")
        self.mutation, self.model = mutation, model
        self.relation = known[mutation]
        self.name = f"{'llm' if model else 'mutate'}:{mutation}"

    async def propose(self, state: SearchState) -> AsyncIterator[Candidate]:
        for weak in state.weak():
            bases = bases_of(weak.tuple)
            for name, original in bases.items():
                if depth(original) >= state.max_depth or Lineage.of(original).mutation == self.mutation:
                    continue  # a variant of a variant of ...: titles stop meaning anything
                if not applies(self.mutation, original, model=self.model):
                    continue  # a yes/no wording of a multiple-choice or numeric question
                for index in range(3 if self.mutation == "sibling" else 1):
                    variant = await state.variant(original, self.mutation, index, model=self.model)
                    if variant is None:
                        break
                    lineage = {
                        "parent": weak.key,
                        "weak_question": {"id": original.id, "title": original.title},
                        "mutation": self.mutation,
                        "variant": {"id": variant.question.id, "source": variant.source},
                    }
                    for candidate in self._around(weak.check, bases, name, variant, lineage, state):
                        yield candidate

    def _around(self, check, bases, name, variant: Variant, lineage, state: SearchState) -> Iterable[Candidate]:
        written = variant.source != "template"
        swapped = {**bases, name: variant.question}
        distinct = len({q.id for q in swapped.values()}) == len(swapped)
        if distinct and check.name in state.check_names and base_fits(check)(variant.question):
            try:
                tup = template_tuple(check, swapped)
            except (NoHorizon, made_from_one.NeedsWording):  # the variant of a chain's source lost its deadline;
                tup = None  # a numeric question's second wording is a model's
            if tup is not None:
                role = {**lineage, "role": "substitute"}
                yield Candidate(check, tup, self.name, role, verify=written and variant.relation == "other")
        pair = relation_tuple(bases[name], variant)
        if pair is not None and pair[0].name in state.check_names:
            yield Candidate(pair[0], pair[1], self.name, {**lineage, "role": "pair"})


def relation_tuple(original: ForecastingQuestion, variant: Variant) -> tuple[Check, dict[str, Any]] | None:
    """The variant paired with its original: PARAPHRASE for a same-meaning variant, NEGATION for a negation;
    NUMERIC_PARAPHRASE for a same-meaning variant of a numeric or date question (none for multiple choice)."""
    v = variant.question
    if original.question_type in ("numeric", "date"):
        if variant.relation != "same":
            return None
        check = get_check("NUMERIC_PARAPHRASE")
        words = {"para_X": (v.title, v.body)}
        how = f"attack:{variant.mutation}"
        tup = made_from_one.categorical_tuple(check, original, instantiator=how, wordings=words)
        tup["para_X"]["metadata"] = {**tup["para_X"]["metadata"], **(v.metadata or {})}
        return check, tup
    pair = {"same": ("PARAPHRASE", "para_P"), "negation": ("NEGATION", "not_P")}.get(variant.relation)
    if pair is None or not base_fits(get_check(pair[0]))(original):
        return None
    check = get_check(pair[0])
    tup = assemble_tuple(
        check, check, {"P": original}, {pair[1]: (v.title, v.body)}, instantiator=f"attack:{variant.mutation}"
    )
    tup[pair[1]]["metadata"] = dict(v.metadata or {})
    return check, tup


def default_families(checks: Sequence[Check], model_mutations: bool) -> list[Family]:
    """Every check, the template mutations, and (with a generator model) the model's mutations."""
    families: list[Family] = [CheckFamily(c) for c in checks]
    families += [MutationFamily(m) for m in TEMPLATE_MUTATIONS]
    if model_mutations:
        families += [MutationFamily(m, model=True) for m in MODEL_MUTATIONS]
    return families
