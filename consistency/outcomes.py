"""How a tuple's multiple-choice and numeric questions enter a check: outcome events, forecast columns, resolutions.

A check's categorical field is a question's outcome *as the tuple groups it* (:mod:`consistency.checks.categorical`):

- a numeric field with 202 outcomes is the question's grid (the 202 bins of its CDF: NUMERIC_PARAPHRASE);
- a numeric field X with k + 1 outcomes and yes/no fields ``X >= j`` is X binned at those fields' thresholds
  (CDF_THRESHOLDS): outcome b lies above b thresholds;
- a multiple-choice field with yes/no fields ``X == o`` groups the options as those fields say (MC_BINARY: the
  options of P, then the rest); with no such fields each option is an outcome.

A yes/no question derived from a multiple-choice or numeric question says what it asks in
``metadata["outcome_event"]`` (:class:`OutcomeEvent`): the source question's id and either the options that make it
YES or the value it must exceed. :func:`forecast_row` turns a tuple's forecasts into the check's columns (the array
:func:`consistency.metrics.scoring.score_forecasts` takes), :func:`tuple_outcomes` its resolutions into the
check's outcomes (which :meth:`~consistency.checks.Check.resolve` propagates).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from itertools import pairwise
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, model_validator

from consistency.errors import InputError

from . import distributions as dist
from .checks import MULTIPLE_CHOICE, NUMERIC, Check
from .checks.logic import Compare
from .models import AnyForecast, ChoiceForecast, Forecast, ForecastEntry, ForecastingQuestion, NumericForecast

#: The metadata key of a derived yes/no question's event.
EVENT_KEY = "outcome_event"


class TupleShapeError(InputError, ValueError):
    """A tuple whose questions do not fit its check's categorical fields (named with the reason)."""


class OutcomeEvent(BaseModel):
    """The event a yes/no question asks about another question's outcome: one of ``options`` (multiple choice), or
    a value greater than ``above`` (numeric or date, in the question's unit; a date as POSIX seconds)."""

    model_config = ConfigDict(extra="forbid")

    question_id: str
    options: list[str] | None = None
    above: float | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> OutcomeEvent:
        if (self.options is None) == (self.above is None):
            raise ValueError("an outcome event gives either options or above, not both or neither")
        if self.options is not None and not self.options:
            raise ValueError("an outcome event's options are not empty")
        if self.above is not None and not math.isfinite(self.above):
            raise ValueError("an outcome event's threshold is a finite number")
        return self

    def resolution(self, source: ForecastingQuestion) -> bool | None:
        """Whether the event happened, from ``source``'s resolution (None while it is unresolved)."""
        if source.resolution is None:
            return None
        if self.options is not None:
            return source.resolution in self.options
        index = source.outcome_index()  # on a closed side an outcome beyond the bound counts at the bound
        t = source.outcome_location()
        assert index is not None and t is not None and source.range is not None
        threshold = float(source.range.location(self.above))
        if index in (0, dist.BINS - 1):
            return index == dist.BINS - 1
        return min(max(t, 0.0), 1.0) > threshold

    def probability(self, source: ForecastingQuestion, forecast: AnyForecast) -> float:
        """The event's probability under ``source``'s forecast."""
        if self.options is not None:
            assert isinstance(forecast, ChoiceForecast)
            chosen = set(self.options)
            return math.fsum(p for o, p in zip(source.options or [], forecast.probs, strict=True) if o in chosen)
        assert isinstance(forecast, NumericForecast) and self.above is not None
        return 1.0 - forecast.cdf_at(source, self.above)


def event_of(question: ForecastingQuestion) -> OutcomeEvent | None:
    """The outcome event of a derived yes/no question, or None."""
    raw = (question.metadata or {}).get(EVENT_KEY)
    return None if raw is None else OutcomeEvent.model_validate(raw)


