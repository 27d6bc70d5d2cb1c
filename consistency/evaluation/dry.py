"""A recording LLM client for cost estimates: every request a forecaster would send is counted, none is sent.

:class:`DryLLM` is the project's :class:`~consistency.llm.LLM` with the network taken out: a request found in
the response cache is a cache hit, exactly as in a real run (its answer is handed back, so the forecaster's
next request is the one it would really send); any other is recorded (model, prompt tokens, the answer's
expected tokens, price) and answered with a stand-in of the expected size, so that multi-step forecasters
(CoT's extraction, the ArbitrageForecaster's related questions and their forecasts) go on as they would.

How long an answer is cannot be known before it is given. The stand-in follows, in this order:

1. the model's own answers of the same shape (the same schema fields, or free text) in the response cache,
   for example from a pilot run with ``--limit 2``: their mean length (a stored answer of about that length,
   made unique per request, stands in);
2. else ``max_tokens`` / ``max_completion_tokens`` of a free-text request;
3. else :data:`TEXT_TOKENS` for free text, and for a structured answer the schema filled with
   :data:`FIELD_CHARS` characters per free-text field (numbers, booleans and the JSON around them exactly).

Tokens are counted with the model's tokenizer where it is known (``tiktoken`` for OpenAI models, when
installed with its encoding files at hand), else at :data:`CHARS_PER_TOKEN` characters a token, OpenAI's
rule of thumb for English text.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from dataclasses import dataclass, field
from functools import cache
from types import SimpleNamespace
from typing import Any

from pydantic import ValidationError

from ..llm import LLM, LLMResult, LLMSettings
from ..llm.accounting import Usage, cost_usd
from ..llm.cache import cache_key
from ..llm.specs import ModelSpec, parse_model_spec
from ..llm.structured import cached_schema, plan

log = logging.getLogger(__name__)

#: Characters a token, when the model's tokenizer is not at hand (OpenAI's rule of thumb for English).
CHARS_PER_TOKEN = 4.0
#: Assumed length of a free-text answer with no history and no ``max_tokens``: a few paragraphs of reasoning.
TEXT_TOKENS = 400
#: Assumed characters of each free-text field of a structured answer with no history (about 40 tokens).
FIELD_CHARS = 160
#: Items of an array field of a structured answer with no history (enough for the related questions asked).
ARRAY_ITEMS = 3
#: Cached answers read per model to learn its answer lengths.
HISTORY = 2000


@dataclass
class ModelTally:
    """What one model would be asked: calls, cache hits, tokens and price, and how the figures were had."""

    model: str
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0  # None: the model has no price (see llm/prices.json and CC_PRICES)
    tokenizer: str = ""
    answers: dict[str, str] = field(default_factory=dict)  # answer shape -> where its length came from

    def add(self, prompt: int, completion: int, cost: float | None) -> None:
        self.calls += 1
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.cost = None if cost is None or self.cost is None else self.cost + cost


def approximate_tokens(text: str) -> int:
    return max(1, round(len(text) / CHARS_PER_TOKEN)) if text else 0


@cache
def _encoding(model: str) -> Any:
    """tiktoken's encoding for an OpenAI model name, or None (not installed, not an OpenAI model, or its
    encoding file not at hand: tiktoken fetches it once from the network, which may be unreachable)."""
    try:
        import tiktoken
    except ImportError:
        return None
    try:
        return tiktoken.encoding_for_model(model)
    except Exception as exc:  # KeyError: not an OpenAI model; a network error: no encoding file offline
        log.info("no tiktoken encoding for %s (%s): tokens approximated", model, type(exc).__name__)
        return None


def tokenizer_for(spec: ModelSpec) -> tuple[Any, str]:
    """The encoding to count ``spec``'s tokens with (None: approximate), and its name for the estimate."""
    name = spec.model
    if spec.provider == "openrouter" and name.startswith("openai/"):
        name = name.removeprefix("openai/")
    if spec.provider in ("openai", "openrouter"):
        encoding = _encoding(name)
        if encoding is not None:
            return encoding, f"tiktoken {encoding.name}"
    return None, f"about {CHARS_PER_TOKEN:g} characters a token"


