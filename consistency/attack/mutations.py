"""Variants of a weak question: deterministic templates, or written by a generator model.

A :class:`Variant` is a new question and how it relates to the question it came from: ``same``
(it resolves exactly as the original: paraphrase, irrelevant detail, double negation, a conditional
framing on a condition that always holds), ``negation``
(it resolves exactly opposite) or ``other`` (a different question of the same kind: another entity,
an earlier deadline, a sibling from the pool). Template variants are exact by construction, like the
template instantiator's fields; a model's variants are verified before any tuple uses them.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from ..generate.llm import FieldText
from ..generate.tuples import NAMESPACE
from ..llm import LLM
from ..models import ForecastingQuestion
from ..prompts import question_block, render

Relation = Literal["same", "negation", "other"]

#: What the ``detail`` mutation inserts before its background note (the scripted coherent forecaster of
#: :mod:`consistency.fake_openai.worlds` recognises it, so tests can tell a real weakness from a wording change).
DETAIL_MARK = " (Background, irrelevant to the resolution: "

#: Deterministic mutations (no model): name -> relation of the variant to its original.
TEMPLATE_MUTATIONS: dict[str, Relation] = {
    "detail": "same",
    "restate": "same",
    "double_negation": "same",
    "conditional": "same",
    "sibling": "other",
}
#: Mutations a generator model writes: name -> relation (prompt ``attack_<name>.txt``).
MODEL_MUTATIONS: dict[str, Relation] = {
    "paraphrase": "same",
    "detail": "same",
    "negation": "negation",
    "date": "other",
    "entity": "other",
}

#: Background sentences that bear on nothing; the ``detail`` mutation appends one (chosen by hash).
_BACKGROUND = (
    "forecasting platforms have tracked questions like this one for several years",
    "the topic was discussed at length in commentary published over the past decade",
    "similar questions have been asked before with a range of outcomes",
    "analysts disagree about which indicators matter most for events of this kind",
    "the wording follows the conventions of public forecasting tournaments",
)


#: Mutations that also apply to a multiple-choice, numeric or date question (the others reword a yes/no question:
#: "is the answer YES?", a double negation, a condition on YES or NO; a model's prompts speak of YES too).
ANY_TYPE_MUTATIONS = frozenset({"detail", "sibling"})


def applies(mutation: str, question: ForecastingQuestion, *, model: bool = False) -> bool:
    """Whether ``mutation`` makes a variant of ``question``: every mutation of a yes/no question, only the
    template's :data:`ANY_TYPE_MUTATIONS` of the others."""
    return question.question_type in ("binary", "conditional_binary") or (not model and mutation in ANY_TYPE_MUTATIONS)


class Lineage(BaseModel):
    """What a question's metadata says of where it came from (the keys the mutations write and read; every other
    key of the metadata is left alone)."""

    model_config = ConfigDict(extra="ignore")

    variant_of: str | None = None
    root: str | None = None  # the pool question it all came from
    mutation: str | None = None
    mutation_depth: int = 0
    category: str | None = None

    @classmethod
    def of(cls, question: ForecastingQuestion) -> Lineage:
        meta = question.metadata or {}
        try:
            return cls.model_validate(meta)
        except ValidationError as exc:  # a key of another meaning under one of these names: that key is ignored
            bad = {e["loc"][0] for e in exc.errors() if e["loc"]}
            return cls.model_validate({k: v for k, v in meta.items() if k not in bad})


@dataclass(frozen=True)
class Variant:
    question: ForecastingQuestion
    mutation: str
    relation: Relation
    source: str  # "template" or the generator model
    original_id: str


def _variant_id(original: ForecastingQuestion, mutation: str, extra: str = "") -> str:
    return str(uuid.uuid5(NAMESPACE, f"attack|{mutation}|{original.id}|{original.title}|{extra}"))


def _pick(options: Sequence[str], *parts: str) -> str:
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return options[int.from_bytes(digest[:4], "big") % len(options)]


def depth(question: ForecastingQuestion) -> int:
    """How many mutations made this question (0 for a question of the pool)."""
    return Lineage.of(question).mutation_depth