# ------------------------------------------------------------------------------------------ structure
def _comparisons(check: Check, field: str) -> dict[str, tuple[str, int]]:
    """The yes/no fields that compare ``field``'s base: field name → (operator, outcome)."""
    base = check.formulas[field].name  # type: ignore[attr-defined]
    return {
        name: (f.op, f.value)
        for name, f in check.formulas.items()
        if isinstance(f, Compare) and f.name == base and name not in check.categorical
    }


def _event(check: Check, name: str, question: ForecastingQuestion, source: ForecastingQuestion) -> OutcomeEvent:
    try:
        event = event_of(question)
    except ValueError as exc:
        raise TupleShapeError(f"{check.name}: field {name}'s {EVENT_KEY}: {exc}") from None
    if event is None:
        raise TupleShapeError(f"{check.name}: field {name} has no metadata.{EVENT_KEY} saying what it asks")
    if event.question_id != source.id:
        raise TupleShapeError(
            f"{check.name}: field {name} asks about question {event.question_id}, not the tuple's {source.id}"
        )
    return event


def option_groups(check: Check, field: str, questions: Mapping[str, ForecastingQuestion]) -> list[list[int]]:
    """The options of a multiple-choice field's question behind each of the field's outcomes."""
    source = questions[field]
    options = source.options or []
    m = check.categorical[field]
    groups: list[list[int] | None] = [None] * m
    for name, (op, value) in _comparisons(check, field).items():
        if op != "==":
            raise TupleShapeError(f"{check.name}: field {name} compares {field} with {op}; only == groups options")
        event = _event(check, name, questions[name], source)
        if event.options is None:
            raise TupleShapeError(f"{check.name}: field {name}'s event names no options of {field}")
        unknown = [o for o in event.options if o not in options]
        if unknown:
            raise TupleShapeError(f"{check.name}: field {name} names {unknown[0]!r}, not an option of {field}")
        groups[value] = [options.index(o) for o in event.options]
    named = [g for g in groups if g is not None]
    used = [i for g in named for i in g]
    if len(used) != len(set(used)):
        raise TupleShapeError(f"{check.name}: the yes/no fields about {field} share an option")
    rest = [i for i in range(len(options)) if i not in used]
    missing = [o for o, g in enumerate(groups) if g is None]
    if not named:  # no yes/no field groups them: each option is an outcome
        if len(options) != m:
            raise TupleShapeError(f"{check.name}: field {field} has {m} outcomes, its question {len(options)} options")
        return [[i] for i in range(m)]
    if len(missing) == 1 and rest:
        groups[missing[0]] = rest
    elif missing or rest:
        raise TupleShapeError(f"{check.name}: the options of {field} do not split into its {m} outcomes")
    return groups  # type: ignore[return-value]


def thresholds(check: Check, field: str, questions: Mapping[str, ForecastingQuestion]) -> np.ndarray:
    """The increasing thresholds (in the question's unit) that bin a numeric field into its outcomes."""
    source = questions[field]
    k = check.categorical[field] - 1
    found: dict[int, float] = {}
    for name, (op, value) in _comparisons(check, field).items():
        if op != ">=":
            raise TupleShapeError(f"{check.name}: field {name} compares {field} with {op}; thresholds use >=")
        event = _event(check, name, questions[name], source)
        if event.above is None:
            raise TupleShapeError(f"{check.name}: field {name}'s event gives no threshold of {field}")
        found[value] = event.above
    if sorted(found) != list(range(1, k + 1)):
        raise TupleShapeError(f"{check.name}: field {field} needs yes/no fields at thresholds 1 … {k}")
    values = np.array([found[j] for j in range(1, k + 1)])
    if (np.diff(values) <= 0).any():
        raise TupleShapeError(f"{check.name}: the thresholds of {field} must increase, got {values.tolist()}")
    return values


