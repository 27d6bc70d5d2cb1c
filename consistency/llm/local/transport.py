"""How structured requests reach the local server: the JSON schema as an llguidance grammar.

instructor's JSON_SCHEMA mode sends ``response_format={"type": "json_schema", ...}``. llama.cpp's chat
endpoint turns such a schema into a GBNF grammar that ignores ``minimum``/``maximum`` on numbers, so a
probability declared in [0, 1] could come back as 1.55 and cost a re-ask. The same schema sent as an
llguidance grammar (``%llguidance`` + ``%json``, which xllamacpp is built with) keeps numbers in their
bounds and strings valid JSON. This transport, used only for the local server, rewrites the request body
that way; the answer is the same JSON text instructor's JSON_SCHEMA mode parses.

A tiny model can also keep writing until it runs out of tokens, leaving JSON that cannot be parsed: one
string (strings without a ``maxLength`` of their own are capped at :data:`STRING_LIMIT` characters), or
extra keys (``"probability": 1, "probability": 1, ...``; objects without ``additionalProperties`` get
none in the grammar, which pydantic would ignore anyway), so the answer always closes.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2

#: Longest string the local model may write in a structured answer (characters), unless the schema says.
STRING_LIMIT = 500


#: llguidance's JSON options: one space after separators and no other whitespace (by default any amount
#: is allowed between tokens, and a small model may fill its answer with blank lines).
_JSON_LAYOUT = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


def llguidance_grammar(schema: dict[str, Any]) -> str:
    """The llguidance grammar that constrains an answer to ``schema`` (tightened, see above)."""
    constrained = {**_tighten(schema), "x-guidance": _JSON_LAYOUT}
    return "%llguidance {}\nstart: %json " + json.dumps(constrained, separators=(",", ":"))


#: Keywords whose value maps names to schemas (the mapping itself is not a schema).
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
#: Keywords whose value is data, not a schema.
_DATA = frozenset({"enum", "const", "default", "examples", "required"})


def _tighten(node: Any) -> Any:
    if isinstance(node, list):
        return [_tighten(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in _DATA:
            out[key] = value
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _tighten(schema) for name, schema in value.items()}
        else:
            out[key] = _tighten(value)
    types = out.get("type")
    is_string = types == "string" or (isinstance(types, list) and "string" in types)
    if is_string and "maxLength" not in out and "enum" not in out and "const" not in out:
        out["maxLength"] = STRING_LIMIT
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False  # JSON schema allows extra keys unless told; a small model adds them
    return out


def _rewrite(body: dict[str, Any]) -> dict[str, Any] | None:
    """The request body with its JSON-schema response format as a grammar; None if there is none."""
    fmt = body.get("response_format")
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema" or "grammar" in body:
        return None
    schema = (fmt.get("json_schema") or {}).get("schema")
    if not isinstance(schema, dict):
        return None
    rewritten = {key: value for key, value in body.items() if key != "response_format"}
    rewritten["grammar"] = llguidance_grammar(schema)
    return rewritten


class GrammarTransport(httpx2.AsyncBaseTransport):
    """An HTTP transport that sends chat completions' JSON schemas to llama.cpp as llguidance grammars."""

    def __init__(self, limits: httpx2.Limits) -> None:
        self._inner = httpx2.AsyncHTTPTransport(limits=limits)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method == "POST" and request.url.path.endswith("/chat/completions"):
            try:
                body = json.loads(await request.aread())
            except ValueError:
                body = None
            rewritten = _rewrite(body) if isinstance(body, dict) else None
            if rewritten is not None:
                headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
                request = httpx2.Request(
                    request.method, request.url, headers=headers, json=rewritten, extensions=request.extensions
                )
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()
