"""A scripted OpenAI-compatible HTTP server, to exercise LLM clients offline.

The server speaks real HTTP/1.1 (:mod:`.http_server`: asyncio + h11, keep-alive) on 127.0.0.1, so a client
under test goes through its whole stack: connection pool, timeouts, retries, JSON parsing, and the
structured-output layer (``instructor``). What it answers is decided by a *rule*: a callable that
gets a :class:`ScriptedRequest` and returns a :class:`Reply` (what the model says) or a
:class:`Fault` (what goes wrong: 429, 5xx, hang, malformed body, dropped connection).

Endpoints: ``POST /v1/chat/completions`` (non-streaming), ``POST /v1/embeddings``,
``GET /v1/models``, ``GET /health``, and the Files + Batch API of :mod:`.batches`. Other endpoint
families mount themselves with :meth:`ScriptedServer.route` from their own modules.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import math
import re
import struct
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .http_server import Drop, Handler, HTTPError, HTTPServer, Request, Response, error_body, json_response
from .replies import Fault, Reply, Rule, ScriptedRequest, call_rule, response_format_type
from .rules import EMBEDDING_DIM, digest, embedding, probability_rule

if TYPE_CHECKING:
    from .batches import BatchBehaviour

__all__ = [
    "DEFAULT_MODEL",
    "Drop",
    "HTTPError",
    "Handler",
    "Request",
    "Response",
    "ScriptedServer",
    "json_response",
]

log = logging.getLogger(__name__)

DEFAULT_MODEL = "scripted"


# --------------------------------------------------------------------------------------------
# Request parsing and response shapes (OpenAI wire format)
# --------------------------------------------------------------------------------------------


def _content_text(content: Any) -> str:
    """Text of a message's content: a string, or a list of parts of which the text ones count."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                texts.append(part["text"])
        return "\n".join(texts)
    return ""


def _selected_tool(tools: list[dict[str, Any]] | None, tool_choice: Any) -> dict[str, Any] | None:
    """The function a structured answer is given to (None when there are no tools, or tool_choice is "none")."""
    if not tools or tool_choice == "none":
        return None
    functions = [t.get("function") for t in tools if isinstance(t, Mapping) and isinstance(t.get("function"), Mapping)]
    if not functions:
        return None
    if isinstance(tool_choice, Mapping):
        wanted = (tool_choice.get("function") or {}).get("name") or tool_choice.get("name")
        for function in functions:
            if function.get("name") == wanted:
                return function
    return functions[0]


def _chance(token: str, probability: float) -> dict[str, Any]:
    return {"token": token, "logprob": math.log(probability), "bytes": list(token.encode("utf-8"))}


def _logprobs(request: ScriptedRequest, reply: Reply) -> dict[str, Any] | None:
    """The ``logprobs`` of a choice as OpenAI reports them, when the request asked (``logprobs: true``).

    A :meth:`Reply.next_token` answer reports its distribution (the ``top_logprobs`` most likely tokens);
    a text answer, its words as tokens, each certain (logprob 0); a tool call, none (as OpenAI).
    """
    n = request.top_logprobs
    if n is None or (reply.kind == "json" and request.tool_name is not None):
        return None
    if reply.kind == "tokens":
        chances = [_chance(token, p) for token, p in reply.value.items()]
        return {"content": [{**chances[0], "top_logprobs": chances[:n]}], "refusal": None}
    text = json.dumps(reply.value) if reply.kind == "json" else reply.value
    words = re.findall(r"\s*\S+", text)
    return {"content": [{**_chance(w, 1.0), "top_logprobs": [_chance(w, 1.0)][:n]} for w in words], "refusal": None}


