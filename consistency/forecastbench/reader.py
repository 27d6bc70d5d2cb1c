"""A ForecastBench question set (and its resolution set) as our questions.

Market questions become one question each; the market's value at the freeze date is kept as the
crowd forecast (``metadata.market_prob``, which the market-aware ranking methods read, e.g.
``cc leaderboard --method difficulty`` on a ground-truth run). Dataset questions become one
question per resolution date, with the ``{resolution_date}`` and ``{forecast_due_date}``
placeholders filled. A combination question
(sets up to 2025-08-31) becomes one question per direction (and date), worded exactly from its two
questions. Every question's id carries its ForecastBench identity (:mod:`.keys`), and
``metadata.forecastbench`` keeps ForecastBench's fields, the horizon and, where the resolution set
has a row, that row: a resolved row sets the question's resolution; an unresolved market row's
current value is kept there as information and never becomes an outcome.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from ..checks.combination import COMBINATION, DIRECTIONS
from ..generate.template import render_field
from ..models import ForecastingQuestion
from ..sources.scraper import join_body
from .combination import combination_tuple
from .formats import NA, Problem, QuestionSet, ResolutionRow, ResolutionSet, SetQuestion, is_market
from .keys import RowKey, key_of, make_key, question_id


@dataclass
class Imported:
    """What one question set gave: questions, COMBINATION tuples, and what was left out or matched."""

    questions: list[ForecastingQuestion] = field(default_factory=list)
    tuples: list[dict[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    per_source: Counter = field(default_factory=Counter)  # questions written
    outcomes: Counter = field(default_factory=Counter)  # outcomes attached
    unresolved_markets: int = 0  # market rows kept as information only
    unmatched_rows: int = 0  # resolution rows for questions not in the set (another set's, e.g. the human set's)

    def extend(self, other: Imported) -> None:
        self.questions += other.questions
        self.tuples += other.tuples
        self.problems += other.problems
        self.per_source.update(other.per_source)
        self.outcomes.update(other.outcomes)
        self.unresolved_markets += other.unresolved_markets
        self.unmatched_rows += other.unmatched_rows


def row_key(row: ResolutionRow, due: str) -> RowKey:
    ids = tuple(row.id) if isinstance(row.id, list) else (row.id,)
    day = None if is_market(row.source) else row.resolution_date
    return make_key(due, row.source, ids, day, row.direction)


def _fill(text: str, due: str, day: str | None) -> str:
    text = text.replace("{forecast_due_date}", due)
    return text.replace("{resolution_date}", day) if day else text


def _time(value: str | None) -> datetime | None:
    if not value or value == NA:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed


@lru_cache(maxsize=4096)
def _day_time(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=UTC)  # a set's few dates, met thousands of times


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number else None


def _text(value: str | None) -> str:
    return "" if value in (None, NA) else str(value).strip()


_KEPT = ("freeze_datetime", "freeze_datetime_value", "freeze_datetime_value_explanation",
         "market_info_open_datetime", "market_info_close_datetime")  # fmt: skip


@dataclass(frozen=True)
class _Prepared:
    """What a set question gives every question made from it (one per resolution date, or per direction), read
    once: its texts stripped, with only the placeholders left to fill, and its metadata that no date changes."""

    question: str
    criteria: str
    market_criteria: str
    background: str
    intro: str
    value_line: str  # the freeze value's line without its explanation ("" when it is not shown)
    explanation: str
    kept: dict[str, Any]  # ForecastBench's fields kept in metadata.forecastbench
    crowd: float | None  # a market's value at the freeze date

    @classmethod
    def of(cls, q: SetQuestion, freeze_values: bool) -> _Prepared:
        value_line = ""
        if q.freeze_datetime_value not in (None, NA) and (freeze_values or not is_market(q.source)):
            when = _text(q.freeze_datetime)[:10]
            what = "Market value" if is_market(q.source) else "Latest value"
            value_line = f"{what} on {when}: {q.freeze_datetime_value}. "
        kept = {name: value for name in _KEPT if (value := getattr(q, name)) not in (None, NA, "")}
        crowd = _number(q.freeze_datetime_value) if is_market(q.source) else None
        return cls(q.question, _text(q.resolution_criteria), _text(q.market_info_resolution_criteria),
                   _text(q.background), _text(q.source_intro), value_line, _text(q.freeze_datetime_value_explanation),
                   kept, crowd)  # fmt: skip


def _body(p: _Prepared, rest: str, due: str, day: str | None) -> str:
    # The criteria lead, unlabelled: forecasters are shown the body as "resolution criteria and details".
    return join_body(
        ("", _fill(p.criteria, due, day)),
        ("", rest),
        ("Market's resolution criteria", _fill(p.market_criteria, due, day)),
        ("Background", _fill(p.background, due, day)),
        ("About the source", _fill(p.intro, due, day)),
        ("", (p.value_line + _fill(p.explanation, due, day)).strip() if p.value_line else ""),
    )


def _metadata(
    q: SetQuestion, qset: QuestionSet, key: RowKey, p: _Prepared, combination_of: list[str] | None = None
) -> dict[str, Any]:
    """A question's ``metadata``: its source as category, its ForecastBench row (with the ids of the two questions
    a combination is made of), and a market's value at the freeze date when it is a forecast of it."""
    fb: dict[str, Any] = {
        "id": key.fb_id,
        "source": q.source,
        "forecast_due_date": qset.due,
        "question_set": qset.name,
        "horizon": key.horizon,
        "resolution_date": key.resolution_date,
        "direction": list(key.direction) if key.direction else None,
        **p.kept,
    }
    if combination_of is not None:
        fb["combination_of"] = combination_of
    if p.crowd is not None and not key.combination and 0.0 <= p.crowd <= 1.0:
        # the market at the freeze date, before the due date: a forecast
        return {"category": q.source, "forecastbench": fb, "market_prob": p.crowd}
    return {"category": q.source, "forecastbench": fb}


