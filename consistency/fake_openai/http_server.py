"""A small HTTP/1.1 server for test doubles: routes, keep-alive, faults a client must survive.

It speaks real HTTP (asyncio + h11) on 127.0.0.1, so a client under test goes through its whole
stack. :class:`HTTPServer` owns the listener, the connections and the routing; a subclass (the
scripted OpenAI server of :mod:`.server`, the platforms' fixture of :mod:`.web`) mounts its
endpoints with :meth:`HTTPServer.route`. A handler gets a :class:`Request` and returns a
:class:`Response`, raises :class:`HTTPError` (an OpenAI-style error body) or :class:`Drop` (the
connection closes without an answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from email.utils import formatdate
from http import HTTPStatus
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

from ..errors import InputError, RunFailed

try:
    import h11
except ImportError:  # pragma: no cover - h11 is only needed to serve, not to build rules
    h11 = None  # type: ignore[assignment]

__all__ = [
    "Drop",
    "HTTPError",
    "HTTPServer",
    "Handler",
    "Request",
    "Response",
    "error_body",
    "json_response",
]

log = logging.getLogger(__name__)

_READ_SIZE = 65536
_MAX_BODY = 256 * 1024 * 1024  # a 200 MB batch upload fits; absurd bodies are refused, not buffered forever


class HTTPError(InputError):
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


def error_body(message: str, kind: str, code: str | None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


@dataclass(slots=True)
class Response:
    """What a route handler answers."""

    status: int
    body: bytes | memoryview  # a view serves a stored upload without copying it
    headers: list[tuple[str, str]] = field(default_factory=list)
    content_type: str = "application/json"


def json_response(status: int, obj: Any, headers: list[tuple[str, str]] | None = None) -> Response:
    return Response(status, json.dumps(obj).encode("utf-8"), headers or [])


class Drop(RunFailed):
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
    _server: HTTPServer | None = None

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


class HTTPServer:
    """Routes served on ``host:port``; subclasses add the endpoints.

    Use ``with server:`` from synchronous code (it runs its own event loop in a daemon thread) or
    ``async with server:`` inside a running loop. Every connection is served by its own task, so a
    slow answer does not hold up others.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self._requested_port = port
        self._port: int | None = None
        self._lock = threading.Lock()  # the record is read from other threads
        self._server: asyncio.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._routes: list[tuple[str, str, re.Pattern[str], Handler]] = []
        self._http_requests: Counter[str] = Counter()
        self.max_body = _MAX_BODY

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

    @property
    def http_requests(self) -> dict[str, int]:
        """HTTP requests received per route, keyed ``"METHOD pattern"`` (``"GET /v1/batches/{batch_id}"``);
        unrouted paths count under ``"METHOD <unrouted>"``."""
        with self._lock:
            return dict(self._http_requests)

    @property
    def lock(self) -> threading.Lock:
        """The lock that guards what the server records (held briefly; records are read from other threads)."""
        return self._lock

    # ---- lifecycle ----------------------------------------------------------------------------

    async def start_async(self) -> Self:
        """Start listening on the running loop; returns once the port is bound."""
        if h11 is None:
            raise ImportError(
                f"{type(self).__name__} needs h11, from the fake-openai extra: "
                "pip install 'forecast-consistency[fake-openai]'"
            )
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
        await self.closing()
        await server.wait_closed()

    async def __aenter__(self) -> Self:
        return await self.start_async()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop_async()

    def start(self) -> Self:
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

        self._thread = threading.Thread(target=run, name=f"{type(self).__name__}:{self._requested_port}", daemon=True)
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

    def __enter__(self) -> Self:
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
                    response = json_response(exc.status, error_body(exc.message, exc.kind, exc.code, exc.param))
                except (Drop, asyncio.CancelledError):
                    raise
                except Exception as exc:  # a server bug should reach the test as a 500, not a hang
                    log.exception("scripted server failed")
                    response = json_response(500, error_body(f"{type(exc).__name__}: {exc}", "server_error", None))
                await self._send(conn, writer, response)
                if conn.our_state is h11.MUST_CLOSE:
                    return
                conn.start_next_cycle()
        except Drop:
            return
        except h11.RemoteProtocolError as exc:
            if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                error = error_body(f"bad HTTP request: {exc}", "invalid_request_error", None)
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

    async def closing(self) -> None:
        """Called as the server stops, after its connections ended: a subclass releases what it holds."""
