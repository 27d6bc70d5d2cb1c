"""A scripted world for multiple-choice and numeric questions: one distribution behind every answer about them.

Every multiple-choice question has a distribution over its options, a pure function of its title and options;
every numeric (or date) question a CDF, a pure function of its range (so two wordings of one question agree).
The scripted rules answer from these (:func:`categorical_reply`, used by :func:`~.rules.schema_rule`):

- a request for a probability per option (a schema with a ``probabilities`` array, the prompt listing the
  options) gets the world's distribution; a request for percentiles (``p5``, ``p50``... properties, the prompt
  stating the range) the world's quantiles; free text about them, the same numbers in lines a reader can parse
  (``Red: 30.0%``, ``Percentile 5: 12``); a request for the next token after lettered options (``logprobs``)
  the distribution over the letters;
- a yes/no question derived from one of them (“Will the outcome of “X” be “A”?”, “Will the answer to “X” be
  greater than 10?”, as :mod:`consistency.generate.categorical` writes them) gets the event's probability under
  the world (:meth:`World.event`).

The numeric world's CDF is what :meth:`~consistency.models.NumericForecast.from_percentiles` makes of its
quantiles at the levels the forecasters ask for, so a forecaster that passes the answers on faithfully is exactly
coherent: zero violation on PARTITION, MC_BINARY, CDF_THRESHOLDS and NUMERIC_PARAPHRASE. :class:`Distortion`
makes incoherent worlds from it, valid (yes/no answers about the options summing to 1.2, a CDF shifted against its
thresholds, a second wording's CDF shifted against the first) or not (a multiple-choice answer summing to 1.2,
percentiles out of order).

A derived yes/no question names its source by title only: its range (and an exact threshold) come from the
questions the world was given (tuple or question files), else from the text (``Range: L to U``, taken as a
linear scale with closed bounds: exact for those).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from statistics import NormalDist
from typing import Any

import numpy as np

from .. import distributions as dist
from ..models import ForecastingQuestion, NumericForecast, NumericRange
from .worlds import split_quotes, strip_detail

__all__ = ["Distortion", "World", "categorical_reply"]

_QUESTION = re.compile(r"^Question: (.*)$", re.M)
_NUMBERED = re.compile(r"^(\d+)\. (.+)$")
_LETTERED = re.compile(r"^([A-Z])\. (.+)$")
_BOUND = re.compile(r"^(Lower|Upper) bound: (\S+) \((open|closed)\b", re.M)
_UNIT = re.compile(r"^Unit: (.+)$", re.M)
_SCALE = re.compile(r"^Scale: (linear|logarithmic)(?: around (\S+))?", re.M)
_RANGE = re.compile(r"^Range: (.+) to (.+)$", re.M)
_OPTIONS_LINE = re.compile(r"^Options: (.+)$", re.M)
_LEVEL = re.compile(r"^p(\d+)$")
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Distortion:
    """How a world's answers depart from it (all neutral by default: a coherent world).

    ``option_scale`` multiplies every stated option probability (1.2: they sum to 1.2, an invalid answer);
    ``option_events`` multiplies the probability (capped at 1) of every yes/no question about options, so that a
    partition's answers sum to it while the multiple-choice answers stay valid; ``shift`` moves every stated
    percentile by this fraction of the range (on its scale) while the threshold questions keep the world's CDF,
    and ``restated_shift`` moves those of a question restating another (``metadata.restates``: a second wording)
    by this much more; ``reverse`` states the percentiles from the highest down (out of order, an invalid answer)."""

    option_scale: float = 1.0
    option_events: float = 1.0
    shift: float = 0.0
    restated_shift: float = 0.0
    reverse: bool = False


def _unit(*parts: object) -> float:
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


class World:
    """The distributions behind a scripted server's answers about multiple-choice and numeric questions.

    ``questions`` (sources and the yes/no questions derived from them, e.g. every question of some tuple files;
    None: those of the bundled tuples, :func:`bundled_questions`, read when first needed) let a derived question
    be answered exactly; a question they do not hold is read from its text."""

    def __init__(
        self, questions: Iterable[ForecastingQuestion] | None = None, distortion: Distortion | None = None
    ) -> None:
        self.distortion = distortion or Distortion()
        self._questions = questions
        self._by_title: dict[str, ForecastingQuestion] | None = None
        self._by_id: dict[str, ForecastingQuestion] = {}

    @property
    def by_title(self) -> dict[str, ForecastingQuestion]:
        """The known questions by title (the first of each title), indexed on first use."""
        if self._by_title is None:
            self._by_title = {}
            for q in bundled_questions() if self._questions is None else self._questions:
                self._by_title.setdefault(q.title.strip(), q)
                self._by_id.setdefault(q.id, q)
        return self._by_title

    @property
    def by_id(self) -> dict[str, ForecastingQuestion]:
        self.by_title  # noqa: B018 - indexes both
        return self._by_id

    # -------------------------------------------------------------------------------- the distributions
    def choice(self, title: str, options: Sequence[str]) -> list[float]:
        """The world's probability of each option: 3 decimals, none below 0.006, summing to 1."""
        title = strip_detail(title.strip())  # an irrelevant detail (``cc attack``'s mutation) changes nothing
        weights = [0.2 + _unit("choice", title, "\x1e".join(options), i) for i in range(len(options))]
        total = math.fsum(weights)
        probs = [round(w / total, 3) for w in weights[:-1]]
        return [*probs, round(1.0 - math.fsum(probs), 3)]

    def quantiles(self, kind: str, r: NumericRange) -> dict[float, float]:
        """The world's quantiles at the forecasters' levels (:func:`_world_values`)."""
        return dict(zip(levels(), _world_values(kind, r), strict=True))

    def cdf(self, kind: str, r: NumericRange) -> np.ndarray:
        """The world's CDF on the range's grid: the one its quantiles make."""
        shape = ForecastingQuestion(title="(world)", question_type=kind, range=r)  # type: ignore[arg-type]
        return np.asarray(NumericForecast.from_percentiles(shape, self.quantiles(kind, r)).cdf)

    def stated_quantiles(
        self, kind: str, r: NumericRange, wanted: Sequence[float], restated: bool = False
    ) -> list[float]:
        """What the world states for the percentiles ``wanted`` (levels in (0, 1)): its quantiles (read off its
        CDF for other levels than its own), then the distortion's shift (``restated``: a second wording's) and
        order."""
        own = self.quantiles(kind, r)
        if all(p in own for p in wanted):
            values = np.array([own[p] for p in wanted])
        else:
            t = np.interp(np.asarray(wanted), self.cdf(kind, r), dist.locations())
            values = r.value(t)
        shift = self.distortion.shift + (self.distortion.restated_shift if restated else 0.0)
        if shift:
            values = r.value(r.location(values) + shift)
        out = [float(v) for v in values]
        return out[::-1] if self.distortion.reverse else out

    # -------------------------------------------------------------------------------- derived yes/no questions
    def event(self, text: str) -> float | None:
        """The probability of the yes/no question in ``text`` (a prompt, or a title) when it asks about an option
        or a threshold of a multiple-choice or numeric question; None for any other question."""
        title = asked_title(text)
        known = self.by_title.get(title)
        event = (known.metadata or {}).get("outcome_event") if known is not None else None
        source = self.by_id.get(event["question_id"]) if event else None
        if event and source is not None:
            if event.get("options") is not None:
                return self._scaled(self._options_event(source.title, source.options or [], event["options"]))
            return self._above(source, float(event["above"]))
        return self._parsed_event(title, text)

    def _scaled(self, p: float) -> float:
        """An option event's probability as the world states it (:attr:`Distortion.option_events`)."""
        return min(1.0, p * self.distortion.option_events)

    def _options_event(self, title: str, options: Sequence[str], chosen: Iterable[str]) -> float:
        probs = dict(zip(options, self.choice(title, options), strict=True))
        return min(1.0, math.fsum(probs[o] for o in chosen))

    def _above(self, source: ForecastingQuestion, above: float) -> float:
        r = source.range
        assert r is not None
        cdf = self.cdf(source.question_type, r)
        return float(1.0 - dist.cdf_at(cdf, r.location(above)))

    def _parsed_event(self, title: str, text: str) -> float | None:
        split = split_quotes(title)
        if split is None or not split[1]:
            return None
        skeleton, parts = split
        source_title = strip_detail(parts[0].strip())
        if skeleton.startswith("Will the outcome of \u00a70 be ") and skeleton.endswith("?"):
            source = self.by_title.get(source_title)
            options = source.options if source is not None and source.options else _listed_options(text)
            chosen = parts[1:]
            if not options or not chosen or any(o not in options for o in chosen):
                return None
            return self._scaled(self._options_event(source_title, options, chosen))
        found = re.match(r"^Will the answer to \u00a70 be (greater|later) than (.+)\?$", skeleton)
        if found is None:
            return None
        date = found.group(1) == "later"
        source = self.by_title.get(source_title)
        if source is None or source.range is None:
            source = _source_from_text(source_title, text, date)
        above = _read_value(found.group(2), date)
        if source is None or above is None:
            return None
        return self._above(source, above)

    # -------------------------------------------------------------------------------- answers
    def choice_answer(self, text: str) -> list[float] | None:
        """The probabilities the world states for the options listed in a prompt (None: no options listed)."""
        options = numbered_options(text)
        if not options:
            return None
        probs = self.choice(asked_title(text), options)
        return [p * self.distortion.option_scale for p in probs]

    def numeric_answer(self, text: str, wanted: Sequence[float]) -> tuple[str, list[float]] | None:
        """(kind, values) the world states for the percentiles ``wanted`` of the range a prompt states."""
        found = stated_range(text)
        if found is None:
            return None
        kind, r = found
        known = self.by_title.get(asked_title(text))
        restated = known is not None and "restates" in (known.metadata or {})
        return kind, self.stated_quantiles(kind, r, wanted, restated)

    def letter_chances(self, text: str) -> dict[str, float] | None:
        """A first-token distribution over the letters of the options a prompt lists (``A. Red``...): each letter
        the option's probability, spread over two spellings, and a fifth of the mass on other words."""
        options = lettered_options(text)
        if not options:
            return None
        probs = self.choice(asked_title(text), options)
        chances: dict[str, float] = {}
        for i, p in enumerate(probs):
            letter = chr(ord("A") + i)
            chances[letter], chances[f" {letter}"] = 0.6 * p, 0.2 * p
        return {**chances, "The": 0.12, "Option": 0.08}

    def reasoning_text(self, text: str) -> str | None:
        """Free text about a multiple-choice or numeric question in a prompt, ending with the world's numbers in
        lines forecasting-tools' extractors parse; None for other prompts."""
        probs = self.choice_answer(text)
        if probs is not None:
            lines = [f"{o}: {100 * p:.1f}%" for o, p in zip(numbered_options(text), probs, strict=True)]
            return "The status quo option is the likeliest, but the others remain possible.\n" + "\n".join(lines)
        stated = self.numeric_answer(text, levels())
        if stated is None:
            return None
        kind, values = stated
        shown = [_show(kind, v) for v in values]
        lines = [f"Percentile {round(100 * p)}: {v}" for p, v in zip(levels(), shown, strict=True)]
        return "Recent values and their trend suggest the following distribution.\n" + "\n".join(lines)


