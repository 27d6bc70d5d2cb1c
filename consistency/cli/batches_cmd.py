"""``cc batches [RUNDIR]`` and ``cc batches cancel [RUNDIR|BATCH_ID]``: a run's provider batches."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import InputError
from .console import escape, fmt, out, table


def batches(
    args: Annotated[
        list[str] | None,
        typer.Argument(
            help="RUNDIR (default: the journal of commands without a run directory, in CC_CACHE_DIR), "
            "or 'cancel' followed by RUNDIR or a batch id.",
            show_default=False,
        ),
    ] = None,
    refresh: Annotated[
        bool, typer.Option("--refresh", help="Ask the provider for the current state of unfinished batches first.")
    ] = False,
) -> None:
    """List the batches a --batch run submitted (state, requests, answered, failed, cost), or cancel them."""
    from ..llm.batch import BATCHES, default_journal, read_batches, update_batches

    words = list(args or [])
    cancel = bool(words) and words[0] == "cancel"
    if cancel:
        words = words[1:]
    if len(words) > 1:
        raise InputError("give one RUNDIR (or batch id with cancel)")
    target, only = (words[0] if words else None), None
    path = Path(target) / BATCHES if target and Path(target).is_dir() else default_journal()
    if target and not Path(target).is_dir():
        if not cancel:
            raise InputError(f"{target} is not a run directory")
        only = target
    records = read_batches(path)
    if only and not any(only in (r.get("batch_id"), r["id"]) for r in records.values()):
        raise InputError(f"no batch {only} in {path}; give its run directory")
    if cancel or refresh:
        records = {r["id"]: r for r in asyncio.run(update_batches(path, cancel=cancel, only=only))}
    _print(path, list(records.values()))


_DONE = ("completed", "failed", "expired", "cancelled")


def _print(path: Path, records: list[dict[str, Any]]) -> None:
    if not records:
        out.print(f"no batches in {escape(str(path))}")
        return
    rows = []
    for r in records:
        counts, state = r.get("counts") or {}, str(r.get("state", "?"))
        done = "" if r.get("collected") or r.get("state") in _DONE else "…"
        rows.append([escape(r.get("batch_id") or r["id"]), escape(state) + done,  # no batch id yet: our local id
                     r.get("requests", 0), counts.get("completed", "-"), counts.get("failed", "-"),
                     fmt(r.get("expected_cost")), fmt(r.get("cost")), escape(r.get("created", "-"))])  # fmt: skip
    columns = ("batch", "state", "requests", "answered", "failed", "expected $", "cost $", "created")
    out.print(table(f"batches in {escape(str(path))}", columns, rows, left=("batch", "state", "created")))
