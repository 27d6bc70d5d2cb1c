"""The OpenAI Files + Batch API on the scripted server, so batch clients are tested offline over HTTP.

Endpoints (the real wire format, parsed by the ``openai`` SDK's own types): ``POST /v1/files``
(multipart, ``purpose=batch``), ``GET /v1/files/{id}``, ``GET /v1/files/{id}/content``,
``DELETE /v1/files/{id}``, ``GET /v1/files`` (``purpose``, ``order``, ``limit``, ``after``),
``POST /v1/batches``, ``GET /v1/batches`` (``limit``, ``after``), ``GET /v1/batches/{id}`` and
``POST /v1/batches/{id}/cancel``.

A batch goes validating -> in_progress -> finalizing -> completed, or to ``failed`` (a bad input
file: ``errors`` names the line), ``expired`` (the lines not reached are in the error file with code
``batch_expired``) or cancelling -> cancelled (likewise ``batch_cancelled``). Every line is answered
by the server's rule exactly as a direct ``/v1/chat/completions`` call is, and billed the same way;
a status fault becomes that line's non-200 ``response``, a hang, drop or malformed fault a line with
a top-level ``error`` (a batch never waits on a hang longer than ``hang_timeout``). What goes wrong
and how long it takes is set by :class:`BatchBehaviour`; counters (executions per ``custom_id``,
uploads, batches) let tests assert that nothing was run twice. State lives in memory for as long as
the server runs, so a client process that is killed and restarted finds its batches by id.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import random
import secrets
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from consistency.fake_openai.batch_objects import (
    BATCH_ENDPOINT,
    StoredBatch,
    StoredFile,
    cursor_page,
    line_id,
    line_response,
    multipart_parts,
    not_found,
)
from consistency.fake_openai.http_server import HTTPError, HTTPServer, Request, Response, error_body, json_response
from consistency.fake_openai.replies import Fault

__all__ = ["BATCH_ENDPOINT", "Answer", "BatchAPI", "BatchBehaviour"]

Answer = Callable[[dict[str, Any]], Awaitable[tuple[int, dict[str, Any]] | Fault]]
"""How a batch line's body is answered: ``(status, body)`` as ``/v1/chat/completions`` would send it
(billed when 200), or the transport :class:`Fault` (hang, drop, malformed) the line then fails with.
The server that mounts the Batch API hands in its own chat path, so this module never imports it."""

_TERMINAL = ("failed", "completed", "expired", "cancelled")
_PURPOSES = ("assistants", "batch", "fine-tune", "vision", "user_data")
_YIELD_EVERY = 200  # lines run between two yields to the event loop, so the server stays responsive


@dataclass
class BatchBehaviour:
    """How the scripted Batch API behaves; change the fields of ``server.batches.behaviour`` at any time."""

    processing_delay: float = 0.0
    """Seconds a batch stays in progress; its ``request_counts`` advance in about 20 steps meanwhile."""
    expire_next: int = 0
    """Expire the next N batches: ``expire_fraction`` of their lines run, the rest end as ``batch_expired``."""
    expire_fraction: float = 0.5
    fail_next_uploads: int = 0
    """Refuse the next N file uploads with ``upload_failure_status`` (the file is not stored)."""
    upload_failure_status: int = 500
    max_requests: int = 50_000
    """Most lines an input file may hold (OpenAI's limit)."""
    max_bytes: int = 200 * 1024 * 1024
    """Largest input file, in bytes (OpenAI's limit)."""
    hang_timeout: float = 0.0
    """Most seconds a line with a hang fault waits before it ends as a ``request_timeout`` error line."""
    shuffle_output: bool = True
    """Write output and error lines in a shuffled order, as a client must not rely on the input's."""


class BatchAPI:
    """The Files + Batch API mounted on ``server`` (a scripted server's ``server.batches``); every line
    is run through ``answer``."""

    def __init__(self, server: HTTPServer, answer: Answer, behaviour: BatchBehaviour | None = None) -> None:
        self.answer = answer
        self.behaviour = behaviour if behaviour is not None else BatchBehaviour()
        self._lock = server.lock  # one lock for the whole record, read from the test thread
        self._files: dict[str, StoredFile] = {}
        self._batches: dict[str, StoredBatch] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._executions: Counter[str] = Counter()
        self._files_uploaded = 0
        self._batches_created = 0
        self._shuffles = 0
        server.route("POST", "/v1/files", self._upload)
        server.route("GET", "/v1/files", self._list_files)
        server.route("GET", "/v1/files/{file_id}", self._file)
        server.route("DELETE", "/v1/files/{file_id}", self._delete)
        server.route("GET", "/v1/files/{file_id}/content", self._content)
        server.route("POST", "/v1/batches", self._create)
        server.route("GET", "/v1/batches", self._list)
        server.route("GET", "/v1/batches/{batch_id}", self._retrieve)
        server.route("POST", "/v1/batches/{batch_id}/cancel", self._cancel)

    # ---- counters (read from any thread) ---------------------------------------------------

    @property
    def executions(self) -> dict[str, int]:
        """How many times each ``custom_id`` was run, across all batches (expired or cancelled lines
        that never ran do not count)."""
        with self._lock:
            return dict(self._executions)

    @property
    def files_uploaded(self) -> int:
        with self._lock:
            return self._files_uploaded

    @property
    def batches_created(self) -> int:
        with self._lock:
            return self._batches_created

    def batch(self, batch_id: str) -> dict[str, Any]:
        """A batch as ``GET /v1/batches/{id}`` returns it."""
        with self._lock:
            return self._batches[batch_id].object()

    def file_content(self, file_id: str) -> bytes:
        with self._lock:
            return bytes(self._files[file_id].view)

    def reset_counters(self) -> None:
        """Forget executions, uploads and batches counted so far (files and batches themselves stay)."""
        with self._lock:
            self._executions.clear()
            self._files_uploaded = self._batches_created = 0

    async def aclose(self) -> None:
        """Stop the batches still running (the server is stopping)."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # ---- files ------------------------------------------------------------------------------

    def _new_file(
        self, filename: str, purpose: str, buffer: bytes | bytearray, start: int = 0, end: int | None = None
    ) -> StoredFile:
        end = len(buffer) if end is None else end
        stored = StoredFile(f"file-{secrets.token_hex(12)}", filename, purpose, int(time.time()), buffer, start, end)
        with self._lock:
            self._files[stored.id] = stored
        return stored

    def _get_file(self, file_id: str, param: str = "id") -> StoredFile:
        with self._lock:
            stored = self._files.get(file_id)
        if stored is None:
            raise not_found("File", file_id, param)
        return stored

    async def _upload(self, request: Request) -> Response:
        with self._lock:
            fail = self.behaviour.fail_next_uploads > 0
            if fail:
                self.behaviour.fail_next_uploads -= 1
        if fail:
            status = self.behaviour.upload_failure_status
            message = f"The server had an error while processing your upload (scripted {status})."
            kind = "server_error" if status >= 500 else "invalid_request_error"
            return json_response(status, error_body(message, kind, None))
        parts = multipart_parts(request.body, request.headers.get("content-type", ""))
        if "purpose" not in parts:
            raise HTTPError(400, "Missing required parameter: 'purpose'.", "missing_required_parameter")
        _, start, end = parts["purpose"]
        purpose = request.body[start:end].decode("utf-8", "replace")
        if purpose not in _PURPOSES:
            raise HTTPError(400, f"'{purpose}' is not one of {list(_PURPOSES)} - 'purpose'", "invalid_value")
        if "file" not in parts or parts["file"][0] is None:
            raise HTTPError(400, "Missing required parameter: 'file'.", "missing_required_parameter")
        filename, start, end = parts["file"]
        stored = self._new_file(filename or "upload.jsonl", purpose, request.body, start, end)
        with self._lock:
            self._files_uploaded += 1
        return json_response(200, stored.object())

    async def _list_files(self, request: Request) -> Response:
        purpose = request.query.get("purpose")
        with self._lock:
            files = [f.object() for f in self._files.values() if purpose in (None, f.purpose)]
        if request.query.get("order", "desc") == "desc":
            files.reverse()
        return cursor_page(files, request.query, "File", default=10_000, most=10_000)

    async def _file(self, request: Request) -> Response:
        return json_response(200, self._get_file(request.params["file_id"]).object())

    async def _content(self, request: Request) -> Response:
        stored = self._get_file(request.params["file_id"])
        return Response(200, stored.view, content_type="application/octet-stream")

    async def _delete(self, request: Request) -> Response:
        file_id = request.params["file_id"]
        self._get_file(file_id)
        with self._lock:
            del self._files[file_id]
        return json_response(200, {"id": file_id, "object": "file", "deleted": True})

    # ---- batches ----------------------------------------------------------------------------

    def _get_batch(self, batch_id: str) -> StoredBatch:
        with self._lock:
            batch = self._batches.get(batch_id)
        if batch is None:
            raise not_found("Batch", batch_id)
        return batch

    def _answer(self, batch: StoredBatch) -> Response:
        with self._lock:
            return json_response(200, batch.object())

    async def _create(self, request: Request) -> Response:
        body = request.json()
        for name in ("input_file_id", "endpoint", "completion_window"):
            if not isinstance(body.get(name), str) or not body[name]:
                raise HTTPError(400, f"Missing required parameter: '{name}'.", "missing_required_parameter")
        if body["endpoint"] != BATCH_ENDPOINT:
            message = f"'{body['endpoint']}' is not supported by the scripted server; use '{BATCH_ENDPOINT}'."
            raise HTTPError(400, message, "invalid_value")
        if body["completion_window"] != "24h":
            raise HTTPError(400, f"'{body['completion_window']}' is not one of ['24h'] - 'completion_window'", None)
        metadata = body.get("metadata")
        if metadata is not None and not (
            isinstance(metadata, dict)
            and len(metadata) <= 16
            and all(isinstance(k, str) and isinstance(v, str) and len(k) <= 64 for k, v in metadata.items())
        ):
            raise HTTPError(400, "'metadata' must be at most 16 string keys and string values.", "invalid_value")
        stored = self._get_file(body["input_file_id"], "input_file_id")
        if stored.purpose != "batch":
            message = f"The input file {stored.id} has purpose '{stored.purpose}'; a batch needs purpose 'batch'."
            raise HTTPError(400, message, "invalid_value")
        batch = StoredBatch(f"batch_{secrets.token_hex(12)}", stored.id, int(time.time()), metadata)
        with self._lock:
            self._batches[batch.id] = batch
            self._batches_created += 1
        task = asyncio.get_running_loop().create_task(self._run(batch, stored))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return self._answer(batch)

    async def _retrieve(self, request: Request) -> Response:
        return self._answer(self._get_batch(request.params["batch_id"]))

    async def _cancel(self, request: Request) -> Response:
        batch = self._get_batch(request.params["batch_id"])
        with self._lock:
            if batch.status in _TERMINAL:
                message = f"Cannot cancel a batch with status '{batch.status}'."
                raise HTTPError(409, message, "invalid_state")
            if batch.status != "cancelling":
                batch.status = "cancelling"
                batch.times["cancelling"] = int(time.time())
                batch.cancel.set()
        return self._answer(batch)

    async def _list(self, request: Request) -> Response:
        with self._lock:
            newest_first = [b.object() for b in reversed(self._batches.values())]
        return cursor_page(newest_first, request.query, "Batch", default=20, most=100)

    # ---- running a batch --------------------------------------------------------------------

    def _set(self, batch: StoredBatch, status: str) -> None:
        with self._lock:
            batch.times[status] = int(time.time())
            if batch.status != "cancelling" or status in _TERMINAL:  # a cancel is not undone by progress
                batch.status = status

    def _validate(self, stored: StoredFile) -> tuple[list[tuple[str, int, int]], list[dict[str, Any]], str]:
        """(custom_id, start, end) of each line, the errors OpenAI would report, and the file's model.

        Only offsets are kept: a line is parsed again when it runs, so a 200 MB file is not held
        twice, once as bytes and once as Python objects.
        """
        behaviour, buffer, size = self.behaviour, stored.buffer, stored.end - stored.start

        def error(code: str, message: str, line: int | None, param: str | None = None) -> dict[str, Any]:
            return {"code": code, "message": message, "param": param, "line": line}

        if size == 0 or (size < 4096 and not bytes(stored.view).strip()):
            return [], [error("empty_file", "The batch input file is empty.", None)], ""
        if size > behaviour.max_bytes:
            line = buffer.count(b"\n", stored.start, stored.start + behaviour.max_bytes) + 1
            message = f"The batch input file is larger than the maximum of {behaviour.max_bytes} bytes."
            return [], [error("file_too_large", message, line)], ""
        count = buffer.count(b"\n", stored.start, stored.end) + (buffer[stored.end - 1] != ord("\n"))
        if count > behaviour.max_requests:
            message = f"The batch input file has more than the maximum of {behaviour.max_requests} requests."
            return [], [error("too_many_tasks", message, behaviour.max_requests + 1)], ""
        requests: list[tuple[str, int, int]] = []
        errors: list[dict[str, Any]] = []
        seen: set[str] = set()
        model = ""
        for number, start, end in stored.lines():
            try:
                item = json.loads(buffer[start:end])
            except (ValueError, UnicodeDecodeError):
                item = None
            if not isinstance(item, dict):
                errors.append(error("invalid_json_line", "This line is not parseable as valid JSON.", number))
                continue
            custom_id = item.get("custom_id")
            if not isinstance(custom_id, str) or not custom_id:
                message = "Missing required parameter: 'custom_id'."
                errors.append(error("missing_required_parameter", message, number, "custom_id"))
                continue
            if custom_id in seen:
                message = (
                    "The custom_id for this request is a duplicate of another request. "
                    "The custom_id parameter must be unique for each individual request in a batch."
                )
                errors.append(error("duplicate_custom_id", message, number, "custom_id"))
                continue
            seen.add(custom_id)
            if item.get("method") != "POST":
                message = "The method of this request must be 'POST'."
                errors.append(error("invalid_value", message, number, "method"))
                continue
            if item.get("url") != BATCH_ENDPOINT:
                message = f"The URL provided for this request does not match the batch endpoint {BATCH_ENDPOINT}."
                errors.append(error("url_mismatch", message, number, "url"))
                continue
            body = item.get("body")
            if not isinstance(body, dict):
                errors.append(error("invalid_value", "The body of this request must be a JSON object.", number, "body"))
                continue
            line_model = body.get("model") if isinstance(body.get("model"), str) else ""
            if requests and line_model != model:
                message = f"The model of this request ({line_model!r}) differs from the file's ({model!r})."
                errors.append(error("model_mismatch", message, number, "body.model"))
                continue
            model = model or line_model
            requests.append((custom_id, start, end))
        return requests, errors, model

    async def _run(self, batch: StoredBatch, stored: StoredFile) -> None:
        await asyncio.sleep(0)  # the create call answers "validating" first
        requests, errors, model = self._validate(stored)
        with self._lock:
            batch.model = model or None
        if errors:
            with self._lock:
                batch.errors = errors
            self._set(batch, "failed")
            return
        behaviour = self.behaviour
        with self._lock:
            expire = behaviour.expire_next > 0
            if expire:
                behaviour.expire_next -= 1
            batch.counts["total"] = len(requests)
        self._set(batch, "in_progress")
        stop = math.floor(len(requests) * behaviour.expire_fraction) if expire else len(requests)
        step = max(1, math.ceil(len(requests) / 20))
        pause = behaviour.processing_delay * step / max(1, len(requests))
        done: list[tuple[bool, dict[str, Any]]] = []
        for i, (custom_id, start, end) in enumerate(requests[:stop]):
            if batch.cancel.is_set():
                break
            line, ok = await self._execute(batch, custom_id, json.loads(stored.buffer[start:end])["body"])
            done.append((ok, line))
            with self._lock:
                batch.counts["completed" if ok else "failed"] += 1
            if (i + 1) % step == 0 and pause > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(batch.cancel.wait(), pause)
            elif (i + 1) % _YIELD_EVERY == 0:
                await asyncio.sleep(0)
        cancelled = batch.cancel.is_set()
        if not cancelled:
            self._set(batch, "finalizing")
        code, message = (
            ("batch_cancelled", "This request was not executed because the batch was cancelled.")
            if cancelled
            else ("batch_expired", "This request could not be executed before the completion window expired.")
        )
        for custom_id, _start, _end in requests[len(done) :]:
            error = {"code": code, "message": message}
            line = {"id": line_id(), "custom_id": custom_id, "response": None, "error": error}
            done.append((False, line))
            with self._lock:
                batch.counts["failed"] += 1
        self._write_results(batch, done)
        self._set(batch, "cancelled" if cancelled else "expired" if expire else "completed")

    def _write_results(self, batch: StoredBatch, done: list[tuple[bool, dict[str, Any]]]) -> None:
        if self.behaviour.shuffle_output:
            with self._lock:
                self._shuffles += 1
                seed = self._shuffles
            random.Random(seed).shuffle(done)
        for ok, name in ((True, "output"), (False, "error")):
            lines = [json.dumps(line) for good, line in done if good is ok]
            if not lines:
                continue
            data = ("\n".join(lines) + "\n").encode("utf-8")
            stored = self._new_file(f"{batch.id}_{name}.jsonl", "batch_output", data)
            with self._lock:
                setattr(batch, f"{name}_file_id", stored.id)

    async def _execute(self, batch: StoredBatch, custom_id: str, body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """Run one line the way ``/v1/chat/completions`` answers it: (its result line, whether it succeeded)."""
        with self._lock:
            self._executions[custom_id] += 1
        line: dict[str, Any] = {"id": line_id(), "custom_id": custom_id, "response": None, "error": None}
        answered = await self.answer(body)
        if isinstance(answered, Fault):
            if answered.kind == "hang":
                wait = min(answered.seconds, self.behaviour.hang_timeout)
                if wait > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(batch.cancel.wait(), wait)
                error = {"code": "request_timeout", "message": "The request timed out (scripted hang)."}
            else:  # drop, malformed: the model server failed this request
                error = {"code": "server_error", "message": f"The server had an error (scripted {answered.kind})."}
            return {**line, "error": error}, False
        status, completion = answered
        if status != 200:
            return {**line, "response": line_response(status, completion)}, False
        with self._lock:
            for name in batch.usage:
                batch.usage[name] += completion["usage"][name]
        return {**line, "response": line_response(200, completion)}, True