def _layout(check: Check, field: str) -> str:
    kind = check.question_types[field]
    m = check.categorical[field]
    if kind == NUMERIC:
        return "grid" if m == dist.BINS and not _comparisons(check, field) else "thresholds"
    assert kind == MULTIPLE_CHOICE
    return "options"


# ------------------------------------------------------------------------------------------ forecasts → columns
def forecast_row(check: Check, entries: Mapping[str, ForecastEntry]) -> np.ndarray:
    """One tuple's forecasts in the check's columns (``entries``: field → question and forecast)."""
    questions = {name: e.question for name, e in entries.items()}
    row = np.empty(check.n_columns)
    for name in check.fields:
        entry = entries[name]
        where = check.column_slices[name]
        if name not in check.categorical:
            if not isinstance(entry.forecast, Forecast):
                raise TupleShapeError(f"{check.name}: field {name} is a yes/no question; its forecast is a prob")
            row[where] = entry.forecast.prob
            continue
        row[where] = _distribution(check, name, entry, questions)
    return row


def forecast_rows(check: Check, lines: Iterable[Mapping[str, ForecastEntry]]) -> np.ndarray:
    """Many tuples' forecasts: (N, n_columns)."""
    rows = [forecast_row(check, line) for line in lines]
    return np.array(rows, dtype=float).reshape(len(rows), check.n_columns)


def _distribution(check: Check, name: str, entry: ForecastEntry, questions: Mapping[str, ForecastingQuestion]):
    layout = _layout(check, name)
    forecast = entry.forecast
    if layout == "options":
        if not isinstance(forecast, ChoiceForecast):
            raise TupleShapeError(f"{check.name}: field {name} is multiple-choice; its forecast gives probs")
        probs = np.asarray(forecast.probs)
        return [probs[g].sum() for g in option_groups(check, name, questions)]
    if not isinstance(forecast, NumericForecast):
        raise TupleShapeError(f"{check.name}: field {name} is numeric; its forecast gives a cdf")
    if layout == "grid":
        _same_grid(check, name, questions)
        return dist.pmf(forecast.cdf)
    question = questions[name]
    assert question.range is not None
    cdf = dist.cdf_at(forecast.cdf, question.range.location(thresholds(check, name, questions)))
    return np.diff(np.concatenate([[0.0], cdf, [1.0]]))


def _same_grid(check: Check, name: str, questions: Mapping[str, ForecastingQuestion]) -> None:
    """Grid fields compared outcome by outcome must share the range (their bins are then the same values)."""

    def grid(n: str) -> tuple:
        r = questions[n].range
        return () if r is None else (r.lower, r.upper, r.scale, r.zero_point)

    for other in check.categorical:
        if _layout(check, other) == "grid" and grid(other) != grid(name):
            raise TupleShapeError(f"{check.name}: fields {name} and {other} have different ranges, so different grids")


# ------------------------------------------------------------------------------------------ resolutions
def tuple_outcomes(check: Check, questions: Mapping[str, ForecastingQuestion]) -> dict[str, Any]:
    """Each field's resolution in the check's terms: yes/no as True/False, a categorical field as its outcome
    (None when unresolved); pass it to :meth:`~consistency.checks.Check.resolve` to check or propagate it."""
    out: dict[str, Any] = {}
    for name in check.fields:
        question = questions[name]
        if name not in check.categorical:
            out[name] = question.resolution
            continue
        if question.resolution is None:
            out[name] = None
            continue
        layout = _layout(check, name)
        if layout == "options":
            index = (question.options or []).index(question.resolution)  # type: ignore[arg-type]
            out[name] = next(o for o, g in enumerate(option_groups(check, name, questions)) if index in g)
        elif layout == "grid":
            out[name] = question.outcome_index()
        else:
            out[name] = sum(
                bool(OutcomeEvent(question_id=question.id, above=t).resolution(question))
                for t in thresholds(check, name, questions)
            )
    return out


