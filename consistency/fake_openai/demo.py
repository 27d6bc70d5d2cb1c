"""The ``demo`` rule: answers that make every pipeline produce sensible output offline.

The default rule shapes any schema with placeholder values (dates of 2024-01-01, scores drawn at
random), so question pipelines reject most of what it writes. This rule answers each of the
project's structured requests by what it asks for: forecasts are the default rule's probability
of the question, articles are suitable, proposed and written questions resolve inside the window
the prompt states, judgements pass (score 8), generated tuple fields reword their base questions
(chains lower a threshold step by step),
and due questions resolve YES or NO (a pure function of the question). Deterministic per request
text, so documentation examples and tests can show its output.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

from consistency.fake_openai.replies import Reply, Rule, ScriptedRequest

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["demo_rule"]

_WINDOW = re.compile(r"after (\d{4}-\d{2}-\d{2}) and no later than (\d{4}-\d{2}-\d{2})")
_BY = re.compile(r"(?:known by|settled by) (\d{4}-\d{2}-\d{2})")
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_QUESTION = re.compile(r"^(?:Question|Title): (.*)$", re.M)
_LABELLED = re.compile(r"\[(question \([a-z]\))\]\nQuestion: (.*)")
_CRITERIA = re.compile(r"^Resolution criteria and details: (.*)$", re.M)
_FAR = date(2030, 6, 30)  # when a prompt states no window: comfortably in the future
_PLACEHOLDER_DATES = {"2024-01-01", "2024-01-01T00:00:00Z"}


def _window_day(text: str) -> date:
    """A resolution date inside the window the prompt states (its midpoint), else a future default."""
    if found := _WINDOW.search(text):
        start, end = (date.fromisoformat(d) for d in found.groups())
        return start + (end - start) / 2 if end > start else end
    if found := _BY.search(text):
        return date.fromisoformat(found.group(1)) - timedelta(days=1)
    return _FAR


def _spoken(day: date) -> str:
    return f"{day:%B} {day.day}, {day.year}"


def _criteria(subject: str, day: date) -> str:
    return (
        f"Resolves YES if major wire services or official statements report that {subject} by {_spoken(day)} "
        f"(inclusive, UTC); resolves NO otherwise."
    )


def _first(pattern: re.Pattern[str], text: str, default: str = "") -> str:
    found = pattern.search(text)
    return found.group(found.lastindex or 0).strip() if found else default


def _proposed(text: str) -> dict[str, Any]:
    day = _window_day(text)
    topic = _first(re.compile(r"^Title: (.*)$", re.M), text, "the story").rstrip(".")
    title = f"Will there be an official follow-up to \u201c{topic}\u201d by {_spoken(day)}?"
    subject = f"an official follow-up to \u201c{topic}\u201d was announced"
    return {"questions": [{"title": title, "body": _criteria(subject, day), "resolution_date": day.isoformat()}]}


def _spanned(text: str) -> dict[str, Any]:
    title = _first(_QUESTION, text, "Will it happen?")
    body = _first(_CRITERIA, text, "Resolves YES if it happens by the resolution date; NO otherwise.")
    variant = title.replace("an official follow-up", "a second official follow-up", 1)
    if variant == title:
        variant = f"{title.rstrip('?')} (in a second country)?"
    return {"questions": [{"title": variant, "body": body}]}


_TAG_TITLES = (
    "Will {tag} announce new {category} measures before {by}?",
    "Will official statistics show {tag} outperforming its previous year in {category} before {by}?",
    "Will an international agreement involving {tag} change the {category} outlook before {by}?",
    "Will a court or parliament ruling on {tag} make headlines in {category} before {by}?",
)


def _titles(text: str) -> dict[str, Any]:
    by = _spoken(_window_day(text) + timedelta(days=1)) if _BY.search(text) else _spoken(_FAR)
    category = _first(re.compile(r"^Category: (.*)$", re.M), text, "policy")
    tags = [t.strip() for t in _first(re.compile(r"^Tags: (.*)$", re.M), text).split(",") if t.strip()]
    if tags:
        return {"titles": [_TAG_TITLES[i % len(_TAG_TITLES)].format(tag=t, category=category, by=by)
                           for i, t in enumerate(tags)]}  # fmt: skip
    source = _first(_QUESTION, text, "the source question").rstrip("?")
    titles = [
        f"Will a precondition of \u201c{source}\u201d be met before {by}?",
        f"Will an official report bearing on \u201c{source}\u201d be published before {by}?",
    ]
    return {"titles": titles}


def _field(text: str) -> dict[str, Any]:
    """A tuple field: the relation the prompt asks for, spelled out over the base questions' titles."""
    logic = _first(re.compile(r"The new question must (.*)\.\s*$", re.M), text, "resolve YES exactly when it does")
    for label, title in _LABELLED.findall(text):
        logic = logic.replace(label, f"\u201c{title.strip()}\u201d")
    if found := re.match(r"assume that (.*) and resolve YES exactly when (.*); it is annulled", logic):
        title = f"Given that {found.group(1)}, will it be that {found.group(2)}?"
    elif found := re.match(r"resolve YES exactly when (.*?)(?:, and NO otherwise)?$", logic):
        title = f"Will it be that {found.group(1)}?"
    elif found := re.match(r"resolve YES whenever (.*) resolves YES", logic):
        title = f"Will {found.group(1)} or a comparable development resolve YES?"
    else:
        title = f"Will the following hold: {logic}?"
    body = f"This question must {logic}. Each quoted question keeps its own resolution criteria and dates."
    return {"title": title, "body": body}


