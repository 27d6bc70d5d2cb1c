"""A run's sessions: each start or resume of a run is one, and ``run.json``'s totals are their sum.

A session that ended normally (complete, failed, Ctrl-C) records the LLM layer's own counts. One
killed outright (``kill -9``, power loss) recorded nothing: when the run is next resumed, its part
is recovered from the lines it appended to ``llm_calls.jsonl`` (every call is written there as it
finishes), so totals of calls, tokens and cost cover everything a run has done and paid for.
"""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import __version__
from ..jsonl import parse_json
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


def counts_from_transcript(transcript: Path, offset: int) -> dict[str, Any]:
    """The counts of the calls ``transcript`` recorded from byte ``offset`` on (a torn last line is skipped)."""
    counts: dict[str, Any] = dict.fromkeys(COUNTS, 0)
    counts["cost"] = 0.0
    if not transcript.is_file():
        return counts
    with transcript.open("rb") as fh:
        fh.seek(offset)
        for raw in fh:
            try:
                record = parse_json(raw)
            except ValueError:
                continue
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
    return counts


def _sum(sessions: list[dict[str, Any]]) -> dict[str, Any]:
    totals: dict[str, Any] = {}
    for session in sessions:
        for key, value in (session.get("totals") or {}).items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                totals[key] = totals.get(key, 0) + value
    if "wall_seconds" in totals:
        totals["wall_seconds"] = round(totals["wall_seconds"], 3)
    return totals


def begin(meta: dict[str, Any], transcript: Path, journal: Path) -> dict[str, Any]:
    """New ``sessions`` and ``totals`` for ``run.json``: killed sessions accounted for, a new one open."""
    sessions = [dict(s) for s in meta.get("sessions") or []]
    if not sessions and meta.get("totals"):  # a run recorded before sessions were: keep its totals
        sessions.append({"status": "unknown", "totals": dict(meta["totals"])})
    for session in sessions:  # only the latest can be open: each begin() closes the one before
        if "ended" in session or "transcript_offset" not in session:
            continue
        counts = counts_from_transcript(transcript, session["transcript_offset"])
        last = max((p.stat().st_mtime for p in (transcript, journal) if p.exists()), default=None)
        started = _parse_time(session["started"])
        ended = datetime.fromtimestamp(last, UTC) if last else started
        counts["wall_seconds"] = round(max((ended - started).total_seconds(), 0.0), 3)
        session.update(ended=_iso(ended), status="killed", totals=counts, totals_from=transcript.name)
    action = "start" if not sessions else "resume"
    sessions.append(
        {
            "started": now(),
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "version": __version__,
            "action": action,
            "transcript_offset": _size(transcript),
        }
    )
    return {"sessions": sessions, "totals": _sum(sessions)}


def end(meta: dict[str, Any], stats: dict[str, Any], status: str, did: dict[str, Any]) -> dict[str, Any]:
    """New ``sessions`` and ``totals``: the open session closed with its status, what it did and its counts."""
    sessions = [dict(s) for s in meta.get("sessions") or []]
    if not sessions:
        return {}
    session = sessions[-1]
    ended = now()
    counts = {k: v for k, v in stats.items() if k in COUNTS}
    counts["wall_seconds"] = round((_parse_time(ended) - _parse_time(session["started"])).total_seconds(), 3)
    session.update(ended=ended, status=status, totals=counts, **did)
    return {"sessions": sessions, "totals": _sum(sessions)}


def this_session(meta: dict[str, Any]) -> dict[str, Any]:
    """The counts of the latest session (for "this session's part" of a summary)."""
    sessions = meta.get("sessions") or []
    return dict(sessions[-1].get("totals") or {}) if sessions else {}
