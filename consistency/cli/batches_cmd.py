"""``cc batches [RUNDIR]`` and ``cc batches cancel [RUNDIR|BATCH_ID]``: a run's provider batches."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer

from .console import err, escape, fmt, out
from .exits import ExitCode


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
        err.print("[red]error[/red] give one RUNDIR (or batch id with cancel)")
        raise typer.Exit(ExitCode.USAGE)
    target, only = (words[0] if words else None), None
    path = Path(target) / BATCHES if target and Path(target).is_dir() else default_journal()
    if target and not Path(target).is_dir():
        if not cancel:
            err.print(f"[red]error[/red] {escape(target)} is not a run directory")
            raise typer.Exit(ExitCode.USAGE)
        only = target
    try:
        records = read_batches(path)
        if only and not any(only in (r.get("batch_id"), r["id"]) for r in records.values()):
            err.print(f"[red]error[/red] no batch {escape(only)} in {escape(str(path))}; give its run directory")
            raise typer.Exit(ExitCode.USAGE)
        if cancel or refresh:
            records = {r["id"]: r for r in asyncio.run(update_batches(path, cancel=cancel, only=only))}
    except ValueError as exc:
        err.print(f"[red]error[/red] {escape(str(exc))}")
        raise typer.Exit(ExitCode.USAGE) from None
    except Exception as exc:  # the provider could not be asked: say so in one sentence
        from ..llm.secrets import redact

        err.print(f"[red]error[/red] cannot reach the Batch API: {escape(redact(str(exc)))}")
        raise typer.Exit(ExitCode.FAILED) from None
    _print(path, list(records.values()))


_DONE = ("completed", "failed", "expired", "cancelled")


def _print(path: Path, records: list[dict[str, Any]]) -> None:
    from rich.table import Table

    if not records:
        out.print(f"no batches in {escape(str(path))}")
        return
    table = Table(title=f"batches in {escape(str(path))}")
    for column in ("batch", "state", "requests", "answered", "failed", "expected $", "cost $", "created"):
        table.add_column(column, justify="left" if column in ("batch", "state", "created") else "right")
    for r in records:
        counts = r.get("counts") or {}
        table.add_row(
            escape(r.get("batch_id") or r["id"]),  # not submitted yet: our local id
            escape(str(r.get("state", "?"))) + ("" if r.get("collected") or r.get("state") in _DONE else "…"),
            str(r.get("requests", 0)),
            str(counts.get("completed", "-")),
            str(counts.get("failed", "-")),
            fmt(r.get("expected_cost")),
            fmt(r.get("cost")),
            escape(r.get("created", "-")),
        )
    out.print(table)