_COUNT = re.compile(r"Write (\d+) new questions")
_THRESHOLD = re.compile(r"\b(at least|more than|above|over|exceed) ([$]?)(\d[\d,]*)")


def _chain(text: str) -> dict[str, Any]:
    """A MONOTONE chain: the source's threshold lowered step by step (by a fifth of it each time), or,
    when it states none, the same question with a wider scope (it or a comparable development)."""
    n = int(_first(_COUNT, text, "2"))
    title = _first(_QUESTION, text, "Will it happen?")
    body = _first(_CRITERIA, text, "Resolves YES if it happens by the resolution date; NO otherwise.")
    found = _THRESHOLD.search(title)
    out = []
    for i in range(1, n + 1):
        if found:
            value = int(found.group(3).replace(",", ""))
            lower = f"{max(value - i * max(value // 5, 1), 0):,}"
            new = f"{found.group(1)} {found.group(2)}{lower}"
            weaker = (title.replace(found.group(0), new, 1), body.replace(found.group(3), lower))
        else:
            wider = " or a comparable development" * i
            weaker = (f"{title.rstrip('?')} (counting{wider})?", f"{body} Also YES on{wider} of the same kind.")
        out.append({"title": weaker[0], "body": weaker[1], "resolution_date": None})
    return {"questions": out}


def _resolution(text: str, probability_for: Callable[[str], float]) -> dict[str, Any]:
    yes = probability_for(_first(_QUESTION, text, text)) >= 0.5
    return {
        "justification": "Reports up to the resolution date " + ("confirm it." if yes else "show it did not happen."),
        "answer": "yes" if yes else "no",
        "confidence": 0.8,
    }


def _future_dates(value: Any, day: date) -> Any:
    """Replace the schema builder's placeholder dates (2024-01-01) with ``day``."""
    if isinstance(value, dict):
        return {k: _future_dates(v, day) for k, v in value.items()}
    if isinstance(value, list):
        return [_future_dates(v, day) for v in value]
    if isinstance(value, str) and value in _PLACEHOLDER_DATES:
        return day.isoformat() if len(value) == 10 else f"{day.isoformat()}T00:00:00Z"
    return value


def demo_rule(fallback: Rule, probability_for: Callable[[str], float]) -> Rule:
    """The offline demo: every pipeline's requests answered so that it produces sensible output.

    ``fallback`` answers the rest (forecasts); ``probability_for`` decides resolutions (yes when >= 0.5).
    """
    judged = {"QuestionVerdict", "Verdict", "RelevanceAnswer", "Judgement"}

    async def rule(request: ScriptedRequest) -> Any:
        text, tool = request.last_user_text, request.tool_name
        if tool == "Suitability":
            return Reply.json({"reasons": "The article reports a decision still pending.", "suitable": True})
        if tool == "ProposedQuestions":
            return Reply.json(_proposed(text))
        if tool == "RephrasedQuestion":
            return Reply.json({"title": _first(_QUESTION, text), "body": _first(_CRITERIA, text)})
        if tool == "Recheck":
            return Reply.json({"reasons": "The article leaves it open.", "settled_by_article": False,
                               "mismatched": False})  # fmt: skip
        if tool == "SpannedQuestions":
            return Reply.json(_spanned(text))
        if tool in judged:
            return Reply.json({"reasons": "Clear, precise resolution criteria; the relation holds.", "score": 8})
        if tool == "QuestionBody":
            day = _window_day(text)
            title = _first(re.compile(r"^Title: (.*)$", re.M), text, "the question")
            body = (
                f"Resolves YES if, by {_spoken(day)} (inclusive, UTC), major wire services or official statements "
                f"confirm that the answer to \u201c{title}\u201d is yes; resolves NO otherwise."
            )
            return Reply.json({"body": body, "resolution_date": day.isoformat()})
        if tool == "Titles":
            return Reply.json(_titles(text))
        if tool == "FieldText":
            return Reply.json(_field(text))
        if tool == "ChainText":
            return Reply.json(_chain(text))
        if tool == "ResolutionAnswer":
            return Reply.json(_resolution(text, probability_for))
        outcome = fallback(request)
        if isinstance(outcome, Reply) and outcome.kind == "json":
            return Reply.json(_future_dates(outcome.value, _window_day(text)))
        return outcome

    return rule
