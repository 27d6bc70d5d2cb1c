"""The batch journal (``batches.jsonl``) and the commands that manage a journal's batches.

Batches are journaled as soon as they exist, before any waiting, so that a resumed run (and
``cc batches``) finds them by their local id; see :mod:`.batch` for the collector that writes it.
"""

from __future__ import annotations

import fcntl
import json
import time
import urllib.parse
from pathlib import Path
from typing import Any

import httpx2
import openai

from ..errors import InputError, RunFailed
from ..jsonl import LineError, cut_torn_tail, iter_json_lines
from ..paths import cache_dir
from ..store.layout import BATCHES
from .secrets import redact

#: Batch states after which nothing changes any more.
FINAL = frozenset({"completed", "failed", "expired", "cancelled"})


# ----------------------------------------------------------------------------- journal
class BatchJournal:
    """``batches.jsonl``: one line per state change of a batch; the latest fields per batch win.

    Appends hold an exclusive ``flock``, so several processes may share one journal (the one in
    the cache directory) without interleaving their lines.
    """

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path else None
        self.records: dict[str, dict[str, Any]] = read_batches(self.path) if self.path else {}

    def write(self, local: str, **fields: Any) -> dict[str, Any]:
        record = self.records.setdefault(local, {"id": local})
        record.update(fields)
        if self.path is not None:
            line = json.dumps({"id": local, "time": timestamp(), **fields}, ensure_ascii=False) + "\n"
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX)
                cut_torn_tail(self.path)  # a line torn by a kill: the next record starts on its own line
                fh.write(redact(line))
                fh.flush()
        return record


def read_batches(path: str | Path) -> dict[str, dict[str, Any]]:
    """The batches of a journal (local id → merged record), in order of creation; a torn last line
    (a kill mid-write) is ignored, a damaged line elsewhere is an error naming file and line."""
    path = Path(path)
    records: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return records
    lines = list(iter_json_lines(path))
    for i, (number, obj) in enumerate(lines):
        if isinstance(obj, LineError):
            if i == len(lines) - 1:
                break
            raise InputError(f"{path}:{number}: not a batch record ({obj.message})")
        if "id" not in obj:
            raise InputError(f"{path}:{number}: not a batch record (no id)")
        records.setdefault(obj["id"], {}).update(obj)
    return records


def default_journal() -> Path:
    """Where commands without a run directory (``cc generate``, ``cc questions``) journal batches."""
    return cache_dir() / BATCHES


def unfinished(path: str | Path) -> list[dict[str, Any]]:
    """Batches of a journal that were submitted and not yet collected."""
    return [r for r in read_batches(path).values() if r.get("batch_id") and not r.get("collected")]


# ----------------------------------------------------------------------------- management
def _api_for(endpoint: str) -> openai.AsyncOpenAI:
    from .secrets import key_for
    from .specs import parse_model_spec

    spec = parse_model_spec(endpoint)
    base_url, _, query = (spec.base_url or "").partition("?")
    return openai.AsyncOpenAI(
        base_url=base_url or None,
        default_query=dict(urllib.parse.parse_qsl(query)) or None,
        api_key=key_for(spec) or "no-key",
        max_retries=3,
    )


async def update_batches(path: str | Path, cancel: bool = False, only: str | None = None) -> list[dict[str, Any]]:
    """Ask the provider for the current state of a journal's unfinished batches (``cancel``: cancel
    them first; ``only``: just the batch with this id), journal it, and return every batch."""
    journal = BatchJournal(path)
    for record in list(journal.records.values()):
        batch_id = record.get("batch_id")
        if not batch_id or record.get("state") in FINAL or (only and only not in (batch_id, record["id"])):
            continue
        try:
            async with _api_for(record["endpoint"]) as api:
                batch = await (api.batches.cancel(batch_id) if cancel else api.batches.retrieve(batch_id))
        except (openai.APIError, httpx2.HTTPError) as exc:  # the provider could not be asked: one sentence
            raise RunFailed(f"cannot reach the Batch API: {redact(str(exc))}") from None
        counts = batch.request_counts.model_dump() if batch.request_counts else record.get("counts")
        journal.write(record["id"], state=batch.status, counts=counts)
    return list(journal.records.values())


def timestamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def batches_of(target: str | None, *, cancel: bool = False, refresh: bool = False) -> tuple[Path, list[dict[str, Any]]]:
    """``cc batches``: the journal of ``target`` (a run directory; None: the default journal) and its batches,
    asked for their current state first with ``refresh``; with ``cancel``, cancelled first (``target`` may then
    be one batch id instead, found in the default journal)."""
    is_dir = bool(target) and Path(str(target)).is_dir()
    path = Path(str(target)) / BATCHES if is_dir else default_journal()
    only = target if target and not is_dir else None
    if only and not cancel:
        raise InputError(f"{target} is not a run directory")
    records = read_batches(path)
    if only and not any(only in (r.get("batch_id"), r["id"]) for r in records.values()):
        raise InputError(f"no batch {only} in {path}; give its run directory")
    if cancel or refresh:
        import asyncio

        return path, asyncio.run(update_batches(path, cancel=cancel, only=only))
    return path, list(records.values())
