"""A run's sessions: each start or resume of a run is one, and ``run.json``'s totals are their sum.

A session that ended normally (complete, failed, Ctrl-C) records the LLM layer's own counts. One
killed outright (``kill -9``, power loss) recorded nothing: when the run is next resumed, its part
is recovered from the lines it appended to ``llm_calls.jsonl`` (every call is written there as it
finishes), so totals of calls, tokens and cost cover everything a run has done and paid for.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import __version__
from ..jsonl import parse_json
from ..store.meta import RunMeta, SessionRecord, Totals
from .rundir import now

#: The counts summed over sessions (the LLM layer's statistics, plus wall time).
COUNTS = (
    "calls",
    "cache_hits",
    "failures",
    "retries",
    "prompt_tokens",
    "completion_tokens",
    "cost",
    "unpriced_calls",
    "wall_seconds",
)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def counts_from_transcript(transcript: Path, offset: int) -> Totals:
    """The counts of the calls ``transcript`` recorded from byte ``offset`` on (a torn last line is skipped)."""
    counts: dict[str, Any] = dict.fromkeys(COUNTS, 0)
    counts["cost"] = 0.0
    if transcript.is_file():
        with transcript.open("rb") as fh:
            fh.seek(offset)
            for raw in fh:
                try:
                    record = parse_json(raw)
                except ValueError:
                    continue
                _count(counts, record)
    return Totals.model_validate(counts)


def _count(counts: dict[str, Any], record: dict[str, Any]) -> None:
    """Add one transcript line (one call, or one answer from the cache) to ``counts``."""
    usage = record.get("usage") or {}
    counts["prompt_tokens"] += int(usage.get("prompt_tokens") or 0)
    counts["completion_tokens"] += int(usage.get("completion_tokens") or 0)
    if record.get("cache_hit"):
        counts["cache_hits"] += 1
    else:
        attempts = int(record.get("attempts") or 0)
        counts["calls"] += attempts
        counts["retries"] += max(attempts - 1, 0)
        if usage.get("cost") is None and attempts:
            counts["unpriced_calls"] += 1
    counts["cost"] += float(usage.get("cost") or 0.0)
    counts["failures"] += record.get("error") is not None


@dataclass(frozen=True)
class Sessions:
    """``run.json``'s ``sessions`` after a :func:`begin` or :func:`end`, and their sum, ``totals``."""

    records: list[SessionRecord]

    @property
    def totals(self) -> Totals:
        summed: dict[str, Any] = {}
        for session in self.records:
            for key, value in (session.totals.model_dump(exclude_unset=True) if session.totals else {}).items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    summed[key] = summed.get(key, 0) + value
        if "wall_seconds" in summed:
            summed["wall_seconds"] = round(summed["wall_seconds"], 3)
        return Totals.model_validate(summed)

    def changes(self) -> dict[str, Any]:
        """The fields of ``run.json`` to write (none when there is no session: a record we did not start)."""
        return {"sessions": self.records, "totals": self.totals} if self.records else {}


def _closed(session: SessionRecord, **changes: Any) -> SessionRecord:
    return SessionRecord.model_validate(session.model_dump(exclude_unset=True) | changes)


def begin(meta: RunMeta, transcript: Path, journal: Path) -> Sessions:
    """The sessions with killed ones accounted for and a new one open."""
    sessions = list(meta.sessions or [])
    if not sessions and meta.totals:  # a run recorded before sessions were: keep its totals
        sessions.append(SessionRecord(status="unknown", totals=meta.totals))
    for i, session in enumerate(sessions):  # only the latest can be open: each begin() closes the one before
        if session.ended is not None or session.transcript_offset is None or session.started is None:
            continue
        counts = counts_from_transcript(transcript, session.transcript_offset)
        last = max((p.stat().st_mtime for p in (transcript, journal) if p.exists()), default=None)
        started = _parse_time(session.started)
        ended = datetime.fromtimestamp(last, UTC) if last else started
        counts.wall_seconds = round(max((ended - started).total_seconds(), 0.0), 3)
        sessions[i] = _closed(session, ended=_iso(ended), status="killed", totals=counts, totals_from=transcript.name)
    action = "start" if not sessions else "resume"
    opened = SessionRecord(
        started=now(),
        host=socket.gethostname(),
        pid=os.getpid(),
        version=__version__,
        action=action,
        transcript_offset=_size(transcript),
    )
    return Sessions([*sessions, opened])


def end(meta: RunMeta, stats: dict[str, Any], status: str, did: dict[str, int]) -> Sessions:
    """The sessions with the open one closed: its status, what it did and its counts."""
    sessions = list(meta.sessions or [])
    if not sessions or sessions[-1].started is None:
        return Sessions(sessions)
    ended = now()
    counts = Totals.model_validate({k: v for k, v in stats.items() if k in COUNTS})
    counts.wall_seconds = round((_parse_time(ended) - _parse_time(sessions[-1].started)).total_seconds(), 3)
    sessions[-1] = _closed(sessions[-1], ended=ended, status=status, totals=counts, **did)
    return Sessions(sessions)
