"""Tuple verification: a model judges whether generated fields stand in the intended relation.

It answers with reasons and a 0-10 score, and a threshold decides (the paper's yes/no verifier
discarded too much; a score lets the user trade quality for yield).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from ..checks import Check, chain_fields
from ..checks.logic import Var
from ..llm import LLM
from ..models import ForecastingQuestion
from ..prompts import render
from .chains import chain_relation
from .judgement import Verdict
from .llm import bases_block, field_kind, labels_for, relation


class Verification(BaseModel):
    """What the verifier said about one tuple (``passed`` is decided by the threshold)."""

    score: int | None
    reasons: str
    passed: bool
    model: str


class TupleVerifier:
    """One structured call per tuple; tuples scoring below ``threshold`` are rejected."""

    def __init__(self, llm: LLM, model: str, threshold: int = 6) -> None:
        self.llm, self.model, self.threshold = llm, model, threshold

    def messages(self, check: Check, tup: Mapping[str, Any]) -> list[dict[str, str]]:
        bases = {k: ForecastingQuestion.model_validate(v) for k, v in tup["metadata"]["base_sentences"].items()}
        refs = labels_for(bases)
        chain = chain_fields(check)
        blocks = []
        for name, formula in check.formulas.items():
            if name in bases or (not chain and isinstance(formula, Var) and formula.name == name):
                continue
            q = tup[name]
            if chain:  # each link of a chain is judged against the field before it
                meant = chain_relation(check, name, refs)
            else:
                meant = relation(formula, field_kind(name, formula, bases), refs)
            blocks.append(f"[{name}] must {meant}.\nTitle: {q['title']}\nBody: {q['body']}")
        user = render("verify_user", bases=bases_block(bases), fields="\n\n".join(blocks))
        return [{"role": "system", "content": render("verify_system")}, {"role": "user", "content": user}]

    async def verify(self, check: Check, tup: Mapping[str, Any]) -> Verification:
        result = await self.llm.structured(self.model, self.messages(check, tup), Verdict)
        if not result.ok:
            return Verification(score=None, reasons=f"verifier failed: {result.error}", passed=False, model=self.model)
        v = result.value
        return Verification(score=v.score, reasons=v.reasons, passed=v.score >= self.threshold, model=self.model)
