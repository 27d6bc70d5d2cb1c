"""The deterministic answers: the built-in rules, the schema builder behind them, and ``sequence``.

Every value here is a pure function of the request's text, so tests can predict what the server
answers (:func:`probability_for`). Also the deterministic embedding vectors the server returns.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from consistency.fake_openai.categorical import Distortion, World, categorical_reply
from consistency.fake_openai.replies import Fault, Outcome, Reply, Rule, ScriptedRequest, call_rule
from consistency.fake_openai.worlds import negated_inner, parse_title, probability
from consistency.models import ForecastingQuestion

__all__ = [
    "PLANTED_LENGTH",
    "RULES",
    "coherent_probability",
    "coherent_rule",
    "constant_rule",
    "demo_rule",
    "forecast_rule",
    "hypocritical_probability",
    "hypocritical_rule",
    "in_planted_region",
    "incoherent_rule",
    "invalid_rule",
    "planted_probability",
    "planted_rule",
    "probability_for",
    "probability_rule",
    "schema_rule",
    "sequence",
    "world_rule",
    "yes_no_chances",
]

EMBEDDING_DIM = 64
_MAX_DEPTH = 8  # past this depth, recursive models ($ref cycles) get empty arrays and nulls
_UNSET = object()  # "no value yet" for the schema builder (None is a value: JSON null)


# --------------------------------------------------------------------------------------------
# Built-in rules: deterministic answers derived from the question text
# --------------------------------------------------------------------------------------------


def digest(*parts: str) -> bytes:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()


def _unit(*parts: str) -> float:
    """A uniform-looking number in [0, 1), a pure function of ``parts``."""
    return int.from_bytes(digest(*parts)[:8], "big") / 2.0**64


def probability_for(text: str) -> float:
    """The probability the built-in rules give for a question text: in [0.02, 0.98], 2 decimals.

    Tests use it to predict what the server will answer.
    """
    return round(0.02 + 0.96 * _unit("probability", text), 2)


def _forecast_sentence(text: str) -> str:
    p = probability_for(text)
    lean = "likely" if p >= 0.5 else "unlikely"
    return f"Weighing base rates and recent evidence, this looks {lean}. Probability: {p:.2f}"


def _plain_sentence(text: str) -> str:
    return f"Scripted answer {digest('text', text).hex()[:8]}."


# A forecast object, for clients that ask for JSON without saying which (``json_object``).
FORECAST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string"},
        "prob": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["reasoning", "prob"],
}

_PROB_NAMES = {"p", "prob", "probability", "forecast", "likelihood", "chance"}
_TEXT_NAMES = ("reason", "rationale", "explanation", "thought", "analysis", "justification")


def _is_probability_name(name: str) -> bool:
    name = name.lower()
    return name in _PROB_NAMES or "prob" in name


class _Builder:
    """Builds a value satisfying a JSON schema, deterministically from a seed text.

    Covers what pydantic and instructor emit: objects, arrays, enums/const, bounded numbers,
    ``$defs``/``$ref``, ``anyOf``/``oneOf``/``allOf`` and nullable types. ``pattern`` is not honoured.
    """

    def __init__(self, root: Mapping[str, Any], seed: str, unit_numbers_are_probabilities: bool) -> None:
        self.root = root
        self.seed = seed
        self.unit_probs = unit_numbers_are_probabilities

    def build(self, schema: Any, path: str = "$", name: str = "", depth: int = 0) -> Any:
        if not isinstance(schema, Mapping):
            return self._string({}, path, name)  # true / {}: anything goes, a string is fine
        value = self._combined(schema, path, name, depth)
        return self._typed(schema, path, name, depth) if value is _UNSET else value

    def _combined(self, schema: Mapping[str, Any], path: str, name: str, depth: int) -> Any:
        """A value for the keywords that name other schemas or fixed values (``$ref``, ``const``, ``enum``,
        ``anyOf``/``oneOf``, ``allOf``); :data:`_UNSET` when the schema has none of them."""
        if "$ref" in schema:
            target = self._resolve(schema["$ref"])
            if depth >= 4 * _MAX_DEPTH:  # a cycle with no optional exit: give up there
                return None
            merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
            return self.build(merged, path, name, depth + 1)
        if "const" in schema:
            return schema["const"]
        if schema.get("enum"):
            options = schema["enum"]
            return options[int(_unit(self.seed, path) * len(options))]
        for key in ("anyOf", "oneOf"):
            if schema.get(key):
                options = [s for s in schema[key] if not (isinstance(s, Mapping) and s.get("type") == "null")]
                if not options or (depth >= _MAX_DEPTH and len(options) < len(schema[key])):
                    return None  # deep in a recursive model, stop where null is allowed
                return self.build(options[0], f"{path}|0", name, depth + 1)
        if schema.get("allOf"):
            merged_all: dict[str, Any] = {}
            for part in schema["allOf"]:
                part = self._resolve(part["$ref"]) if isinstance(part, Mapping) and "$ref" in part else part
                if isinstance(part, Mapping):
                    merged_all.update(part)
            merged_all.update({k: v for k, v in schema.items() if k != "allOf"})
            return self.build(merged_all, path, name, depth + 1)
        return _UNSET

    def _typed(self, schema: Mapping[str, Any], path: str, name: str, depth: int) -> Any:
        """A value of the schema's ``type`` (guessed from ``properties``/``items`` when it names none)."""
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind is None:
            kind = "object" if "properties" in schema else "array" if "items" in schema else "string"
        if kind == "object":
            return self._object(schema, path, depth)
        if kind == "array":
            return self._array(schema, path, name, depth)
        if kind in ("number", "integer"):
            return self._number(schema, path, name, integer=kind == "integer")
        if kind == "boolean":
            return _unit(self.seed, path) < 0.5
        if kind == "null":
            return None
        return self._string(schema, path, name)

    def _resolve(self, ref: str) -> Mapping[str, Any]:
        if not ref.startswith("#"):
            raise ValueError(f"only local $ref are supported, got {ref!r}")
        node: Any = self.root
        for part in filter(None, ref[1:].split("/")):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def _object(self, schema: Mapping[str, Any], path: str, depth: int) -> dict[str, Any]:
        properties = schema.get("properties") or {}
        return {key: self.build(sub, f"{path}.{key}", key, depth + 1) for key, sub in properties.items()}

    def _array(self, schema: Mapping[str, Any], path: str, name: str, depth: int) -> list[Any]:
        if schema.get("prefixItems"):  # tuples
            return [self.build(s, f"{path}[{i}]", name, depth + 1) for i, s in enumerate(schema["prefixItems"])]
        low = int(schema.get("minItems", 0))
        high = int(schema.get("maxItems", max(low, 2)))
        wanted = 1 + int(_unit(self.seed, path, "n") * 2) if depth < _MAX_DEPTH else 0  # 1 or 2 items
        count = min(max(wanted, low), high)
        items = schema.get("items", {})
        return [self.build(items, f"{path}[{i}]", name, depth + 1) for i in range(count)]

    def _number(self, schema: Mapping[str, Any], path: str, name: str, integer: bool) -> float | int:
        def bound(key: str) -> float | None:
            value = schema.get(key)  # draft-4 boolean exclusive* flags are ignored
            return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

        low, high = bound("minimum"), bound("maximum")
        ex_low, ex_high = bound("exclusiveMinimum"), bound("exclusiveMaximum")

        def inside(x: float) -> bool:
            return (
                (low is None or x >= low)
                and (high is None or x <= high)
                and (ex_low is None or x > ex_low)
                and (ex_high is None or x < ex_high)
            )

        if not integer and (_is_probability_name(name) or (self.unit_probs and low == 0 and high == 1)):
            p = probability_for(self.seed)
            if inside(p):
                return p
        lo = max(v for v in (low, ex_low) if v is not None) if low is not None or ex_low is not None else None
        hi = min(v for v in (high, ex_high) if v is not None) if high is not None or ex_high is not None else None
        if lo is None and hi is None:
            lo, hi = 0, 100
        elif lo is None:
            lo = hi - 100
        elif hi is None:
            hi = lo + 100
        u = _unit(self.seed, path)
        if integer:
            first, last = math.ceil(lo), math.floor(hi)
            value = first + int(u * (last - first + 1))
            for candidate in (value, value + 1, value - 1, first, last):
                if first <= candidate <= last and inside(candidate):
                    return candidate
            return first
        value = round(lo + (hi - lo) * u, 2)
        return value if inside(value) else (lo + hi) / 2

    def _string(self, schema: Mapping[str, Any], path: str, name: str) -> str:
        token = digest(self.seed, path).hex()
        fmt = schema.get("format")
        if fmt == "date-time":
            text = "2024-01-01T00:00:00Z"
        elif fmt == "date":
            text = "2024-01-01"
        elif fmt == "time":
            text = "12:00:00"
        elif fmt == "uuid":
            text = f"{token[:8]}-{token[8:12]}-4{token[13:16]}-8{token[17:20]}-{token[20:32]}"
        elif fmt in ("uri", "url"):
            text = f"https://example.com/{token[:8]}"
        elif fmt == "email":
            text = f"user{token[:6]}@example.com"
        elif any(word in name.lower() for word in _TEXT_NAMES):
            text = _forecast_sentence(self.seed) if self.unit_probs else f"Scripted {name} {token[:6]}."
        else:
            text = f"{name or 'text'} {token[:6]}"
        low, high = int(schema.get("minLength", 0)), schema.get("maxLength")
        if len(text) < low:
            text = (text + " " + token * (low // 64 + 1))[: max(low, len(text))]
        if high is not None:
            text = text[: int(high)]
        return text


def yes_no_chances(p: float) -> dict[str, float]:
    """A first-token distribution whose Yes share is ``p``: each answer spread over three spellings
    (so that a reader of one spelling alone gets it wrong), and a fifth of the mass on other words."""
    return {
        "Yes": 0.6 * p, " Yes": 0.15 * p, "yes": 0.05 * p,
        "No": 0.6 * (1 - p), " No": 0.15 * (1 - p), "no": 0.05 * (1 - p),
        "The": 0.1, "I": 0.06, "Maybe": 0.04,
    }  # fmt: skip


def schema_rule(
    overrides: Mapping[str, Any] | None = None,
    *,
    text: Callable[[str], str] | None = None,
    fallback_schema: Mapping[str, Any] | None = None,
    unit_numbers_are_probabilities: bool = False,
    chance: Callable[[str], float] | None = None,
    world: World | None = None,
) -> Rule:
    """A rule answering every structured request with an object that satisfies its schema.

    Values are a pure function of the last user message, so the same question gets the same answer
    (a number property named like ``prob``/``probability`` gets :func:`probability_for` of it).
    ``overrides`` sets top-level properties: a value, or a callable ``(request) -> value``.
    Free-text requests get ``text(last_user_text)``; ``json_object`` requests (no schema given)
    get an object of ``fallback_schema`` (default: a forecast, ``{"reasoning", "prob"}``). With
    ``chance``, a free-text request asking for ``logprobs`` gets a one-token answer whose Yes share is
    ``chance(last_user_text)`` (:func:`yes_no_chances`): what the logprob forecaster reads. With ``world``,
    requests about multiple-choice and numeric questions (a probability per option, percentiles, the next token
    after lettered options, free text about them) get the world's numbers (:mod:`.categorical`).
    """
    make_text = text or _plain_sentence
    fallback = fallback_schema or FORECAST_SCHEMA

    def rule(request: ScriptedRequest) -> Reply:
        said = request.last_user_text
        if not request.wants_json and request.top_logprobs is not None:
            letters = world.letter_chances(said) if world is not None else None
            if letters is not None:
                return Reply.next_token(letters)
            if chance is not None:
                return Reply.next_token(yes_no_chances(chance(said)))
        if not request.wants_json:
            about = world.reasoning_text(said) if world is not None else None
            return Reply.text(about if about is not None else make_text(said))
        schema = request.schema or fallback
        obj = _Builder(schema, said, unit_numbers_are_probabilities).build(schema)
        if isinstance(obj, dict) and world is not None and categorical_reply(world, said, schema, obj):
            return Reply.json(obj)
        if isinstance(obj, dict) and overrides:
            for key, value in overrides.items():
                obj[key] = value(request) if callable(value) else value
        return Reply.json(obj)

    return rule


def probability_rule(overrides: Mapping[str, Any] | None = None) -> Rule:
    """:func:`schema_rule` for forecasters: any [0, 1] number is the question's probability, a
    free-text answer is a sentence ending with ``Probability: 0.xx``, and a request for ``logprobs``
    gets Yes with that probability (:func:`probability_for` of the last user message, each time);
    multiple-choice and numeric questions get a :class:`~.categorical.World`'s answers."""
    return schema_rule(
        overrides,
        text=_forecast_sentence,
        unit_numbers_are_probabilities=True,
        chance=probability_for,
        world=World(),
    )


_NEGATED = re.compile(r"^Will \u201c(.*)\u201d resolve NO\?$", re.S)
_PARAPHRASED = re.compile(r"^Will the following question resolve YES: \u201c(.*)\u201d\?$", re.S)
_QUESTION_LINE = re.compile(r"^Question: (.*)$", re.M)


def _coherent_probability(title: str) -> float:
    """What a coherent forecaster would say: the template's negation is 1 - p, its paraphrase p."""
    if match := _NEGATED.match(title):
        return 1.0 - _coherent_probability(match.group(1))
    if match := _PARAPHRASED.match(title):
        return _coherent_probability(match.group(1))
    return probability_for(title)


def _asked_title(text: str) -> str:
    """The question of a forecast prompt: its ``Question: ...`` line (the whole text without one)."""
    found = _QUESTION_LINE.search(text)
    return (found.group(1) if found else text).strip()


def hypocritical_probability(text: str) -> float:
    """A forecast that is plausible alone but incoherent with its negation and paraphrase.

    The question is the ``Question: ...`` line of ``text`` (the whole text without one). Its
    coherent probability (through the template instantiator's negation and paraphrase wordings)
    is shifted up by 0-2 in log-odds, by an amount that is a pure function of the wording:
    P and not P both lean YES, and two wordings of P disagree. Rounded to 4 decimals, in [0.01, 0.99].
    """
    title = _asked_title(text)
    p = min(max(_coherent_probability(title), 1e-3), 1 - 1e-3)
    z = math.log(p / (1 - p)) + 2.0 * _unit("hypocrisy", title)
    return round(min(max(1.0 / (1.0 + math.exp(-z)), 0.01), 0.99), 4)


def forecast_rule(prob: Callable[[str], float], world: World | None = None) -> Rule:
    """:func:`probability_rule` whose forecasts are ``prob(last user text)``: structured, free text, or the
    Yes share of a first-token distribution (logprobs); multiple-choice and numeric questions get ``world``'s
    answers (default: a plain :class:`~.categorical.World`)."""

    def sentence(text: str) -> str:
        return f"Weighing both sides of the question. Probability: {prob(text):.4f}"

    return schema_rule(
        {"prob": lambda request: prob(request.last_user_text)},
        text=sentence,
        unit_numbers_are_probabilities=True,
        chance=prob,
        world=world if world is not None else World(),
    )


def hypocritical_rule() -> Rule:
    """:func:`probability_rule` answering every forecast with :func:`hypocritical_probability`
    (ArbitrageForecaster tests: consistency that arbitrage can repair, deterministic per text)."""
    return forecast_rule(hypocritical_probability)


_HORIZON = re.compile(
    r"^(.*\b(?:by|before)) ((?:January|February|March|April|May|June|July|August|September|October|November|"
    r"December) \d{1,2}, (\d{4}))\?$"
)


def _event_probability(title: str) -> float:
    """:func:`probability_for`, except that "X by DATE?" is X's chance of happening by DATE: it grows with DATE
    (yearly hazard :func:`probability_for` of X without its date), so MONOTONE's horizon chains hold too."""
    found = _HORIZON.match(title.strip())
    if found is None:
        return probability_for(title)
    hazard = min(max(probability_for(found.group(1)), 0.02), 0.98) / 2
    years = max(int(found.group(3)) - 2025, 1) + _MONTHS.index(found.group(2).split()[0]) / 12
    return 1.0 - (1.0 - hazard) ** years


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")  # fmt: skip


def coherent_probability(text: str) -> float:
    """A perfectly coherent forecaster on template-made tuples: the base titles are independent events
    (probability :func:`_event_probability` each) and a field is the probability of the formula its title
    states (:func:`consistency.fake_openai.worlds.parse_title`), so every check holds exactly."""
    return round(probability(parse_title(_asked_title(text)), _event_probability), 6)


#: Negations of titles longer than this many characters are where :func:`planted_rule` slips.
PLANTED_LENGTH = 130


def in_planted_region(title: str, min_length: int = PLANTED_LENGTH) -> bool:
    """Whether :func:`planted_rule` answers this question wrongly: a plain negation of a long title."""
    inner = negated_inner(title)
    return inner is not None and len(inner) > min_length


def planted_probability(text: str, min_length: int = PLANTED_LENGTH) -> float:
    """:func:`coherent_probability`, except that a negation (“Will “X” resolve NO?”) of a title longer
    than ``min_length`` characters is answered as X itself: the negation is overlooked there."""
    title = _asked_title(text)
    if in_planted_region(title, min_length):
        return coherent_probability(f"Question: {negated_inner(title)}")
    return coherent_probability(text)


def world_rule(world: World) -> Rule:
    """Forecasts of :func:`coherent_probability`, except that yes/no questions about an option or a threshold of
    a multiple-choice or numeric question get ``world``'s probability of that event (:meth:`World.event`), and the
    multiple-choice and numeric questions themselves ``world``'s answers."""

    def prob(text: str) -> float:
        found = world.event(text)
        return coherent_probability(text) if found is None else found

    return forecast_rule(prob, world)


def coherent_rule(questions: Iterable[ForecastingQuestion] | None = None) -> Rule:
    """A perfectly coherent forecaster: :func:`coherent_probability` for template-made yes/no tuples, and one
    :class:`~.categorical.World` behind every answer about multiple-choice and numeric questions and the yes/no
    questions derived from them. ``questions`` (default: the bundled tuples') name derived questions' sources."""
    return world_rule(World(questions))


def invalid_rule(questions: Iterable[ForecastingQuestion] | None = None) -> Rule:
    """:func:`coherent_rule`, except that every stated distribution is invalid: option probabilities summing to
    1.2 and percentiles from the highest down (a forecaster must ask again, then record a failure)."""
    return world_rule(World(questions, Distortion(option_scale=1.2, reverse=True)))


#: How far :func:`incoherent_rule` departs from its world.
INCOHERENT = Distortion(option_events=1.2, shift=0.1, restated_shift=-0.05)


def incoherent_rule(questions: Iterable[ForecastingQuestion] | None = None) -> Rule:
    """Valid answers that disagree with each other by known amounts (:data:`INCOHERENT`): the yes/no questions
    about a multiple-choice question's options get 1.2 times the world's probability (a partition's answers sum to
    1.2), every numeric distribution is the world's moved up by a tenth of its range (against the threshold
    questions, which keep the world's CDF) and a second wording's by a twentieth, while the multiple-choice
    distributions and the other answers are coherent."""
    return world_rule(World(questions, INCOHERENT))


def planted_rule(min_length: int = PLANTED_LENGTH) -> Rule:
    """Forecasts of :func:`planted_probability`: coherent except on negations of long titles."""
    return forecast_rule(lambda text: planted_probability(text, min_length))


def constant_rule(p: float = 0.5) -> Rule:
    """Every forecast is ``p``: passes NEGATION, PARAPHRASE and EXPEVIDENCE at 0.5, fails BUT, COND, CONDCOND."""
    return forecast_rule(lambda text: p)


# The one combinator whose default is a built-in rule, so it lives here, not in ``replies``.
def sequence(*items: Reply | Fault | Rule, then: Rule | None = None) -> Rule:
    """Answer the i-th request (global arrival order) with ``items[i]``, later ones with ``then``.

    An item may also be a rule, called for that request only. ``then`` defaults to the forecast rule.
    """
    fallback = then if then is not None else probability_rule()

    async def sequence_rule(request: ScriptedRequest) -> Outcome:
        if request.index < len(items):
            item = items[request.index]
            return item if isinstance(item, (Reply, Fault)) else await call_rule(item, request)
        return await call_rule(fallback, request)

    return sequence_rule


def demo_rule() -> Rule:
    """Answers that make every pipeline produce sensible output offline (see :mod:`.demo`)."""
    from consistency.fake_openai.demo import demo_rule as make  # imported on use: most servers never need it

    return make(probability_rule(), probability_for)


def embedding(text: str, dim: int = EMBEDDING_DIM) -> list[float]:
    """A unit vector that is a pure function of ``text`` (sha256 blocks mapped to [-1, 1])."""
    raw = b"".join(digest("embedding", str(block), text) for block in range((dim + 31) // 32))[:dim]
    values = [(b - 127.5) / 127.5 for b in raw]
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


#: Rules ``python -m consistency.fake_openai --rule NAME`` serves ("default": :func:`probability_rule`).
RULES: dict[str, Callable[..., Rule]] = {
    "default": probability_rule,
    "demo": demo_rule,
    "hypocritical": hypocritical_rule,
    "coherent": coherent_rule,
    "incoherent": incoherent_rule,
    "invalid": invalid_rule,
    "constant": constant_rule,
    "planted": planted_rule,
}
