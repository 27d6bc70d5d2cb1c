"""MONOTONE chains from one source question: a deterministic horizon template, and a model for other shapes.

The template takes a question whose title asks whether something happens "by DATE" or "before DATE",
with DATE its resolution date (within a month), and writes the same question with the deadline moved
:data:`STEP_YEARS` years later for each next field: ``P_1`` is the source itself, ``P_2`` one year
later, ``P_3`` two (title, body and resolution date shifted together). Every date is after the
question's creation, and the chain spans at most ``(k - 1) * STEP_YEARS`` years past the source.
Questions about a dated occasion ("the 2028 election", "for 2027", "as reported by ...") or a state
on a day ("... on December 31, 2027") are not horizons and do not fit.

Resolutions propagate through the check's own :meth:`~consistency.checks.Check.resolve`: if X
happened by d it happened by every later date; if it had not happened by the last date, it had not
by any earlier one.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import cache
from typing import Any

from pydantic import BaseModel, Field, create_model

from ..checks import Check, chain_fields
from ..errors import InputError
from ..models import ForecastingQuestion
from .tuples import assemble_tuple

#: Years between consecutive horizons of a template-made chain.
STEP_YEARS = 1
#: How far a title's deadline may lie from the resolution date and still be taken as it.
DEADLINE_SLACK = timedelta(days=31)

_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_DATE = rf"(?:{_MONTHS}) \d{{1,2}}, \d{{4}}"
_DEADLINE = re.compile(rf"\b(by|before|on or before) ({_DATE})\?\s*$")
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
# "..., as first reported by DATE", "... as of DATE", "..., by DATE": when a result is known, not a horizon.
_REPORTED = re.compile(
    r"(?:\bas (?:\w+ly |first )?(?:reported|published|confirmed|decided|determined|announced|declared|certified|of)|,)"
    r"\s*$"
)


#: Why the horizon template skips a question: said, with how many, by ``cc generate``, ``cc attack`` and the benchmarks.
NO_HORIZON = "no 'by DATE' deadline the horizon template can move"


class NoHorizon(InputError):
    """The question has no "by DATE" deadline the template can move (the model instantiator can try)."""


@dataclass(frozen=True)
class Deadline:
    word: str  # by / before / on or before
    text: str  # as written in the title ("January 1, 2029")
    day: date
    body_days: tuple[date, ...] = ()  # the dates the body states it by (the day, or the day before "before")


def _parse(text: str) -> date:
    return datetime.strptime(text, "%B %d, %Y").date()


def _spoken(day: date) -> str:
    return f"{day:%B} {day.day}, {day.year}"


def find_deadline(question: ForecastingQuestion) -> Deadline:
    """The title's moveable deadline, or :class:`NoHorizon` saying why there is none."""
    title = question.title.strip()
    found = _DEADLINE.search(title)
    if found is None:
        raise NoHorizon("the title does not end with 'by DATE?' or 'before DATE?' (Month D, YYYY)")
    word, text = found.group(1), found.group(2)
    try:
        day = _parse(text)
    except ValueError:
        raise NoHorizon(f"{text!r} is not a date") from None
    head = title[: found.start()]
    if _YEAR.search(head):
        raise NoHorizon("the title names a year besides its deadline: a dated occasion, not a horizon")
    if _REPORTED.search(head):
        raise NoHorizon("the deadline is when a result is reported, not when the event must happen")
    if question.resolution_date is None:
        raise NoHorizon("the question has no resolution date")
    resolves = question.resolution_date.date()
    if abs(day - resolves) > DEADLINE_SLACK:
        raise NoHorizon(f"the title's deadline {day} is not the resolution date {resolves}")
    if question.created_date is not None and question.created_date.date() >= day:
        raise NoHorizon(f"the deadline {day} is not after the question's creation")
    body = question.body
    # "before January 1, 2029" is often stated in the criteria as "to December 31, 2028".
    stated = tuple(d for d in (day, day - timedelta(days=1) if word == "before" else None) if d and _spoken(d) in body)
    if body.strip() and not stated:
        raise NoHorizon(f"the resolution criteria do not state the deadline {text!r}, so they cannot be moved with it")
    return Deadline(word, text, day, stated)


def fits_horizon(question: ForecastingQuestion) -> bool:
    """Whether the horizon template can make a chain from ``question``."""
    try:
        find_deadline(question)
    except NoHorizon:
        return False
    return True


def shift_years(day: date, years: int) -> date:
    """The same calendar day ``years`` later (February 29 becomes February 28 off leap years)."""
    year = day.year + years
    return day.replace(year=year, day=min(day.day, calendar.monthrange(year, day.month)[1]))


