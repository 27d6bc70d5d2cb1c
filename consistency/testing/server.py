"""A scripted OpenAI-compatible HTTP server, to exercise LLM clients offline.

The server speaks real HTTP/1.1 (asyncio + h11, keep-alive) on 127.0.0.1, so a client under test
goes through its whole stack: connection pool, timeouts, retries, JSON parsing, and the
structured-output layer (``instructor``). What it answers is decided by a *rule*: a callable that
gets a :class:`ScriptedRequest` and returns a :class:`Reply` (what the model says) or a
:class:`Fault` (what goes wrong: 429, 5xx, hang, malformed body, dropped connection).

Endpoints: ``POST /v1/chat/completions`` (non-streaming), ``POST /v1/embeddings``,
``GET /v1/models``, ``GET /health``, and the Files + Batch API of :mod:`.batches`. Other endpoint
families mount themselves with :meth:`ScriptedServer.route` from their own modules.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import re
import struct
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from email.utils import formatdate
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

try:
    import h11
except ImportError:  # pragma: no cover - h11 is only needed to serve, not to build rules
    h11 = None  # type: ignore[assignment]

from .replies import Fault, Reply, Rule, ScriptedRequest, _call, _response_format_type
from .rules import EMBEDDING_DIM, _digest, _embedding, probability_rule

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
_READ_SIZE = 65536
_MAX_BODY = 256 * 1024 * 1024  # a 200 MB batch upload fits; absurd bodies are refused, not buffered forever


# --------------------------------------------------------------------------------------------
# Request parsing and response shapes (OpenAI wire format)
# --------------------------------------------------------------------------------------------


class HTTPError(Exception):
    """A request the server refuses; turned into an OpenAI-style error response."""

    def __init__(
        self,
        status: int,
        message: str,
        code: str | None = None,
        kind: str = "invalid_request_error",
        param: str | None = None,
    ):
        super().__init__(message)
        self.status, self.message, self.code, self.kind, self.param = status, message, code, kind, param


def _error_body(message: str, kind: str, code: str | None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


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


def _tokens(text: str) -> int:
    """A rough token count (about four characters a token), never zero."""
    return max(1, len(text) // 4)


# --------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Response:
    """What a route handler answers."""

    status: int
    body: bytes | memoryview  # a view serves a stored upload without copying it
    headers: list[tuple[str, str]] = field(default_factory=list)
    content_type: str = "application/json"
    usage: dict[str, int] | None = None  # what a completion bills, counted once it is sent


def json_response(status: int, obj: Any, headers: list[tuple[str, str]] | None = None) -> Response:
    return Response(status, json.dumps(obj).encode("utf-8"), headers or [])


class Drop(Exception):
    """Close the connection without answering (a dropped connection, or a client that left)."""


@dataclass(slots=True)
class Request:
    """One HTTP request as a route handler sees it."""

    method: str
    path: str
    """The path as sent (``/v1/files/file-1/content``), without the query."""
    query: dict[str, str]
    """Query parameters (the last value of each)."""
    headers: dict[str, str]
    """Header names lower-cased."""
    body: bytearray
    params: dict[str, str]
    """The ``{name}`` parts of the matched route pattern."""
    route: str
    """The matched pattern, e.g. ``/v1/files/{file_id}``."""
    _conn: Any = None
    _reader: asyncio.StreamReader | None = None
    _server: ScriptedServer | None = None

    def json(self) -> dict[str, Any]:
        """The body as a JSON object, or a 400 as OpenAI words it."""
        try:
            payload = json.loads(self.body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise HTTPError(400, f"We could not parse the JSON body of your request: {exc}", "invalid_json") from None
        if not isinstance(payload, dict):
            raise HTTPError(400, "The request body must be a JSON object.", "invalid_json")
        return payload

    async def pause(self, seconds: float) -> None:
        """Sleep without blocking the server; raise :class:`Drop` if the client disconnects meanwhile."""
        assert self._server is not None and self._reader is not None
        await self._server._pause(self._conn, self._reader, seconds)


Handler = Callable[[Request], Awaitable[Response]]


def _compile(pattern: str) -> re.Pattern[str]:
    """``/v1/files/{file_id}/content`` -> a regex; ``{name:path}`` takes the rest of the path."""
    regex = ""
    for literal, name, kind in re.findall(r"([^{]*)(?:\{(\w+)(?::(\w+))?\})?", pattern):
        regex += re.escape(literal)
        if name:
            regex += f"(?P<{name}>.+)" if kind == "path" else f"(?P<{name}>[^/]+)"
    return re.compile(regex)


class ScriptedServer:
    """An OpenAI-compatible server on ``host:port`` whose answers come from ``rule``.

    Use ``with ScriptedServer(rule) as srv:`` from synchronous code (it runs its own event loop in a
    daemon thread) or ``async with ScriptedServer(rule) as srv:`` inside a running loop. Every
    connection is served by its own task, so slow answers (``latency``, :meth:`Fault.hang`) do not
    hold up others. ``latency`` seconds are added before every model answer (chat, embeddings).
    """

    def __init__(
        self,
        rule: Rule | None = None,
        latency: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
        batch: BatchBehaviour | None = None,
    ) -> None:
        from .batches import BatchAPI  # its own module; imported here as it builds on this one

        self.rule: Rule = rule if rule is not None else probability_rule()
        self.latency = float(latency)
        self.host = host
        self._requested_port = port
        self._port: int | None = None
        self._lock = threading.Lock()  # the record is read from other threads
        self._requests: list[ScriptedRequest] = []
        self._attempts: dict[bytes, int] = {}
        self._next_index = 0
        self._billed = {"prompt_tokens": 0, "completion_tokens": 0}
        self._in_flight = self._max_in_flight = 0
        self._server: asyncio.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._fallback = probability_rule()  # answers a hang that has no ``then``
        self._routes: list[tuple[str, str, re.Pattern[str], Handler]] = []
        self._http_requests: Counter[str] = Counter()
        self.max_body = _MAX_BODY
        self.route("POST", "/v1/chat/completions", self._in_flight_counted(self._chat))
        self.route("POST", "/v1/embeddings", self._in_flight_counted(self._embeddings))
        self.route("GET", "/v1/models", self._models)
        self.route("GET", "/health", self._health)
        self.batches = BatchAPI(self, batch)
        """The Files + Batch API: its knobs (``behaviour``), state and counters."""

    def route(self, method: str, pattern: str, handler: Handler) -> None:
        """Serve ``method`` (``"*"``: any) on paths matching ``pattern`` with ``handler``.

        ``pattern`` is a path whose ``{name}`` parts match one segment and ``{name:path}`` the rest
        (given to the handler in ``request.params``). Routes are tried in the order they were added;
        a path that matches only with another method gets a 405.
        """
        self._routes.append((method.upper(), pattern, _compile(pattern.rstrip("/") or "/"), handler))

    # ---- addresses and records ----------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the server is not started")
        return self._port

    @property
    def base_url(self) -> str:
        """What an OpenAI client takes as ``base_url``, e.g. ``http://127.0.0.1:PORT/v1``."""
        return f"http://{self.host}:{self.port}/v1"

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

    @property
    def http_requests(self) -> dict[str, int]:
        """HTTP requests received per route, keyed ``"METHOD pattern"`` (``"GET /v1/batches/{batch_id}"``);
        unrouted paths count under ``"METHOD <unrouted>"``."""
        with self._lock:
            return dict(self._http_requests)

    def _bill(self, usage: Mapping[str, int]) -> None:
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
        elif _response_format_type(response_format) == "json_schema":
            schema = (response_format.get("json_schema") or {}).get("schema")
        last_user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
        key = _digest(json.dumps(messages, sort_keys=True, separators=(",", ":")))  # 32 bytes, not the prompt
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

    # ---- lifecycle ----------------------------------------------------------------------------

    async def start_async(self) -> ScriptedServer:
        """Start listening on the running loop; returns once the port is bound."""
        if h11 is None:
            raise ImportError("ScriptedServer needs the h11 package: pip install h11")
        if self._server is not None:
            raise RuntimeError("the server is already started")
        self._loop = asyncio.get_running_loop()
        self._server = await asyncio.start_server(self._on_connection, self.host, self._requested_port, backlog=1024)
        self._port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop_async(self) -> None:
        """Stop listening and end every open connection (in-flight requests are abandoned)."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        tasks = list(self._connections)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.batches.aclose()
        await server.wait_closed()

    async def __aenter__(self) -> ScriptedServer:
        return await self.start_async()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop_async()

    def start(self) -> ScriptedServer:
        """Serve from a daemon thread with its own event loop; returns once listening."""
        if self._thread is not None:
            raise RuntimeError("the server is already started")
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start_async())
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(self.stop_async())
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        self._thread = threading.Thread(target=run, name=f"ScriptedServer:{self._requested_port}", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            self._thread = None
            raise failure[0]
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Close the listener and all connections, then end the background thread."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self.stop_async(), loop).result(timeout)
        except Exception:
            log.exception("scripted server did not stop cleanly")
        finally:
            with contextlib.suppress(RuntimeError):  # the loop may already be closed
                loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        self._thread = None

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ---- HTTP ---------------------------------------------------------------------------------

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                event = await self._next_event(conn, reader, writer)
                if isinstance(event, h11.ConnectionClosed):
                    return
                if not isinstance(event, h11.Request):
                    raise h11.RemoteProtocolError(f"unexpected {type(event).__name__}")
                body = await self._read_body(conn, reader, writer)
                try:
                    response = await self._dispatch(conn, reader, event, body)
                except HTTPError as exc:
                    response = json_response(exc.status, _error_body(exc.message, exc.kind, exc.code, exc.param))
                except (Drop, asyncio.CancelledError):
                    raise
                except Exception as exc:  # a server bug should reach the test as a 500, not a hang
                    log.exception("scripted server failed")
                    response = json_response(500, _error_body(f"{type(exc).__name__}: {exc}", "server_error", None))
                # (reliab) billed before it is sent: a client that reads the counters as soon as its last
                # answer arrives must find that answer billed; an answer that cannot be delivered is not billed
                if response.usage is not None:
                    self._bill(response.usage)
                try:
                    await self._send(conn, writer, response)
                except BaseException:
                    if response.usage is not None:
                        self._bill({k: -v for k, v in response.usage.items()})
                    raise
                if conn.our_state is h11.MUST_CLOSE:
                    return
                conn.start_next_cycle()
        except Drop:
            return
        except h11.RemoteProtocolError as exc:
            if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                error = _error_body(f"bad HTTP request: {exc}", "invalid_request_error", None)
                with contextlib.suppress(Exception):
                    await self._send(conn, writer, json_response(exc.error_status_hint, error))
        except (ConnectionError, OSError):
            return  # the client went away; nothing to tell it
        except asyncio.CancelledError:
            # Only stop_async() cancels these tasks. Ending normally matters on Python 3.11, whose
            # StreamReaderProtocol logs a spurious error for a cancelled connection task.
            return
        finally:
            self._connections.discard(task)
            writer.close()

    async def _next_event(self, conn: Any, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Any:
        while True:
            event = conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            if conn.they_are_waiting_for_100_continue:
                writer.write(conn.send(h11.InformationalResponse(status_code=100, headers=[])))
            conn.receive_data(await reader.read(_READ_SIZE))

    async def _read_body(self, conn: Any, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytearray:
        body = bytearray()  # grown in place: a 200 MB upload is held once, not as chunks plus their join
        while True:
            event = await self._next_event(conn, reader, writer)
            if isinstance(event, h11.EndOfMessage):
                return body
            if isinstance(event, h11.Data):
                if len(body) + len(event.data) > self.max_body:
                    raise h11.RemoteProtocolError("request body too large", error_status_hint=413)
                body += event.data
            elif isinstance(event, h11.ConnectionClosed):
                raise Drop

    async def _send(self, conn: Any, writer: asyncio.StreamWriter, response: Response) -> None:
        headers = [
            ("content-type", response.content_type),
            ("content-length", str(len(response.body))),
            ("date", formatdate(usegmt=True)),
            ("server", "consistency-scripted"),
            *response.headers,
        ]
        try:
            reason = HTTPStatus(response.status).phrase.encode()
        except ValueError:
            reason = b""
        writer.write(conn.send(h11.Response(status_code=response.status, headers=headers, reason=reason)))
        for piece in conn.send_with_data_passthrough(h11.Data(data=response.body)):  # no copy of a large body
            writer.write(piece)
        writer.write(conn.send(h11.EndOfMessage()))
        await writer.drain()

    async def _pause(self, conn: Any, reader: asyncio.StreamReader, seconds: float) -> None:
        """Sleep without blocking the loop; raise :class:`Drop` if the client disconnects meanwhile.

        Watching the socket while we wait is what lets a timed-out client's request be dropped at
        once instead of being answered into a closed connection later.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while (remaining := deadline - loop.time()) > 0:
            read = asyncio.ensure_future(reader.read(_READ_SIZE))
            done, _ = await asyncio.wait({read}, timeout=remaining)
            if not done:
                read.cancel()
                await asyncio.wait({read})  # the reader must be free before anyone reads again
                return
            try:
                data = read.result()
            except (ConnectionError, OSError):
                raise Drop from None
            if not data:
                raise Drop
            conn.receive_data(data)  # a pipelined next request: h11 keeps it for the next cycle

    async def _dispatch(self, conn: Any, reader: asyncio.StreamReader, request: Any, body: bytearray) -> Response:
        method = request.method.decode("ascii", "replace").upper()
        target = urlsplit(request.target.decode("ascii", "replace"))
        path = target.path.rstrip("/") or "/"
        allowed: list[str] = []
        for want, pattern, regex, handler in self._routes:
            match = regex.fullmatch(path)
            if match is None:
                continue
            if want not in ("*", method):
                allowed.append(want)
                continue
            with self._lock:
                self._http_requests[f"{method} {pattern}"] += 1
            query = {k: v[-1] for k, v in parse_qs(target.query, keep_blank_values=True).items()}
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in request.headers}
            req = Request(method, target.path, query, headers, body, match.groupdict(), pattern, conn, reader, self)
            return await handler(req)
        with self._lock:
            self._http_requests[f"{method} <unrouted>"] += 1
        if allowed:
            use = " or ".join(dict.fromkeys(allowed))
            raise HTTPError(405, f"Method {method} not allowed on {path}; use {use}", "method_not_allowed")
        raise HTTPError(404, f"Invalid URL ({method} {path})", "not_found")

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
            outcome = outcome.then or await _call(self._fallback, request)
        completion = self.completion(request, outcome)
        response = json_response(200, completion)
        response.usage = completion["usage"]
        return response

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
            outcome = await _call(self.rule, request)
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
        return _error_body(fault.message, kind, code), headers

    def completion(self, request: ScriptedRequest, reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
        if reply.kind == "json" and request.tool_name is not None:
            arguments = json.dumps(reply.value)
            message["tool_calls"] = [
                {
                    "id": f"call_{_digest(str(request.index), arguments).hex()[:24]}",
                    "type": "function",
                    "function": {"name": request.tool_name, "arguments": arguments},
                }
            ]
            finish_reason, produced = reply.finish_reason or "tool_calls", arguments
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
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
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
            packed = struct.pack(f"<{dim}f", *_embedding(text, dim))
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
