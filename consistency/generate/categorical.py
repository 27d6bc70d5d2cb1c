"""Tuples of the checks over multiple-choice and numeric questions, from one source question (no model call).

The check's declaration says what each yes/no field asks about the source X: ``X == o`` "is the outcome among the
options of outcome o?", ``X >= j`` "is X above threshold j?". The template writes each such field from the source's
title and criteria, records the event in the field's ``metadata.outcome_event`` (:mod:`consistency.outcomes`) and
resolves it from the source's resolution; the categorical fields are the source itself.

- PARTITION<k> from a question with k options: one field per option;
- MC_BINARY: one option or a union of two, chosen by the source's id (or given);
- CDF_THRESHOLDS<k>: thresholds at the quantiles j/(k+1) of the crowd's CDF (``metadata.crowd_forecast.cdf``) when
  the source has one, else evenly spaced on the range's scale, rounded to as few significant digits as keep them
  apart and inside the bounds (dates to the day). A discrete question (``metadata.discrete_outcomes``: n whole
  buckets, e.g. 10 seats from -0.5 to 9.5) takes them on the edges between its buckets (3.5, not 3.8): there
  P(X > t) is the mass of whole outcomes, while inside a bucket the CDF is an interpolation over one outcome;
- NUMERIC_PARAPHRASE needs a second wording of the source, which a model writes (:func:`wording_messages`, used by
  :class:`~consistency.generate.llm.LLMInstantiator`); the template refuses it with :class:`NeedsWording`.
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from consistency.errors import InputError

from .. import distributions as dist
from ..checks import NUMERIC, Check
from ..checks.logic import Compare, Var
from ..models import ForecastingQuestion, NumericForecast, tuple_model
from ..outcomes import EVENT_KEY, OutcomeEvent, tuple_outcomes
from .tuples import NAMESPACE


class NeedsWording(InputError, ValueError):
    """The check needs a second wording of the source question, which only a model writes."""


def source_base(check: Check) -> str:
    """The categorical base the template fills with the source question."""
    outcomes = list(check.outcomes or {})
    if len(outcomes) != 1:
        raise TypeError(f"{check.name} has {len(outcomes)} categorical bases; the template takes one source question")
    return outcomes[0]


def _comparisons(check: Check, base: str) -> dict[str, Compare]:
    return {n: f for n, f in check.formulas.items() if isinstance(f, Compare) and f.name == base}


def _source_fields(check: Check, base: str) -> list[str]:
    return [n for n, f in check.formulas.items() if isinstance(f, Var) and f.name == base]


def restated_fields(check: Check) -> list[str]:
    """Fields that restate the source in other words (NUMERIC_PARAPHRASE's ``para_X``): a model writes them."""
    return _source_fields(check, source_base(check))[1:]


def fits(check: Check, question: ForecastingQuestion) -> bool:
    """Whether the template makes a tuple of ``check`` from ``question``."""
    try:
        base = source_base(check)
    except TypeError:
        return False
    m = (check.outcomes or {})[base]
    kind = (check.kinds or {}).get(base, "multiple_choice")
    if kind == NUMERIC:
        n = discrete_outcomes(question)
        thresholds = len(_comparisons(check, base))
        return question.question_type in ("numeric", "date") and (n is None or n - 1 >= thresholds)
    if question.question_type != "multiple_choice":
        return False
    n = len(question.options or [])
    return n == m or (n > m and _takes_unions(check, base))


def _takes_unions(check: Check, base: str) -> bool:
    """One yes/no field naming all outcomes but the last: more options fit, grouped into a union and the rest."""
    m = (check.outcomes or {})[base]
    return len({f.value for f in _comparisons(check, base).values()}) == m - 1


def wanted_source(check: Check) -> str:
    """The question :func:`fits` takes, in words (for the message when a pool has none)."""
    base = source_base(check)
    if (check.kinds or {}).get(base) == NUMERIC:
        return "a numeric or date question"
    m = (check.outcomes or {})[base]
    return f"a multiple-choice question with {m} options" + (" or more" if _takes_unions(check, base) else "")


def categorical_tuple(
    check: Check,
    source: ForecastingQuestion,
    *,
    instantiator: str = "template",
    options: Sequence[str] | None = None,
    at: Sequence[float] | None = None,
    wordings: dict[str, tuple[str, str]] | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    """One validated tuple of ``check`` around ``source``.

    ``options`` fixes the options of a union field (MC_BINARY), ``at`` the thresholds (CDF_THRESHOLDS);
    ``wordings`` gives (title, body) of the fields that restate the source (NUMERIC_PARAPHRASE's ``para_X``).
    """
    base = source_base(check)
    if not fits(check, source):
        raise ValueError(f"{check.name} cannot be made from {source.question_type} question {source.id}")
    restated = _source_fields(check, base)[1:]
    missing = [n for n in restated if n not in (wordings or {})]
    if missing:
        raise NeedsWording(f"{check.name} needs a second wording of the question for {', '.join(missing)}")
    events = _events(check, base, source, options, at)
    fields: dict[str, Any] = {}
    for name in check.fields:
        if name in events:
            fields[name] = _derived(check, name, source, events[name], instantiator).model_dump(mode="json")
        elif name in restated:
            title, body = (wordings or {})[name]
            fields[name] = _restated(check, name, source, title, body, instantiator).model_dump(mode="json")
        else:
            fields[name] = source.model_dump(mode="json")
    fields["metadata"] = {
        "base_sentences": {base: source.model_dump(mode="json")},
        "instantiator": instantiator,
        **({"model": model} if model else {}),
    }
    made = tuple_model(check).model_validate(fields)
    questions = {n: getattr(made, n) for n in check.fields}
    check.resolve({n: v for n, v in tuple_outcomes(check, questions).items() if v is not None})  # consistent
    return made.model_dump(mode="json")


def _events(
    check: Check, base: str, source: ForecastingQuestion, options: Sequence[str] | None, at: Sequence[float] | None
) -> dict[str, OutcomeEvent]:
    compared = _comparisons(check, base)
    if not compared:
        return {}
    if {f.op for f in compared.values()} == {">="}:
        k = len(compared)
        values = list(at) if at is not None else choose_thresholds(source, k)
        if len(values) != k:
            raise ValueError(f"{check.name} needs {k} thresholds, got {len(values)}")
        return {n: OutcomeEvent(question_id=source.id, above=float(values[f.value - 1])) for n, f in compared.items()}
    labels = source.options or []
    m = (check.outcomes or {})[base]
    if len(labels) == m:
        groups = [[o] for o in labels]
    else:  # one union of options, the rest its complement
        chosen = list(options) if options is not None else choose_options(source)
        groups = [chosen, [o for o in labels if o not in chosen]]
    return {n: OutcomeEvent(question_id=source.id, options=groups[f.value]) for n, f in compared.items()}


def choose_options(source: ForecastingQuestion) -> list[str]:
    """One option, or two when there are at least three, picked by the source's id (stable across runs)."""
    labels = source.options or []
    digest = int.from_bytes(hashlib.sha256(source.id.encode()).digest()[:8], "big")
    size = 2 if len(labels) >= 3 and digest % 2 else 1
    first = (digest // 2) % len(labels)
    return [labels[(first + i) % len(labels)] for i in range(size)]


def discrete_outcomes(question: ForecastingQuestion) -> int | None:
    """The number of whole buckets of a discrete numeric question (``metadata.discrete_outcomes``, Metaculus's
    ``inbound_outcome_count``), or None for a continuous one."""
    n = (question.metadata or {}).get("discrete_outcomes")
    if question.question_type != "numeric" or isinstance(n, bool) or not isinstance(n, int) or n < 2:
        return None
    return n


def bucket_edges(locations: np.ndarray, n: int) -> np.ndarray:
    """The locations of k distinct edges between n buckets (j/n, 0 < j < n), each as near its target location as
    the others leave room for, in increasing order (needs k <= n - 1)."""
    k = len(locations)
    edges = np.empty(k, dtype=int)
    for j, target in enumerate(locations):
        lowest = j + 1 if j == 0 else max(j + 1, edges[j - 1] + 1)
        nearest = math.floor(float(target) * n + 0.5)
        edges[j] = min(max(nearest, lowest), n - k + j)  # room for the edges after it
    return edges / n


def choose_thresholds(source: ForecastingQuestion, k: int) -> list[float]:
    """k thresholds inside the range: the crowd's quantiles j/(k+1) if it has a CDF, else even steps of the scale;
    for a discrete question the bucket edges nearest those."""
    r = source.range
    assert r is not None
    levels = np.arange(1, k + 1) / (k + 1)
    crowd = ((source.metadata or {}).get("crowd_forecast") or {}).get("cdf")
    locations = levels
    if crowd is not None:
        try:
            cdf = np.asarray(NumericForecast(cdf=crowd).cdf)
        except ValueError:
            cdf = None
        if cdf is not None and cdf[-1] - cdf[0] > 0:
            quantiles = np.interp(levels, cdf, dist.locations())
            if (np.diff(quantiles) > 0).all() and quantiles[0] > 0 and quantiles[-1] < 1:
                locations = quantiles
    n = discrete_outcomes(source)
    if n is not None:
        if k > n - 1:
            raise ValueError(f"a discrete question with {n} outcomes has {n - 1} edges between them, not {k}")
        return [float(f"{v:.12g}") for v in r.value(bucket_edges(locations, n))]  # 3.5, not 3.5000000000000004
    return _round(r.value(locations), locations, source)


#: How far (in the scale's location, 0 to 1) rounding may move a threshold.
ROUNDING_REACH = 0.02


def _round(values: np.ndarray, locations: np.ndarray, source: ForecastingQuestion) -> list[float]:
    """The coarsest rounding (significant digits; for dates, the day) that keeps the values apart, inside the
    bounds and each within :data:`ROUNDING_REACH` of where it was on the scale."""
    r = source.range
    assert r is not None
    date = source.question_type == "date"

    def ok(v: np.ndarray) -> bool:
        inside = (np.diff(v) > 0).all() and v[0] > r.lower and v[-1] < r.upper
        return bool(inside and (np.abs(r.location(v) - locations) <= ROUNDING_REACH).all())

    if date:
        day = np.round(values / 86400.0) * 86400.0
        return day.tolist() if ok(day) else values.tolist()
    for digits in range(1, 16):
        rounded = np.array([float(f"{v:.{digits}g}") for v in values])
        if ok(rounded):
            return rounded.tolist()
    return values.tolist()


def format_value(source: ForecastingQuestion, value: float) -> str:
    """A threshold as the question's unit writes it: ``1,500 USD``, ``35%``, ``March 3, 2027``."""
    if source.question_type == "date":
        day = datetime.fromtimestamp(value, UTC)
        return f"{day:%B} {day.day}, {day.year}"
    if value.is_integer() and abs(value) < 1e15:
        text = f"{int(value):,}"
    elif 1e-3 <= abs(value) < 1e15:
        text = f"{value:,.6f}".rstrip("0").rstrip(".")
    else:
        text = f"{value:g}"
    unit = source.range.unit if source.range else None
    if not unit or unit == "date":
        return text
    return f"{text}{unit}" if unit in ("%", "pp") else f"{text} {unit}"


def _quote(text: str) -> str:
    return f"\u201c{text.strip()}\u201d"


def _derived(
    check: Check, name: str, source: ForecastingQuestion, event: OutcomeEvent, instantiator: str
) -> ForecastingQuestion:
    title_q = _quote(source.title)
    if event.options is not None:
        chosen = [_quote(o) for o in event.options]
        what = chosen[0] if len(chosen) == 1 else "one of " + ", ".join(chosen[:-1]) + " or " + chosen[-1]
        title = f"Will the outcome of {title_q} be {what}?"
        lead = (
            f"Resolves YES if the question below resolves to {what}, and NO if it resolves to any other option. "
            "It is annulled if that question is annulled."
        )
        detail = f"Options: {'; '.join(source.options or [])}"
    else:
        assert event.above is not None
        t = format_value(source, event.above)
        later = source.question_type == "date"
        word = "later than" if later else "greater than"
        title = f"Will the answer to {title_q} be {word} {t}?"
        lead = (
            f"Resolves YES if the question below resolves to a value {word} {t} (an outcome above its upper bound "
            f"counts as {word} {t}), and NO if it resolves to {t} or {'earlier' if later else 'less'} (or below its "
            "lower bound). It is annulled if that question is annulled."
        )
        r = source.range
        assert r is not None
        detail = f"Range: {format_value(source, r.lower)} to {format_value(source, r.upper)}"
    criteria = source.body.strip() or "(no further criteria given)"
    body = f"{lead}\n\nQuestion: {source.title.strip()}\n{detail}\nResolution criteria: {criteria}"
    return ForecastingQuestion(
        id=_id(check, name, source, instantiator, event.model_dump_json(exclude_none=True)),
        title=title,
        body=body,
        resolution_date=source.resolution_date,
        created_date=source.created_date,
        question_type="binary",
        data_source=instantiator,
        metadata={EVENT_KEY: event.model_dump(mode="json", exclude_none=True)},
        resolution=event.resolution(source),
    )


def _restated(
    check: Check, name: str, source: ForecastingQuestion, title: str, body: str, instantiator: str
) -> ForecastingQuestion:
    """The source question worded anew: same type, range, options, dates and resolution."""
    return source.model_copy(
        update={
            "id": _id(check, name, source, instantiator, json.dumps([title, body])),
            "title": title,
            "body": body,
            "data_source": instantiator,
            "metadata": {"restates": source.id},
            "url": None,
        }
    )


def _id(check: Check, name: str, source: ForecastingQuestion, instantiator: str, detail: str) -> str:
    """Same check, field, source, instantiator and event → same id; a different event → a different one."""
    return str(uuid.uuid5(NAMESPACE, "|".join([check.name, name, instantiator, f"X={source.id}", detail])))


# ------------------------------------------------------------------------------------------ model wording
class NumericWording(BaseModel):
    """A second wording of a numeric question: the same quantity, unit, range and resolution."""

    title: str = Field(min_length=8, description="The question reworded: it must ask for the same quantity.")
    body: str = Field(min_length=20, description="The resolution criteria reworded, with every detail kept.")


def wording_messages(source: ForecastingQuestion) -> list[dict[str, str]]:
    """The prompt asking a model to restate ``source`` (a numeric or date question)."""
    from ..prompts import question_block, render

    r = source.range
    assert r is not None
    scale = "logarithmic" if r.scale == "log" else "linear"
    bounds = (
        f"from {format_value(source, r.lower)} ({'open' if r.open_lower else 'closed'}) "
        f"to {format_value(source, r.upper)} ({'open' if r.open_upper else 'closed'}), {scale} scale"
    )
    user = render("numeric_paraphrase_user", question=question_block(source), range=bounds)
    return [{"role": "system", "content": render("numeric_paraphrase_system")}, {"role": "user", "content": user}]


def unchanged(source: ForecastingQuestion, title: str) -> bool:
    """A "wording" that is the source's title again (up to case and spacing) is no paraphrase."""
    return " ".join(title.lower().split()) == " ".join(source.title.lower().split())