def shifted(question: ForecastingQuestion, deadline: Deadline, years: int) -> tuple[str, str, datetime]:
    """(title, body, resolution date) of ``question`` with its deadline moved ``years`` later."""
    new = _spoken(shift_years(deadline.day, years))
    title = question.title.strip()
    cut = title.rfind(deadline.text)
    title = title[:cut] + new + title[cut + len(deadline.text) :]
    body = question.body
    for day in deadline.body_days:
        later = shift_years(day, years)
        body = body.replace(_spoken(day), _spoken(later)).replace(day.isoformat(), later.isoformat())
    resolves = question.resolution_date
    assert resolves is not None
    day = shift_years(resolves.date(), years)
    return title, body, resolves.replace(year=day.year, month=day.month, day=day.day)


def horizon_chain(
    check: Check, source: ForecastingQuestion, *, instantiator: str = "template", step_years: int = STEP_YEARS
) -> dict[str, Any]:
    """The chain of ``check`` (a chain check, see :func:`~consistency.checks.chain_fields`) with ``source`` first."""
    order = chain_fields(check)
    if order is None:
        raise TypeError(f"{check.name} is not a chain check")
    deadline = find_deadline(source)
    texts, dates = {}, {order[0]: source.resolution_date}
    for i, name in enumerate(order[1:], start=1):
        title, body, resolves = shifted(source, deadline, i * step_years)
        texts[name], dates[name] = (title, body), resolves
    horizons = [dates[name].date().isoformat() for name in order]  # type: ignore[union-attr]
    return assemble_tuple(
        check, check, {order[0]: source}, texts, instantiator=instantiator, resolution_dates=dates,
        extra_metadata={"chain": {"kind": "horizon", "fields": list(order), "resolution_dates": horizons}},
    )  # fmt: skip


# --------------------------------------------------------------------------- model-written chains
class ChainQuestion(BaseModel):
    title: str = Field(min_length=8, description="A self-contained yes/no question.")
    body: str = Field(min_length=20, description="Complete resolution criteria.")
    resolution_date: date | None = Field(
        None, description="When this question resolves, if later than the source question (YYYY-MM-DD); else null."
    )


class ChainText(BaseModel):
    """Questions that follow from the source question and from each other, weakest last."""

    questions: list[ChainQuestion] = Field(description="The new questions, strongest first.")


@cache
def chain_text(n: int) -> type[ChainText]:
    """:class:`ChainText` asking for exactly ``n`` questions (the schema says so; a wrong count is re-asked)."""
    field = Field(min_length=n, max_length=n, description="The new questions, strongest first.")
    return create_model("ChainText", __base__=ChainText, questions=(list[ChainQuestion], field))


def chain_messages(check: Check, source_block: str) -> list[dict[str, str]]:
    from ..prompts import render

    n = len(check.fields) - 1
    user = render("chain_user", n=str(n), source=source_block)
    return [{"role": "system", "content": render("chain_system")}, {"role": "user", "content": user}]


def model_chain(
    check: Check, source: ForecastingQuestion, answer: ChainText, *, instantiator: str, model: str
) -> dict[str, Any]:
    """A chain from the model's questions: ids, types, dates and resolutions computed here, as for any tuple."""
    order = chain_fields(check)
    assert order is not None
    if len(answer.questions) != len(order) - 1:
        raise ValueError(f"the model wrote {len(answer.questions)} question(s), {len(order) - 1} needed")
    texts, dates = {}, {order[0]: source.resolution_date}
    previous = source.resolution_date
    for name, q in zip(order[1:], answer.questions, strict=True):
        if q.title.strip() in {source.title.strip(), *(t for t, _ in texts.values())}:
            raise ValueError(f"field {name} repeats an earlier title")
        day = previous
        if q.resolution_date is not None and previous is not None and q.resolution_date > previous.date():
            day = datetime.combine(q.resolution_date, previous.time(), previous.tzinfo)
        texts[name], dates[name] = (q.title.strip(), q.body.strip()), day
        previous = day
    return assemble_tuple(
        check, check, {order[0]: source}, texts, instantiator=instantiator, model=model, resolution_dates=dates,
        extra_metadata={"chain": {"kind": "model", "fields": list(order)}},
    )  # fmt: skip


def chain_relation(check: Check, field: str, refs: Mapping[str, str]) -> str:
    """What a chain field must do, in words (completes "[P_2] must ...", for the verifier)."""
    order = chain_fields(check)
    assert order is not None
    before = order[order.index(field) - 1]
    ref = refs.get(before, f"[{before}]")
    return (
        f"resolve YES whenever {ref} resolves YES: the same event with a later deadline or a less demanding "
        f"threshold (that change is intended), and possibly YES in some cases where {ref} is NO"
    )
