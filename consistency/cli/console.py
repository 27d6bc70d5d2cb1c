"""The one place that prints: a rich console for output and one for errors.

When output goes to a pipe or file, lines are not wrapped (so ``file:line:`` messages stay
greppable) and tables get room instead of the 80-column default.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape


def _console(stderr: bool = False) -> Console:
    console = Console(stderr=stderr, highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = 200
        console.soft_wrap = True
    return console


out = _console()
err = _console(stderr=True)


def fmt(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def print_skipped(
    errors: Sequence[Any], listed_in: str | None, what: str = "input line(s) skipped", limit: int = 5
) -> None:
    """Input that was not used, always said (``errors`` are :class:`~consistency.jsonl.LineError`).

    With ``listed_in`` (a file holding the full list): how many lines, then the first few ``file:line: reason``.
    Without: every ``file:line: reason``, then how many, since the terminal is the only place they are told.
    """
    if not errors:
        return
    lines = len({(e.path, e.line) for e in errors})
    if listed_in is None:
        for e in sorted(errors, key=lambda e: (e.path, e.line)):
            err.print(f"  skipped {e}", markup=False, soft_wrap=True)
        err.print(f"[yellow]{lines} {what}[/yellow]")
        return
    err.print(f"[yellow]{lines} {what}[/yellow] (all listed in {escape(listed_in)}):")
    for e in errors[:limit]:
        err.print(f"  {e}", markup=False, soft_wrap=True)
    if len(errors) > limit:
        err.print(f"  ... and {len(errors) - limit} more")


__all__ = ["err", "escape", "fmt", "out", "pct", "print_skipped"]