def count(encoding: Any, text: str) -> int:
    if not text:
        return 0
    return len(encoding.encode(text, disallowed_special=())) if encoding is not None else approximate_tokens(text)


def _content(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def prompt_tokens(encoding: Any, request: dict[str, Any]) -> int:
    """Tokens of a request as a provider bills them: the messages' text and the schema sent with them
    (tools, or a JSON-schema response format); with a real tokenizer, plus chat-format overhead (3 a message
    and 3 for the reply, as OpenAI documents)."""
    messages = request.get("messages") or []
    extra = ""
    if request.get("tools"):
        extra += json.dumps(request["tools"])
    if isinstance(request.get("response_format"), dict) and "json_schema" in request["response_format"]:
        extra += json.dumps(request["response_format"]["json_schema"])
    if encoding is None:
        return approximate_tokens("".join(_content(m) for m in messages) + extra)
    return sum(count(encoding, _content(m)) + 3 for m in messages) + 3 + count(encoding, extra)


def answer_shape(schema: dict[str, Any] | None) -> str:
    """``text``, or the sorted top-level fields of a structured answer: what cached answers are grouped by."""
    if schema is None:
        return "text"
    return "{" + ",".join(sorted((schema.get("properties") or {}).keys())) + "}"


def _shape_of(value: Any) -> str | None:
    if isinstance(value, str):
        return "text"
    if isinstance(value, dict):
        return "{" + ",".join(sorted(value)) + "}"
    return None


@dataclass
class Learned:
    """A model's answers of one shape seen in the cache: their mean completion tokens and a typical one."""

    mean_tokens: float
    typical: Any  # the stored answer whose length is nearest the mean
    seen: int


class DryLLM(LLM):
    """Counts the requests of a run instead of sending them (see the module's docstring)."""

    def __init__(self, settings: LLMSettings | None = None) -> None:
        super().__init__(settings)
        self.tallies: dict[str, ModelTally] = {}
        self._history: dict[str, dict[str, Learned]] = {}
        self._answered: dict[str, LLMResult] = {}  # requests recorded once: asked again, a run finds them cached
        # read-only: a dry run stores no stand-in and leaves the cache's statistics alone; it learns answer
        # lengths from the cache even when the run will not use it (--no-cache), if there is one
        self._reader = self.cache if self.cache is not None else _existing_cache(self.settings)
        self.cache = _ReadOnly(self._reader) if self._reader is not None and self.settings.cache else None

    async def aclose(self) -> None:
        self._endpoints.clear()
        if self._reader is not None:
            self._reader.close()

    async def endpoint(self, model: str | ModelSpec) -> Any:
        """What the client needs of an endpoint, without one: no key is asked for, no server started."""
        spec = parse_model_spec(model) if isinstance(model, str) else model
        found = self._endpoints.get(spec.text)
        if found is None:
            identity, name = spec.identity(), spec.model
            if spec.provider == "local":
                identity, name = _local_identity(), "local"
            found = SimpleNamespace(spec=spec, model=name, identity=identity)
            self._endpoints[spec.text] = found  # type: ignore[assignment]
        return found

    def tally(self, ep: Any) -> ModelTally:
        public = ep.spec.public
        if public not in self.tallies:
            self.tallies[public] = ModelTally(public, tokenizer=tokenizer_for(ep.spec)[1])
        return self.tallies[public]

    async def _cached_or_asked(
        self, ep: Any, messages: list[dict[str, Any]], response_model: type | None, params: dict[str, Any], start: float
    ) -> LLMResult:
        schema = cached_schema(response_model) if response_model is not None else "text"
        key = cache_key(ep.identity, messages, {"temperature": self.settings.temperature, **params}, schema)
        earlier = self._answered.get(key)
        if earlier is not None and self.settings.cache:  # asked before in this run: the run's cache has it then
            self.stats.cache_hits += 1
            self.tally(ep).cache_hits += 1
            return LLMResult(earlier.value, raw=earlier.raw, cache_hit=True, usage=Usage(cost=0.0))
        before = self.stats.cache_hits
        result = await super()._cached_or_asked(ep, messages, response_model, params, start)
        if self.stats.cache_hits > before:
            self.tally(ep).cache_hits += 1
        elif result.ok:
            self._answered[key] = result
        return result

    async def _request(
        self, ep: Any, messages: list[dict[str, Any]], response_model: type | None, params: dict[str, Any]
    ) -> LLMResult:
        encoding, _ = tokenizer_for(ep.spec)  # (--cost-limit is not applied: the estimate is of the whole run)
        body: dict[str, Any] = {"model": ep.model, "messages": messages, **params}
        schema = None
        if response_model is not None:
            body = plan(response_model, ep.spec.mode).request(body)
            schema = cached_schema(response_model)
        seed = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:10]
        value, text, how = self._stand_in(ep, schema, response_model, params, seed)
        prompt, completion = prompt_tokens(encoding, body), count(encoding, text)
        learned = self._learned(ep).get(answer_shape(schema))
        if learned is not None:
            completion = round(learned.mean_tokens)
        cost = 0.0 if ep.spec.provider == "local" else cost_usd(ep.model, prompt, completion, self.settings.batch)
        self.tally(ep).add(prompt, completion, cost)
        self.tally(ep).answers.setdefault(answer_shape(schema), how)
        self._count_request()
        usage = Usage(prompt, completion, cost)
        self._spend(usage)
        if isinstance(value, BaseException):
            return LLMResult(None, error=f"no stand-in answer: {value}", raw=text, usage=usage, attempts=1)
        return LLMResult(value, raw=text, usage=usage, attempts=1)

    # ------------------------------------------------------------------ stand-in answers
    def _learned(self, ep: Any) -> dict[str, Learned]:
        """The model's cached answers grouped by shape (read once per model)."""
        if ep.identity in self._history:
            return self._history[ep.identity]
        groups: dict[str, list[tuple[int, Any]]] = {}
        rows = self._reader.recent(ep.identity, HISTORY) if self._reader is not None else []
        for row in rows:
            shape = _shape_of(row.get("value"))
            tokens = (row.get("usage") or {}).get("completion_tokens")
            if shape is not None and isinstance(tokens, int) and tokens > 0:
                groups.setdefault(shape, []).append((tokens, row["value"]))
        learned = {}
        for shape, items in groups.items():
            mean = sum(t for t, _ in items) / len(items)
            # ties (two answers as far from the mean) go to the smaller text, never to the cache's row order,
            # which follows the order concurrent answers were written in: the estimate is the same every time
            typical = min(items, key=lambda item: (abs(item[0] - mean), json.dumps(item[1], sort_keys=True)))[1]
            learned[shape] = Learned(mean, typical, len(items))
        self._history[ep.identity] = learned
        return learned

    def _stand_in(
        self, ep: Any, schema: dict[str, Any] | None, response_model: type | None, params: dict[str, Any], seed: str
    ) -> tuple[Any, str, str]:
        """(the value handed back, its text as the model would write it, where its length came from)."""
        learned = self._learned(ep).get(answer_shape(schema))
        if learned is not None:
            how = f"the mean of {learned.seen} cached answer(s) of this model"
            template = learned.typical
        elif schema is None and (params.get("max_completion_tokens") or params.get("max_tokens")):
            limit = int(params.get("max_completion_tokens") or params.get("max_tokens"))
            how, template = f"max_tokens ({limit})", _filler(seed, limit * CHARS_PER_TOKEN)
        elif schema is None:
            how, template = f"assumed: {TEXT_TOKENS} tokens of free text", _filler(seed, TEXT_TOKENS * CHARS_PER_TOKEN)
        else:
            how, template = f"assumed: the schema filled ({FIELD_CHARS} characters a text field)", _fill(schema, schema)
        value = _unique(template, seed)
        if response_model is None:
            return value, value, how
        try:
            parsed = response_model.model_validate(value)  # type: ignore[attr-defined]
        except ValidationError as exc:
            return exc, json.dumps(value), how
        return parsed, json.dumps(value), how