def bundled_questions() -> list[ForecastingQuestion]:
    """Every question of the bundled tuples of checks with a multiple-choice or numeric field (the typed
    benchmark's, and any in the main benchmark)."""
    from ..checks import UnknownCheckError, get_check
    from ..datasets import benchmark_dir, typed_benchmark_dir
    from ..jsonl import iter_json_lines

    out: list[ForecastingQuestion] = []
    for root in (typed_benchmark_dir(), benchmark_dir()):
        for path in sorted((root / "tuples").glob("*.jsonl")):
            try:
                if not get_check(path.stem).outcomes:  # no multiple-choice or numeric base
                    continue
            except UnknownCheckError:
                continue
            for _, line in iter_json_lines(path):
                fields = line.get("line", line) if isinstance(line, dict) else {}
                for value in fields.values():
                    entry = value.get("question", value) if isinstance(value, dict) else None
                    if isinstance(entry, dict) and "title" in entry:
                        out.append(ForecastingQuestion.model_validate(entry))
    return out


# ------------------------------------------------------------------------------------------ the numeric world
@cache
def levels() -> tuple[float, ...]:
    """The levels of the world's quantiles: the percentiles the LLM forecasters ask for."""
    from ..forecasters.answers import PERCENTILES  # imported on use: most servers never answer numeric questions

    return tuple(p / 100 for p in PERCENTILES)


