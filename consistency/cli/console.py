"""The one place that prints: a rich console for output and one for errors.

When output goes to a pipe or file, lines are not wrapped (so ``file:line:`` messages stay
greppable) and tables get room instead of the 80-column default.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from rich.table import Table

    from ..evaluation.scoring import ScoreReport
    from ..models import ForecastingQuestion


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


def say(lines: Iterable[str], console: Console | None = None) -> None:
    """Sentences the library wrote (plain text, never markup), one a line, on stderr by default."""
    for line in lines:
        (console or err).print(line, markup=False)


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


def questions_of(path: str | Path, strict: bool = True) -> list[ForecastingQuestion]:
    """The questions of a file (or ``paper:``/``hf://`` reference), the lines left out said on stderr
    (``strict``: an invalid line stops the command; see :func:`~consistency.evaluation.ground_truth.read_questions`)."""
    from ..evaluation.ground_truth import read_questions

    questions, skipped = read_questions(path, strict)
    print_skipped(skipped, None)
    return questions


def show(data: Any, as_json: bool, render: Callable[[], Any], **printing: Any) -> None:
    """``--json``: ``data`` as JSON on stdout; else what ``render()`` draws, printed with ``printing``."""
    if as_json:
        out.print_json(json.dumps(data))
    else:
        out.print(render(), **printing)


def table(
    title: str | None,
    columns: Sequence[str],
    rows: Iterable[Sequence[object]],
    *,
    left: int | Sequence[str] = 1,
    total: Sequence[object] | None = None,
    fold: Sequence[str] = (),
    no_wrap: bool = False,
    box: str | None = "HEAVY_HEAD",
    **options: Any,
) -> Table:
    """The one table of ``cc``: the first ``left`` columns (or those named in it: names, not figures) left-aligned,
    the others right-aligned; ``total`` a bold last row under a rule; columns in ``fold`` wrap long values (with
    ``no_wrap``, the others never wrap); ``box`` names a :mod:`rich.box` style (None: no lines); ``options`` go
    to rich's table (a caption, ``title_justify``...)."""
    from rich import box as boxes
    from rich.table import Table

    grid = Table(title=title, box=None if box is None else getattr(boxes, box), **options)
    for i, name in enumerate(columns):
        flush = i < left if isinstance(left, int) else name in left
        overflow = "fold" if name in fold else "ellipsis"
        grid.add_column(name, justify="left" if flush else "right", overflow=overflow, no_wrap=no_wrap)
    for row in rows:
        grid.add_row(*(str(cell) for cell in row))
    if total is not None:
        grid.add_section()
        grid.add_row(*(str(cell) for cell in total), style="bold")
    return grid


def violations(report: ScoreReport) -> Table:
    """A score report's violations table (``cc score``, ``cc evaluate``)."""
    title, columns, rows, total = report.table()
    return table(title, columns, rows, total=total)


__all__ = ["err", "escape", "fmt", "out", "pct", "print_skipped", "say", "show", "table", "violations"]