def _existing_cache(settings: LLMSettings) -> Any:
    """The response cache file if there is one (opened to read answer lengths from), else None."""
    from ..llm.cache import ResponseCache
    from ..paths import cache_dir

    try:
        path = settings.cache_path or cache_dir() / ResponseCache.FILENAME
        return ResponseCache(path) if path.is_file() else None
    except Exception:  # an unusable cache only costs the estimate its history
        return None


class _ReadOnly:
    """The response cache, for reading only: a dry run stores nothing and leaves ``cc cache stats`` alone."""

    def __init__(self, cache: Any) -> None:
        self._cache = cache
        self.hits = self.misses = 0

    def get(self, key: str) -> dict[str, Any] | None:
        return self._cache.get(key)

    def put(self, *args: Any) -> None:
        return None

    def record_run(self) -> None:
        return None


def _local_identity() -> str:
    """The local model's cache identity (its weights' sha256) without starting it or downloading anything."""
    import os
    from pathlib import Path

    from ..llm.local.weights import BUNDLED_SHA256, ENV_MODEL, weights_sha256

    explicit = os.environ.get(ENV_MODEL, "").strip()
    if not explicit:
        return f"local|{BUNDLED_SHA256}"  # the bundled weights are served only once verified to have this sha256
    try:
        return f"local|{weights_sha256(Path(explicit).expanduser())}"
    except OSError:  # no such file: the real run would stop at once; no cache hits here
        return "local|unknown"