# ------------------------------------------------------------------------------------------ columns → forecasts
def column_labels(check: Check, field: str, questions: Mapping[str, ForecastingQuestion]) -> list[str]:
    """What each column of a categorical field stands for: its options, its bin between thresholds, or its grid
    cell (a column is a value of its own in a joint repair, named by its question and this label)."""
    layout = _layout(check, field)
    if layout == "options":
        options = questions[field].options or []
        return [" or ".join(options[i] for i in g) for g in option_groups(check, field, questions)]
    if layout == "grid":
        return [f"bin {j}" for j in range(dist.BINS)]
    t = [f"{v:g}" for v in thresholds(check, field, questions)]
    return [f"<= {t[0]}", *(f"{a} to {b}" for a, b in pairwise(t)), f"> {t[-1]}"]


def forecast_with_columns(
    check: Check, field: str, entries: Mapping[str, ForecastEntry], values: np.ndarray
) -> AnyForecast:
    """``field``'s forecast moved to the column masses ``values`` (a repair's), the rest of its shape kept: each
    option group rescaled (a group with no mass shared evenly), a CDF rescaled between the thresholds (linear in
    the scale where a bin had no mass) so that it passes through the new masses at the thresholds."""
    questions = {name: e.question for name, e in entries.items()}
    forecast, question = entries[field].forecast, questions[field]
    values = np.clip(np.asarray(values, dtype=float), 0.0, 1.0)
    layout = _layout(check, field)
    if layout == "options":
        assert isinstance(forecast, ChoiceForecast)
        old = np.asarray(forecast.probs, dtype=float)
        new = np.zeros_like(old)
        for g, mass in zip(option_groups(check, field, questions), values / values.sum(), strict=True):
            had = old[g].sum()
            new[g] = old[g] * (mass / had) if had > 0 else mass / len(g)
        return ChoiceForecast(probs=(new / new.sum()).tolist(), metadata=forecast.metadata)
    assert isinstance(forecast, NumericForecast) and question.range is not None
    if layout == "grid":
        cdf = np.cumsum(values / values.sum())[:-1]
    else:
        cdf = _rescaled_cdf(
            np.asarray(forecast.cdf), question.range.location(thresholds(check, field, questions)), values
        )
    cdf = np.clip(np.maximum.accumulate(cdf), 0.0, 1.0)
    return NumericForecast(cdf=cdf.tolist(), metadata=forecast.metadata)


def _rescaled_cdf(cdf: np.ndarray, s: np.ndarray, masses: np.ndarray) -> np.ndarray:
    """The CDF ``cdf`` mapped, between the threshold locations ``s``, onto the bin ``masses``."""
    x = np.linspace(0.0, 1.0, dist.GRID_POINTS)
    a = np.concatenate([[0.0], dist.cdf_at(cdf, s), [1.0]])  # old cumulative mass at 0, s_1 … s_k, 1
    b = np.concatenate([[0.0], np.cumsum(masses / masses.sum())[:-1], [1.0]])
    edges = np.concatenate([[0.0], s, [1.0]])
    seg = np.searchsorted(s, x, side="right")  # thresholds at or below each grid point
    had, now = a[seg + 1] - a[seg], b[seg + 1] - b[seg]
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = b[seg] + (cdf - a[seg]) * now / had
        even = b[seg] + now * (x - edges[seg]) / (edges[seg + 1] - edges[seg])
    out = np.where(had > 0, scaled, even)
    # The grid is linear between its points: the two points around each threshold are set so that the line
    # between them passes through the new cumulative mass there (within the old values' span: still monotone).
    cells = dist.GRID_POINTS - 1
    for t, target in zip(s, b[1:-1], strict=True):
        lo = min(int(np.floor(t * cells)), cells - 1)
        f = t * cells - lo
        if f == 0.0:
            out[lo] = target
            continue
        d = min((target - out[lo]) / f, (out[lo + 1] - target) / (1.0 - f))
        out[lo], out[lo + 1] = target - f * d, target + (1.0 - f) * d
    return out