def _tokens(text: str) -> int:
    """A rough token count (about four characters a token), never zero."""
    return max(1, len(text) // 4)


# --------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------


class ScriptedServer(HTTPServer):
    """An OpenAI-compatible server on ``host:port`` whose answers come from ``rule``.

    Use ``with ScriptedServer(rule) as srv:`` from synchronous code (it runs its own event loop in a
    daemon thread) or ``async with ScriptedServer(rule) as srv:`` inside a running loop. Every
    connection is served by its own task, so slow answers (``latency``, :meth:`Fault.hang`) do not
    hold up others. ``latency`` seconds are added before every model answer (chat, embeddings).
    ``logprobs=False`` makes an endpoint that ignores the ``logprobs`` parameter (``"logprobs": null``).
    """

    def __init__(
        self,
        rule: Rule | None = None,
        latency: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
        batch: BatchBehaviour | None = None,
        logprobs: bool = True,
    ) -> None:
        from .batches import BatchAPI  # its own module; imported here as it builds on this one

        super().__init__(host, port)
        self.rule: Rule = rule if rule is not None else probability_rule()
        self.latency = float(latency)
        self.logprobs = logprobs
        self._requests: list[ScriptedRequest] = []
        self._attempts: dict[bytes, int] = {}
        self._next_index = 0
        self._billed = {"prompt_tokens": 0, "completion_tokens": 0}
        self._in_flight = self._max_in_flight = 0
        self._fallback = probability_rule()  # answers a hang that has no ``then``
        self.route("POST", "/v1/chat/completions", self._in_flight_counted(self._chat))
        self.route("POST", "/v1/embeddings", self._in_flight_counted(self._embeddings))
        self.route("GET", "/v1/models", self._models)
        self.route("GET", "/health", self._health)
        self.batches = BatchAPI(self, batch)
        """The Files + Batch API: its knobs (``behaviour``), state and counters."""

    # ---- records ------------------------------------------------------------------------------

    def model_spec(self, model: str = DEFAULT_MODEL) -> str:
        """This project's model spec for an OpenAI-compatible server: ``<base_url>::<model>``."""
        return f"{self.base_url}::{model}"

    @property
    def requests(self) -> list[ScriptedRequest]:
        """The chat completion requests received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def count(self) -> int:
        with self._lock:
            return len(self._requests)

    @property
    def billed(self) -> dict[str, int]:
        """Tokens of the chat completions actually sent (as a provider bills): what a client's
        accounting must add up to, faults or not."""
        with self._lock:
            return dict(self._billed)

    @property
    def max_in_flight(self) -> int:
        """The most model requests (chat, embeddings) being answered at once since start or ``reset()``:
        what a client's concurrency limit is checked against, with no clock involved."""
        with self._lock:
            return self._max_in_flight

    @contextlib.contextmanager
    def _serving(self) -> Iterator[None]:
        with self._lock:
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
        try:
            yield
        finally:
            with self._lock:
                self._in_flight -= 1

    def _in_flight_counted(self, handler: Handler) -> Handler:
        """Count a model endpoint's requests into ``max_in_flight`` while they are being answered."""

        async def serve(request: Request) -> Response:
            with self._serving():
                return await handler(request)

        return serve

    def bill(self, usage: Mapping[str, int]) -> None:
        """Count tokens as billed (a completion about to be sent, a batch line answered)."""
        with self._lock:
            for name in self._billed:
                self._billed[name] += usage.get(name, 0)

    def reset(self) -> None:
        """Forget recorded requests, attempt counts, billed tokens, the arrival index (``sequence`` restarts),
        HTTP request counts and the Batch API's counters (not its files and batches)."""
        self.batches.reset_counters()
        with self._lock:
            self._http_requests.clear()
            self._requests.clear()
            self._attempts.clear()
            self._next_index = 0
            self._billed = dict.fromkeys(self._billed, 0)
            self._max_in_flight = self._in_flight

    def _record(self, body: dict[str, Any]) -> ScriptedRequest:
        messages = body["messages"]
        tools = body.get("tools") if isinstance(body.get("tools"), list) else None
        response_format = body.get("response_format") if isinstance(body.get("response_format"), dict) else None
        tool = _selected_tool(tools, body.get("tool_choice"))
        schema = None
        if tool is not None:
            schema = tool.get("parameters")
        elif response_format_type(response_format) == "json_schema":
            schema = (response_format.get("json_schema") or {}).get("schema")
        last_user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
        key = digest(json.dumps(messages, sort_keys=True, separators=(",", ":")))  # 32 bytes, not the prompt
        with self._lock:
            index = self._next_index
            self._next_index += 1
            attempt = self._attempts.get(key, 0)
            self._attempts[key] = attempt + 1
            request = ScriptedRequest(
                index=index,
                body=body,
                model=body["model"],
                messages=messages,
                last_user_text=_content_text(last_user.get("content")) if last_user else "",
                tools=tools,
                response_format=response_format,
                schema=schema if isinstance(schema, dict) else None,
                attempt=attempt,
                tool_name=tool.get("name") if tool is not None else None,
            )
            self._requests.append(request)
        return request

    async def closing(self) -> None:
        await self.batches.aclose()

    # ---- endpoints ----------------------------------------------------------------------------

    async def _health(self, request: Request) -> Response:
        return json_response(200, {"status": "ok"})

    async def _models(self, request: Request) -> Response:
        model = {"id": DEFAULT_MODEL, "object": "model", "created": 0, "owned_by": "consistency"}
        return json_response(200, {"object": "list", "data": [model]})

    async def _chat(self, http: Request) -> Response:
        request, outcome = await self.decide(http.json())
        if self.latency > 0:
            await http.pause(self.latency)
        if isinstance(outcome, Fault):
            if outcome.kind != "hang":
                return self._fault_response(outcome)
            await http.pause(outcome.seconds)
            outcome = outcome.then or await call_rule(self._fallback, request)
        completion = self.completion(request, outcome)
        self.bill(completion["usage"])  # before the answer leaves: a client that has it sees it billed
        return json_response(200, completion)

    async def decide(self, body: dict[str, Any]) -> tuple[ScriptedRequest, Reply | Fault]:
        """Check a chat completion body, record it and ask the rule what happens to it.

        The one path every chat request takes, sent directly or as a line of a batch; raises
        :class:`HTTPError` (400) for a body OpenAI would refuse, (500) for a rule that fails.
        """
        if not isinstance(body.get("model"), str) or not body["model"]:
            raise HTTPError(400, "you must provide a model parameter", "missing_required_parameter")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
            raise HTTPError(400, "'messages' must be a non-empty list of message objects", "invalid_value")
        if body.get("stream"):
            raise HTTPError(400, "Streaming is not supported by the scripted server.", "unsupported_parameter")

        request = self._record(body)
        try:
            outcome = await call_rule(self.rule, request)
        except Exception as exc:  # a broken rule is a test bug: say so in the response
            log.exception("scripted rule failed on request %d", request.index)
            raise HTTPError(500, f"rule failed: {type(exc).__name__}: {exc}", None, "server_error") from exc
        return request, outcome

    def _fault_response(self, fault: Fault) -> Response:
        if fault.kind == "drop":
            raise Drop
        if fault.kind == "malformed":
            return Response(200, b'{"id": "chatcmpl-broken", "object": "chat.completion", "choices": [{"ind')
        return json_response(fault.status, *self.fault_error(fault))

    def fault_error(self, fault: Fault) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        """The OpenAI error body (and headers) of a status fault."""
        kind, code, headers = "server_error", fault.code, []
        if 400 <= fault.status < 500 and fault.status != 429:
            kind = {401: "authentication_error", 403: "permission_error"}.get(fault.status, "invalid_request_error")
        if fault.status == 429:
            kind, code = "requests", "rate_limit_exceeded"
            if fault.retry_after is not None:
                headers = [
                    ("retry-after", f"{fault.retry_after:.3f}".rstrip("0").rstrip(".")),
                    ("retry-after-ms", str(round(fault.retry_after * 1000))),
                ]
        return error_body(fault.message, kind, code), headers

    def completion(self, request: ScriptedRequest, reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
        if reply.kind == "json" and request.tool_name is not None:
            arguments = json.dumps(reply.value)
            message["tool_calls"] = [
                {
                    "id": f"call_{digest(str(request.index), arguments).hex()[:24]}",
                    "type": "function",
                    "function": {"name": request.tool_name, "arguments": arguments},
                }
            ]
            finish_reason, produced = reply.finish_reason or "tool_calls", arguments
        elif reply.kind == "tokens":
            content = next(iter(reply.value))  # the most likely token
            message["content"] = content
            one = request.body.get("max_tokens") == 1 or request.body.get("max_completion_tokens") == 1
            finish_reason, produced = reply.finish_reason or ("length" if one else "stop"), content
        else:
            content = json.dumps(reply.value) if reply.kind == "json" else reply.value
            message["content"] = content
            finish_reason, produced = reply.finish_reason or "stop", content

        prompt = "".join(_content_text(m.get("content")) for m in request.messages)
        if request.tools:
            prompt += json.dumps(request.tools)
        prompt_tokens, completion_tokens = _tokens(prompt), _tokens(produced)
        return {
            "id": f"chatcmpl-scripted-{request.index}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": finish_reason,
                    "logprobs": _logprobs(request, reply) if self.logprobs else None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
            "system_fingerprint": "scripted",
        }

    async def _embeddings(self, http: Request) -> Response:
        body = http.json()
        raw = body.get("input")
        if isinstance(raw, str):
            inputs = [raw]
        elif isinstance(raw, list) and raw and all(isinstance(x, str) for x in raw):
            inputs = raw
        elif isinstance(raw, list) and raw and all(isinstance(x, (int, list)) for x in raw):
            # token arrays: one input (list of ints) or many (list of lists); hashed as their JSON
            inputs = [json.dumps(raw)] if all(isinstance(x, int) for x in raw) else [json.dumps(x) for x in raw]
        else:
            raise HTTPError(400, "'input' must be a string or a non-empty list of strings", "invalid_value")
        dim = body.get("dimensions", EMBEDDING_DIM)
        if not isinstance(dim, int) or isinstance(dim, bool) or not 1 <= dim <= 4096:
            raise HTTPError(400, "'dimensions' must be an integer in [1, 4096]", "invalid_value")
        encoding = body.get("encoding_format") or "float"
        if encoding not in ("float", "base64"):
            raise HTTPError(400, "'encoding_format' must be 'float' or 'base64'", "invalid_value")
        if self.latency > 0:
            await http.pause(self.latency)

        data = []
        for i, text in enumerate(inputs):
            packed = struct.pack(f"<{dim}f", *embedding(text, dim))
            # float32 either way, so both encodings give the client the same numbers
            if encoding == "base64":
                vector: Any = base64.b64encode(packed).decode("ascii")
            else:
                vector = list(struct.unpack(f"<{dim}f", packed))
            data.append({"object": "embedding", "index": i, "embedding": vector})
        tokens = sum(_tokens(text) for text in inputs)
        model = body.get("model") if isinstance(body.get("model"), str) else DEFAULT_MODEL
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return json_response(200, {"object": "list", "data": data, "model": model, "usage": usage})
