"""Tuple instantiation by a model: one structured call per generated field.

The model writes only titles and bodies. What the field means is derived from the check's
declaration (its formula over the bases), stated to the model in words, and everything exact
(ids, dates, question types, resolutions) is computed by :func:`assemble_tuple`.
"""

from __future__ import annotations

import asyncio
import string
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from ..checks import Check, chain_fields
from ..checks.logic import And, Formula, Given, Not, Or, Var
from ..errors import RunFailed
from ..llm import LLM, LLMResult
from ..models import ForecastingQuestion
from ..prompts import question_block, render
from .template import clause
from .tuples import assemble_tuple


class FieldText(BaseModel):
    """A generated question: the title stands alone, the body holds every resolution criterion."""

    title: str = Field(min_length=8, description="A self-contained yes/no question.")
    body: str = Field(min_length=20, description="Complete resolution criteria, carried over from the base questions.")


class InstantiationError(RunFailed):
    """A field the model did not write (after the LLM layer's retries and re-asks)."""

    def __init__(self, field: str, result: LLMResult) -> None:
        super().__init__(f"field {field}: {result.error}")
        self.field, self.raw = field, result.raw


def field_kind(name: str, formula: Formula, bases: Mapping[str, Any]) -> str:
    """Which relation a generated field has to its bases (picks the task prompt)."""
    if isinstance(formula, Var):
        return "paraphrase" if formula.name in bases else "consequence"
    if isinstance(formula, Given):
        return "conditional"
    if isinstance(formula, Not):
        return "negation"
    if isinstance(formula, And):
        return "conjunction"
    if isinstance(formula, Or):
        return "disjunction"
    raise TypeError(f"no instantiation task for field {name} = {formula.symbol()}")


def labels_for(bases: Mapping[str, ForecastingQuestion]) -> dict[str, str]:
    """Base questions are shown to models as (a), (b), (c), in the check's order."""
    return {name: f"question ({string.ascii_lowercase[i]})" for i, name in enumerate(bases)}


def bases_block(bases: Mapping[str, ForecastingQuestion]) -> str:
    labels = labels_for(bases)
    return "\n\n".join(f"[{labels[name]}]\n{question_block(q)}" for name, q in bases.items())


def relation(formula: Formula, kind: str, refs: Mapping[str, str]) -> str:
    """What the field must do, in words over the labelled bases (completes "The new question must ...")."""
    if kind == "consequence":
        source = next(iter(refs.values()))
        return f"resolve YES whenever {source} resolves YES, and may also resolve YES in some other cases"
    if kind == "paraphrase":
        return f"resolve YES exactly when {refs[formula.name]} resolves YES"  # type: ignore[attr-defined]
    if isinstance(formula, Given):
        return (
            f"assume that {clause(formula.condition, refs)} and resolve YES exactly when "
            f"{clause(formula.outcome, refs)}; it is annulled if that assumption fails"
        )
    return f"resolve YES exactly when {clause(formula, refs)}, and NO otherwise"


class LLMInstantiator:
    """Fields written by ``model`` through the LLM layer; CONSEQUENCE needs only ``P``."""

    name = "llm"

    def __init__(self, llm: LLM, model: str) -> None:
        self.llm, self.model = llm, model

    def bases_for(self, check: Check) -> tuple[str, ...]:
        """Bases that are fields or appear inside a compound field (not CONSEQUENCE's ``Q``, which the model
        writes); a chain's first field only."""
        if check.outcomes:
            from .categorical import source_base

            return (source_base(check),)
        order = chain_fields(check)
        if order:
            return order[:1]
        compound = [f for f in check.formulas.values() if not isinstance(f, Var)]
        return tuple(b for b in check.bases if b in check.fields or any(b in f.atoms() for f in compound))

    def messages(self, check: Check, field: str, bases: Mapping[str, ForecastingQuestion]) -> list[dict[str, str]]:
        formula = check.formulas[field]
        kind = field_kind(field, formula, bases)
        used = {b: q for b, q in bases.items() if b in formula.atoms()} or dict(bases)
        refs = labels_for(used)
        user = render(
            "instantiate_user",
            task=render(f"task_{kind}"),
            bases=bases_block(used),
            logic=relation(formula, kind, refs),
        )
        return [{"role": "system", "content": render("instantiate_system")}, {"role": "user", "content": user}]

    async def instantiate(self, check: Check, bases: Mapping[str, ForecastingQuestion]) -> dict[str, Any]:
        if check.outcomes:
            return await self._categorical(check, bases)
        if chain_fields(check):
            return await self._chain(check, bases)
        used = {b: bases[b] for b in self.bases_for(check)}
        todo = [f for f, formula in check.formulas.items() if not (isinstance(formula, Var) and formula.name == f)]
        results = await asyncio.gather(
            *(self.llm.structured(self.model, self.messages(check, f, used), FieldText) for f in todo)
        )
        texts = {}
        for name, result in zip(todo, results, strict=True):
            if not result.ok:
                raise InstantiationError(name, result)
            texts[name] = (result.value.title.strip(), result.value.body.strip())
        return assemble_tuple(check, check, used, texts, instantiator=self.name, model=self.model)

    async def _chain(self, check: Check, bases: Mapping[str, ForecastingQuestion]) -> dict[str, Any]:
        """A chain: the exact horizon template when the source fits it, else one call for all later fields."""
        from .chains import NoHorizon, chain_messages, chain_text, horizon_chain, model_chain

        first = self.bases_for(check)[0]
        source = bases[first]
        try:
            return horizon_chain(check, source, instantiator="template")
        except NoHorizon:
            pass
        messages = chain_messages(check, question_block(source))
        result = await self.llm.structured(self.model, messages, chain_text(len(check.fields) - 1))
        if not result.ok:
            raise InstantiationError("/".join(check.field_names[1:]), result)
        return model_chain(check, source, result.value, instantiator=self.name, model=self.model)

    async def _categorical(self, check: Check, bases: Mapping[str, ForecastingQuestion]) -> dict[str, Any]:
        """A multiple-choice or numeric source: the exact template, and a model only for a second wording
        (NUMERIC_PARAPHRASE)."""
        from .categorical import NumericWording, categorical_tuple, restated_fields, unchanged, wording_messages

        source = bases[self.bases_for(check)[0]]
        fields = restated_fields(check)
        if not fields:
            return categorical_tuple(check, source, instantiator="template")
        result = await self.llm.structured(self.model, wording_messages(source), NumericWording)
        if not result.ok:
            raise InstantiationError("/".join(fields), result)
        title, body = result.value.title.strip(), result.value.body.strip()
        if unchanged(source, title):
            raise ValueError(f"field {fields[0]}: the model returned the question's own title, not a new wording")
        wordings = dict.fromkeys(fields, (title, body))
        return categorical_tuple(check, source, instantiator=self.name, wordings=wordings, model=self.model)
