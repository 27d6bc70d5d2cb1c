"""The objects of the scripted Files + Batch API (:mod:`.batches`) and their wire shapes.

Stored files and batches as the OpenAI API returns them, the multipart upload parser, cursor pages of
the list endpoints, and the lines of a batch's output file.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from consistency.fake_openai.http_server import HTTPError, Response, json_response

BATCH_ENDPOINT = "/v1/chat/completions"
_WINDOW = 24 * 3600


@dataclass
class StoredFile:
    """A stored file: ``buffer[start:end]`` (an upload stays in the request body it came in, uncopied)."""

    id: str
    filename: str
    purpose: str
    created_at: int
    buffer: bytes | bytearray
    start: int
    end: int

    @property
    def view(self) -> memoryview:
        return memoryview(self.buffer)[self.start : self.end]

    def lines(self) -> Iterator[tuple[int, int, int]]:
        """(1-based number, start, end) of each line; a final newline does not start another line."""
        pos, number = self.start, 0
        while pos < self.end:
            newline = self.buffer.find(b"\n", pos, self.end)
            stop = self.end if newline < 0 else newline
            number += 1
            yield number, pos, stop
            pos = stop + 1

    def object(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "file",
            "bytes": self.end - self.start,
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
            "expires_at": None,
            "status_details": None,
        }


@dataclass
class StoredBatch:
    id: str
    input_file_id: str
    created_at: int
    metadata: dict[str, str] | None
    status: str = "validating"
    model: str | None = None
    errors: list[dict[str, Any]] | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    times: dict[str, int] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=lambda: {"total": 0, "completed": 0, "failed": 0})
    usage: dict[str, int] = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0})
    cancel: asyncio.Event = field(default_factory=asyncio.Event)

    def object(self) -> dict[str, Any]:
        prompt, completion = self.usage["prompt_tokens"], self.usage["completion_tokens"]
        return {
            "id": self.id,
            "object": "batch",
            "endpoint": BATCH_ENDPOINT,
            "model": self.model,
            "errors": {"object": "list", "data": self.errors} if self.errors else None,
            "input_file_id": self.input_file_id,
            "completion_window": "24h",
            "status": self.status,
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "created_at": self.created_at,
            "expires_at": self.created_at + _WINDOW,
            **{f"{name}_at": self.times.get(name) for name in _STAMPS},
            "request_counts": dict(self.counts),
            "usage": {
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": completion,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt + completion,
            },
            "metadata": self.metadata,
        }


_STAMPS = ("in_progress", "finalizing", "completed", "failed", "expired", "cancelling", "cancelled")


def not_found(kind: str, ident: str, param: str = "id") -> HTTPError:
    return HTTPError(404, f"No such {kind} object: {ident}", None, param=param)


def multipart_parts(body: bytearray, content_type: str) -> dict[str, tuple[str | None, int, int]]:
    """The parts of a ``multipart/form-data`` body by field name: (filename, start, end) of the content
    in ``body``, so a 200 MB upload is never copied."""
    found = re.search(r'boundary="?([^";]+)"?', content_type)
    if not content_type.startswith("multipart/form-data") or found is None:
        raise HTTPError(400, "Uploads must be multipart/form-data with a boundary.", "invalid_request")
    delimiter = b"--" + found.group(1).encode("latin-1")
    parts: dict[str, tuple[str | None, int, int]] = {}
    pos = body.find(delimiter)
    while pos >= 0:
        pos += len(delimiter)
        if body[pos : pos + 2] == b"--":
            return parts
        head_end = body.find(b"\r\n\r\n", pos)
        end = body.find(b"\r\n" + delimiter, head_end)
        if head_end < 0 or end < 0:
            break
        head = body[pos:head_end].decode("utf-8", "replace")
        name = re.search(r'\bname="([^"]*)"', head)
        filename = re.search(r'\bfilename="([^"]*)"', head)
        if name is not None:
            parts[name.group(1)] = (filename.group(1) if filename else None, head_end + 4, end)
        pos = end + 2
    raise HTTPError(400, "The multipart body is truncated or malformed.", "invalid_request")


def cursor_page(items: list[dict[str, Any]], query: dict[str, str], kind: str, default: int, most: int) -> Response:
    """One page of a list endpoint, OpenAI's way: ``limit`` objects after the one whose id is ``after``."""
    try:
        limit = int(query.get("limit", default))
    except ValueError:
        limit = 0
    if not 1 <= limit <= most:
        raise HTTPError(400, f"'limit' must be an integer between 1 and {most}.", "invalid_value", param="limit")
    after = query.get("after")
    if after:
        ids = [item["id"] for item in items]
        if after not in ids:
            raise not_found(kind, after, "after")
        items = items[ids.index(after) + 1 :]
    page = items[:limit]
    first, last = (page[0]["id"], page[-1]["id"]) if page else (None, None)
    listing = {"object": "list", "data": page, "first_id": first, "last_id": last, "has_more": len(items) > limit}
    return json_response(200, listing)


def line_id() -> str:
    return f"batch_req_{secrets.token_hex(12)}"


def line_response(status: int, body: dict[str, Any]) -> dict[str, Any]:
    return {"status_code": status, "request_id": secrets.token_hex(16), "body": body}