_FILLER = "the forecast weighs base rates and recent evidence before settling on a probability "


def _filler(seed: str, chars: float) -> str:
    """Text of about ``chars`` characters, different for every request (so no two stand-ins are one question)."""
    n = max(int(chars), len(seed) + 1)
    return (seed + " " + _FILLER * (n // len(_FILLER) + 1))[:n]


def _unique(value: Any, seed: str) -> Any:
    """``value`` with each text's last characters replaced by ``seed`` (same length, different per request)."""
    if isinstance(value, str):
        n = len(seed)
        return value[:-n] + seed if len(value) > n else value
    if isinstance(value, dict):
        return {k: _unique(v, hashlib.sha256(f"{seed}{k}".encode()).hexdigest()[:10]) for k, v in value.items()}
    if isinstance(value, list):
        return [_unique(v, hashlib.sha256(f"{seed}{i}".encode()).hexdigest()[:10]) for i, v in enumerate(value)]
    return value


def _fill(schema: Any, root: dict[str, Any], name: str = "", depth: int = 0) -> Any:
    """A value of ``schema`` with no history to go by: numbers inside their bounds (a probability 0.5), texts of
    :data:`FIELD_CHARS` characters, :data:`ARRAY_ITEMS` items an array."""
    if not isinstance(schema, dict) or depth > 12:
        return None
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        return _fill({**target, **{k: v for k, v in schema.items() if k != "$ref"}}, root, name, depth + 1)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = [s for s in schema.get(key) or [] if not (isinstance(s, dict) and s.get("type") == "null")]
        if options:
            return _fill(options[0], root, name, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    kind = kind or ("object" if "properties" in schema else "array" if "items" in schema else "string")
    if kind == "object":
        return {k: _fill(v, root, k, depth + 1) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        n = min(max(ARRAY_ITEMS, int(schema.get("minItems", 0))), int(schema.get("maxItems", ARRAY_ITEMS)))
        return [_fill(schema.get("items", {}), root, name, depth + 1) for _ in range(n)]
    if kind in ("number", "integer"):
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        high = schema.get("maximum", schema.get("exclusiveMaximum"))
        value = (low + high) / 2 if low is not None and high is not None else (low or 0) + (1 if low is not None else 0)
        return math.floor(value) if kind == "integer" else round(float(value), 2)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    chars = max(int(schema.get("minLength", 0)), FIELD_CHARS)
    if schema.get("maxLength") is not None:
        chars = min(chars, int(schema["maxLength"]))
    return _filler(name or "text", chars)


def as_dict(tally: ModelTally) -> dict[str, Any]:
    return {
        "model": tally.model,
        "calls": tally.calls,
        "cache_hits": tally.cache_hits,
        "prompt_tokens": tally.prompt_tokens,
        "completion_tokens": tally.completion_tokens,
        "cost": None if tally.cost is None else round(tally.cost, 6),
        "tokenizer": tally.tokenizer,
        "answer_lengths": dict(tally.answers),
    }


__all__ = ["DryLLM", "ModelTally", "as_dict"]