def _world_values(kind: str, r: NumericRange) -> list[float]:
    """Locations 0.12 to 0.85 (a logistic spread around a median drawn from the bounds), except that on an open
    side the outer quantile lies beyond the bound (mass there, and a CDF strictly inside (0, 1) within the range);
    rounded to 4 significant digits (dates to the day) when that keeps them apart and on their side."""
    median = 0.35 + 0.25 * _unit("median", kind, r.lower, r.upper)
    spread = 0.3 + 0.5 * _unit("spread", kind, r.lower, r.upper)
    z = np.array([NormalDist().inv_cdf(p) for p in levels()])
    t = 1.0 / (1.0 + np.exp(-(math.log(median / (1 - median)) + spread * z)))
    if r.open_lower:
        t[0] = -0.5 * (t[1] - t[0])
    if r.open_upper:
        t[-1] = 1.0 + 0.5 * (t[-1] - t[-2])
    values = r.value(t)
    rounded = np.round(values / 86400.0) * 86400.0 if kind == "date" else np.array([float(f"{v:.4g}") for v in values])
    same_side = (r.location(rounded) > 0) == (t > 0)
    same_side &= (r.location(rounded) < 1) == (t < 1)
    keep = (np.diff(rounded) > 0).all() and same_side.all()
    return [float(v) for v in (rounded if keep else values)]


