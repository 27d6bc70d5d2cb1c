"""Deterministic, exact tuple instantiation from a check's declaration (no model needed).

Every field's text states its meaning in terms of the base questions' own resolutions
("... resolves YES", "... resolves NO"), so the tuple stands in exactly the declared logical
relation; the bases' resolution criteria are repeated in each body so a field is self-contained.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any

from ..checks import Check, chain_fields
from ..checks.logic import And, Formula, Given, Implies, Not, Or, Var
from ..models import ForecastingQuestion
from .chains import NO_HORIZON, fits_horizon, horizon_chain
from .tuples import assemble_tuple


class TemplateInstantiator:
    """Fields written from fixed templates; CONSEQUENCE uses its declared ``P or Q`` form, a chain
    (MONOTONE) moves its one source question's deadline (:mod:`.chains`), and the checks over a multiple-choice
    or numeric question ask about its options or thresholds (:mod:`.categorical`)."""

    name = "template"
    skip_reason = NO_HORIZON  # of the questions :meth:`fits` turns away

    def bases_for(self, check: Check) -> tuple[str, ...]:
        if check.outcomes:  # one multiple-choice or numeric source question (:mod:`.categorical`)
            from .categorical import source_base

            return (source_base(check),)
        order = chain_fields(check)
        return order[:1] if order else check.template_check.bases

    def fits(self, check: Check, question: ForecastingQuestion) -> bool:
        """Whether ``question`` can be a base of ``check``: any question can, except that a chain's source
        needs a deadline the template can move (``skip_reason`` says so of the others)."""
        return not chain_fields(check) or fits_horizon(question)

    def instantiate_sync(self, check: Check, bases: Mapping[str, ForecastingQuestion]) -> dict[str, Any]:
        if check.outcomes:
            from .categorical import categorical_tuple, source_base

            base = source_base(check)
            if base not in bases:
                raise KeyError(f"template instantiation of {check.name} needs source question {base}")
            return categorical_tuple(check, bases[base], instantiator=self.name)
        order = chain_fields(check)
        if order:
            if order[0] not in bases:
                raise KeyError(f"template instantiation of {check.name} needs base question {order[0]}")
            return horizon_chain(check, bases[order[0]], instantiator=self.name)
        meaning = check.template_check
        missing = [b for b in meaning.bases if b not in bases]
        if missing:
            raise KeyError(f"template instantiation of {check.name} needs base question(s) {', '.join(missing)}")
        used = {b: bases[b] for b in meaning.bases}
        texts = {
            name: render_field(formula, used, paraphrase=True)
            for name, formula in meaning.formulas.items()
            if not (isinstance(formula, Var) and formula.name == name)
        }
        return assemble_tuple(check, meaning, used, texts, instantiator=self.name)

    async def instantiate(self, check: Check, bases: Mapping[str, ForecastingQuestion]) -> dict[str, Any]:
        return self.instantiate_sync(check, bases)


def render_field(
    formula: Formula, bases: Mapping[str, ForecastingQuestion], *, paraphrase: bool = False
) -> tuple[str, str]:
    """(title, body) of a question that resolves as ``formula`` over the base questions.

    Titles quote the bases' titles so they stand alone; bodies refer to the bases by label and
    then give each one's resolution criteria.
    """
    labels = {name: f"({string.ascii_lowercase[i]})" for i, name in enumerate(sorted(formula.atoms()))}
    quoted = {name: _quote(q.title) for name, q in bases.items()}
    by_label = {name: f"question {label}" for name, label in labels.items()} if len(labels) > 1 else quoted
    if isinstance(formula, Var):
        q = bases[formula.name]
        if not paraphrase:
            return q.title, q.body
        title = f"Will the following question resolve YES: {_quote(q.title)}?"
        body = "Resolves YES if the question below resolves YES, and NO if it resolves NO."
        return title, _with_criteria(body, labels, bases)
    if isinstance(formula, Given):
        cond, outcome = formula.condition, formula.outcome
        title = f"Given that {clause(cond, quoted)}, will {clause(outcome, quoted, will=True)}?"
        body = (
            f"This is a conditional question. It is annulled (resolves neither YES nor NO) unless "
            f"{clause(cond, by_label)}. If that condition holds, it resolves YES if "
            f"{clause(outcome, by_label)}, and NO otherwise."
        )
        return title, _with_criteria(body, labels, bases)
    title = f"Will {clause(formula, quoted, will=True)}?"
    body = f"Resolves YES if {clause(formula, by_label)}, and NO otherwise."
    return title, _with_criteria(body, labels, bases)


def _quote(title: str) -> str:
    return f"\u201c{title.strip()}\u201d"


def clause(f: Formula, refs: Mapping[str, str], *, will: bool = False) -> str:
    """A statement about resolutions; ``will`` for use after "will" ("resolve", not "resolves")."""
    verb = "resolve" if will else "resolves"
    if isinstance(f, Var):
        return f"{refs[f.name]} {verb} YES"
    if isinstance(f, Not) and isinstance(f.arg, Var):
        return f"{refs[f.arg.name]} {verb} NO"
    if isinstance(f, Not):
        return ("it turn out false that " if will else "it is false that ") + clause(f.arg, refs)
    if isinstance(f, And | Or):
        if all(isinstance(a, Var) for a in f.args):
            items = _join([refs[a.name] for a in f.args], "and")  # type: ignore[attr-defined]
            if isinstance(f, Or):
                return f"at least one of {items} {verb} YES"
            quantifier = "both" if len(f.args) == 2 else "all of"
            return f"{quantifier} {items} resolve YES"
        return _join([clause(a, refs, will=will) for a in f.args], "and" if isinstance(f, And) else "or")
    if isinstance(f, Implies):
        return f"if {clause(f.premise, refs)} then {clause(f.conclusion, refs)}"
    raise TypeError(f"cannot render {f!r} as a statement")


def _join(items: list[str], word: str) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" {word} " + items[-1]


def _with_criteria(lead: str, labels: Mapping[str, str], bases: Mapping[str, ForecastingQuestion]) -> str:
    parts = [lead]
    for name, label in labels.items():
        q = bases[name]
        head = "Question" if len(labels) == 1 else f"Question {label}"
        criteria = q.body.strip() or "(no further criteria given)"
        parts.append(f"{head}: {q.title.strip()}\nResolution criteria: {criteria}")
    return "\n\n".join(parts)