def _derived(original: ForecastingQuestion, mutation: str, title: str, body: str) -> ForecastingQuestion:
    """The variant: a new id, title and body, the original's type, options or range, dates and resolution."""
    was = Lineage.of(original)
    made = Lineage(
        variant_of=original.id, root=was.root or original.id, mutation=mutation, mutation_depth=was.mutation_depth + 1,
        category=was.category,
    )  # fmt: skip
    return ForecastingQuestion(
        id=_variant_id(original, mutation),
        title=title,
        body=body,
        resolution_date=original.resolution_date,
        created_date=original.created_date,
        question_type=original.question_type,
        data_source="attack",
        metadata=made.model_dump(exclude_none=True),
        options=original.options,
        range=original.range,
        resolution=original.resolution,
    )


def template_variant(
    original: ForecastingQuestion, mutation: str, pool: Sequence[ForecastingQuestion] = (), index: int = 0
) -> Variant | None:
    """The ``index``-th deterministic variant of ``original`` (None when there is none)."""
    quoted = f"\u201c{original.title.strip()}\u201d"
    criteria = f"Resolves exactly as the question below.\n\nQuestion: {original.title.strip()}\nResolution criteria: "
    criteria += original.body.strip() or "(no further criteria given)"
    if mutation == "detail":
        if index > 0:
            return None
        note = _pick(_BACKGROUND, "detail", original.id, original.title)
        title = f"{original.title.strip()}{DETAIL_MARK}{note}.)"
        body = f"{original.body.strip()}\n\nBackground (has no bearing on the resolution): {note}."
        return Variant(_derived(original, mutation, title, body.strip()), mutation, "same", "template", original.id)
    if mutation == "restate":
        if index > 0:
            return None
        title = f"Is the answer to {quoted} YES?"
        return Variant(_derived(original, mutation, title, criteria), mutation, "same", "template", original.id)
    if mutation == "double_negation":
        if index > 0:
            return None
        title = f"Will \u201cWill {quoted} resolve NO?\u201d resolve NO?"
        return Variant(_derived(original, mutation, title, criteria), mutation, "same", "template", original.id)
    if mutation == "conditional":  # a conditional framing whose condition always holds: the same question
        if index > 0:
            return None
        title = f"Given that {quoted} resolves YES or {quoted} resolves NO, will {quoted} resolve YES?"
        lead = "The condition holds as soon as the question below resolves, so this resolves exactly as it does.\n\n"
        return Variant(_derived(original, mutation, title, lead + criteria), mutation, "same", "template", original.id)
    if mutation == "sibling":
        siblings = _siblings(original, pool)
        if index >= len(siblings):
            return None
        return Variant(siblings[index], mutation, "other", "template", original.id)
    raise KeyError(f"unknown template mutation {mutation!r}; known: {', '.join(TEMPLATE_MUTATIONS)}")


def _siblings(original: ForecastingQuestion, pool: Sequence[ForecastingQuestion]) -> list[ForecastingQuestion]:
    """Pool questions of the same category and type (another entity of the same reference class), in a fixed
    order."""
    category = Lineage.of(original).category
    same = [
        q
        for q in pool
        if q.id != original.id and q.question_type == original.question_type and Lineage.of(q).category == category
    ]
    return sorted(same, key=lambda q: hashlib.sha256(f"{original.id}|{q.id}".encode()).hexdigest())


def variant_messages(original: ForecastingQuestion, mutation: str) -> list[dict[str, str]]:
    user = render("attack_variant_user", task=render(f"attack_{mutation}"), question=question_block(original))
    return [{"role": "system", "content": render("attack_variant_system")}, {"role": "user", "content": user}]


async def model_variant(llm: LLM, model: str, original: ForecastingQuestion, mutation: str) -> Variant | str:
    """A variant written by ``model``, or the reason there is none."""
    relation = MODEL_MUTATIONS.get(mutation)
    if relation is None:
        raise KeyError(f"unknown model mutation {mutation!r}; known: {', '.join(MODEL_MUTATIONS)}")
    result = await llm.structured(model, variant_messages(original, mutation), FieldText)
    if not result.ok or result.value is None:
        return f"generator failed: {result.error}"
    title, body = result.value.title.strip(), result.value.body.strip()
    if title == original.title.strip():
        return "generator returned the original title"
    question = _derived(original, mutation, title, body)
    if mutation == "date":
        question = question.model_copy(update={"resolution_date": _earlier(original)})
    return Variant(question, mutation, relation, model, original.id)


def _earlier(q: ForecastingQuestion):
    if q.resolution_date is None or q.created_date is None or q.resolution_date <= q.created_date:
        return q.resolution_date
    return q.created_date + (q.resolution_date - q.created_date) / 2