def _show(kind: str, value: float) -> str:
    """A value as free text writes it: a date as an ISO date (a date-time when not at midnight), a number in plain
    decimals (no exponent, no thousands separators: what forecasting-tools' extractor reads)."""
    if kind == "date":
        from ..forecasters.answers import date_text

        return date_text(value)
    return f"{value:.10f}".rstrip("0").rstrip(".") if abs(value) < 1e15 else f"{value:.0f}"


# ------------------------------------------------------------------------------------------ reading prompts
def asked_title(text: str) -> str:
    """The question of a prompt: its ``Question: ...`` line (the whole text without one), without an irrelevant
    detail ``cc attack``'s mutation added (the world's answers do not depend on it)."""
    found = _QUESTION.search(text)
    return strip_detail((found.group(1) if found else text).strip())


def _block(text: str, pattern: re.Pattern[str]) -> list[str]:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "Options:":
            out = []
            for entry in lines[i + 1 :]:
                found = pattern.match(entry.strip())
                if found is None:
                    break
                out.append(found.group(2).strip())
            return out
    return []


def numbered_options(text: str) -> list[str]:
    """The options a prompt lists as ``Options:`` then ``1. Red``, ``2. Blue``..."""
    return _block(text, _NUMBERED)


def lettered_options(text: str) -> list[str]:
    """The options a prompt lists as ``Options:`` then ``A. Red``, ``B. Blue``..."""
    return _block(text, _LETTERED)


def _listed_options(text: str) -> list[str]:
    found = _OPTIONS_LINE.search(text)
    return [o.strip() for o in found.group(1).split("; ")] if found else []


def stated_range(text: str) -> tuple[str, NumericRange] | None:
    """(kind, range) of the ``Lower bound:``/``Upper bound:``/``Scale:`` lines of a numeric prompt."""
    bounds = {side: (value, how) for side, value, how in _BOUND.findall(text)}
    if set(bounds) != {"Lower", "Upper"}:
        return None
    date = bool(_ISO.match(bounds["Lower"][0]))
    scale = _SCALE.search(text)
    unit = _UNIT.search(text)
    try:
        lower, upper = (_posix(bounds[s][0]) if date else float(bounds[s][0]) for s in ("Lower", "Upper"))
        r = NumericRange(
            lower=lower,
            upper=upper,
            open_lower=bounds["Lower"][1] == "open",
            open_upper=bounds["Upper"][1] == "open",
            scale="log" if scale and scale.group(1) == "logarithmic" else "linear",
            zero_point=float(scale.group(2)) if scale and scale.group(2) else None,
            unit="date" if date else (unit.group(1).strip() if unit else None),
        )
    except ValueError:
        return None
    return ("date" if date else "numeric"), r


def _source_from_text(title: str, text: str, date: bool) -> ForecastingQuestion | None:
    """A derived question's source as its text gives it: ``Range: L to U`` (a linear scale, closed bounds)."""
    found = _RANGE.search(text)
    if found is None:
        return None
    lower, upper = (_read_value(v, date) for v in found.groups())
    if lower is None or upper is None or not lower < upper:
        return None
    kind = "date" if date else "numeric"
    return ForecastingQuestion(title=title, question_type=kind, range=NumericRange(lower=lower, upper=upper))


def _read_value(text: str, date: bool) -> float | None:
    """A value as :func:`~consistency.generate.categorical.format_value` writes it (``1,500 USD``, ``March 3,
    2027``), back as a number (POSIX seconds for a date)."""
    text = text.strip()
    if date:
        try:
            return datetime.strptime(text, "%B %d, %Y").replace(tzinfo=UTC).timestamp()
        except ValueError:
            return None
    found = re.match(r"^-?[\d,]*\.?\d+(?:e[+-]?\d+)?", text)
    return float(found.group(0).replace(",", "")) if found else None


def _posix(text: str) -> float:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


# ------------------------------------------------------------------------------------------ the rule's part
def categorical_reply(world: World, text: str, schema: Mapping[str, Any], obj: dict[str, Any]) -> bool:
    """Fill ``obj`` (an answer built for ``schema``) with the world's numbers when the request asks for a
    probability per option or for percentiles; False (``obj`` untouched) for any other request."""
    properties = schema.get("properties") or {}
    wanted = {name: int(found.group(1)) / 100 for name in properties if (found := _LEVEL.match(name))}
    if wanted:
        stated = world.numeric_answer(text, list(wanted.values()))
        if stated is None:
            return False
        kind, values = stated
        for name, value in zip(wanted, values, strict=True):
            obj[name] = _show(kind, value) if kind == "date" else value
        return True
    spec = properties.get("probabilities")
    if isinstance(spec, Mapping) and spec.get("type") == "array":
        probs = world.choice_answer(text)
        if probs is None or len(probs) != spec.get("maxItems", len(probs)):
            return False
        obj["probabilities"] = probs
        return True
    return False