def _single(
    q: SetQuestion, qset: QuestionSet, day: str | None, freeze_values: bool, prepared: _Prepared | None = None
) -> ForecastingQuestion:
    p = prepared or _Prepared.of(q, freeze_values)
    key = RowKey(qset.due, q.source, (str(q.id),), day)
    head, _, rest = _fill(p.question, qset.due, day).strip().partition("\n\n")
    return ForecastingQuestion(
        id=question_id(key),
        title=head.strip(),
        body=_body(p, rest.strip(), qset.due, day),
        resolution_date=_day_time(day) if day else _time(q.market_info_close_datetime),
        created_date=_day_time(qset.due),
        data_source=f"forecastbench/{q.source}",
        url=None if _text(q.url) == "" else q.url,
        metadata=_metadata(q, qset, key, p),
    )


def _combination(
    q: SetQuestion, qset: QuestionSet, day: str | None, freeze_values: bool
) -> tuple[list[ForecastingQuestion], dict[str, ForecastingQuestion]]:
    """The four direction questions of one combination (at one date), and its two questions."""
    parts = [SetQuestion.model_validate({**part, "source": q.source}) for part in q.combination_of]  # type: ignore[union-attr]
    bases = {"P": _single(parts[0], qset, day, freeze_values), "Q": _single(parts[1], qset, day, freeze_values)}
    prepared = _Prepared.of(q, freeze_values)
    out = []
    for name, direction in DIRECTIONS.items():
        key = RowKey(qset.due, q.source, tuple(str(i) for i in q.id), day, direction)
        title, body = render_field(COMBINATION.formulas[name], bases)
        out.append(
            ForecastingQuestion(
                id=question_id(key),
                title=title,
                body=body,
                resolution_date=_day_time(day)
                if day
                else max((b.resolution_date for b in bases.values() if b.resolution_date), default=None),
                created_date=_day_time(qset.due),
                data_source=f"forecastbench/{q.source}",
                metadata=_metadata(q, qset, key, prepared, [b.id for b in bases.values()]),
            )
        )
    return out, bases


def _attach(question: ForecastingQuestion, row: ResolutionRow, imported: Imported) -> None:
    fb = question.metadata["forecastbench"]  # type: ignore[index]
    fb["resolution"] = {"resolved": row.resolved, "resolved_to": row.resolved_to, "date": row.resolution_date}
    source = fb["source"]
    if row.resolved:
        question.resolution = row.resolved_to == 1.0
        imported.outcomes[source] += 1
    elif is_market(source):
        imported.unresolved_markets += 1


def import_set(qset: QuestionSet, resolutions: ResolutionSet | None = None, *, freeze_values: bool = False) -> Imported:
    """Our questions (and COMBINATION tuples) for one question set, with the outcomes ``resolutions`` give."""
    imported = Imported(problems=list(qset.problems))
    rows: dict[RowKey, ResolutionRow] = {}
    if resolutions is not None:
        imported.problems += resolutions.problems
        if resolutions.due != qset.due:
            imported.problems.append(
                Problem(
                    resolutions.file, "forecast_due_date", f"is {resolutions.due}, but {qset.file} is due {qset.due}"
                )
            )
        else:
            rows = {row_key(r, qset.due): r for r in resolutions.rows}
    used: set[RowKey] = set()
    combinations: list[tuple[list[ForecastingQuestion], dict[str, ForecastingQuestion]]] = []
    for i, q in enumerate(qset.questions):
        days: list[str | None] = list(q.resolution_dates) if isinstance(q.resolution_dates, list) else [None]
        prepared = None if q.is_combination else _Prepared.of(q, freeze_values)
        for day in days:
            try:
                made, bases = (
                    _combination(q, qset, day, freeze_values)
                    if q.is_combination
                    else ([_single(q, qset, day, freeze_values, prepared)], None)
                )
            except ValueError as exc:  # a combination's parts that are not questions
                imported.problems.append(Problem(qset.file, f"questions[{i}] (id {q.id})", str(exc).split("\n")[0]))
                break
            for question in made:
                key = key_of(question.id)
                if key in rows:
                    _attach(question, rows[key], imported)
                    used.add(key)  # type: ignore[arg-type]
                imported.per_source[q.source] += 1
            imported.questions += made
            if bases is not None:
                combinations.append((made, bases))
    by_id = {question.id: question for question in imported.questions}
    for made, bases in combinations:
        for name, base in bases.items():
            if base.id in by_id:  # the set's own question: the one forecasters see, with its outcome
                bases[name] = by_id[base.id]
            elif (key := key_of(base.id)) in rows:
                _attach(base, rows[key], Imported())  # type: ignore[index]
        imported.tuples.append(combination_tuple(bases, made))
    imported.unmatched_rows = sum(1 for k in rows if k not in used)
    return imported
