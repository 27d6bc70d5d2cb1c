"""``cc batches [RUNDIR]`` and ``cc batches cancel [RUNDIR|BATCH_ID]``: a run's provider batches."""

from __future__ import annotations

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
    from ..llm.batch_journal import batches_of

    words = list(args or [])
    cancel = bool(words) and words[0] == "cancel"
    if len(words) > 1 + cancel:
        raise InputError("give one RUNDIR (or batch id with cancel)")
    _print(*batches_of(words[-1] if len(words) > cancel else None, cancel=cancel, refresh=refresh))


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
