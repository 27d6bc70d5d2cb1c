"""How every ``cc`` command ends on an error: one mapping from the error tree to an exit code.

=====================================  ===========================================================
raised by the command                  printed, and the exit code
=====================================  ===========================================================
:class:`~consistency.errors.RunFailed` ``error SENTENCE`` (and where what finished is): 1
:class:`~consistency.errors.InputError` ``error SENTENCE``: 2
``OSError`` (a file that cannot be     ``error cannot read|write FILE: REASON; FIX``: 2
read or written)
``KeyboardInterrupt`` (Ctrl-C, and     ``interrupted`` / ``stopped by SIGTERM`` and how to go on: 130 / 143
SIGTERM: :func:`.exits.install_sigterm`)
:class:`~consistency.errors.Interrupted` the same; the spending cap (``SpendingCapReached``): 3
anything else                          its traceback and a line asking for a bug report: 1
=====================================  ===========================================================

A class that is both a run failure and an input error (``NothingToScore``) exits as a run failure.
typer's own exits and usage errors pass through untouched. The lazy command table wraps every
command with :func:`handle_errors`; a command that has more to say when it stops (where its work is
saved, how to resume) applies it itself, with ``after``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import typer

from .exits import ExitCode, interrupted_code, terminated

#: Said after the traceback of an exception no part of the tree explains.
BUG = "this is a bug in cc, please report it with the traceback above"

#: Said by a command whose work is saved as it goes (appended, journaled) when it stops early.
SAVED = "what finished is saved: run the same command again (once the cause is fixed) to continue"

#: What a command tells the user once it stopped early, after the error's own sentence: a text, or a
#: function of the exception and the command's arguments (None: nothing to add).
After = str | Callable[[BaseException, dict[str, Any]], str | None] | None

_PASS = (typer.Exit, typer.Abort, typer.TyperException)  # typer's (click's) own ends: usage errors, --help, exits


def handle_errors(func: Callable[..., Any] | None = None, *, after: After = None) -> Any:
    """Wrap a command so that whatever it raises ends it with one sentence and its exit code (see above)."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        if getattr(command, "handles_errors", False):
            return command

        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return command(*args, **kwargs)
            except _PASS:
                raise
            except (Exception, KeyboardInterrupt) as exc:  # every other end goes through the one mapping
                raise typer.Exit(report(exc, _note(after, exc, kwargs))) from None

        wrapper.handles_errors = True  # type: ignore[attr-defined]
        return wrapper

    return decorate(func) if func is not None else decorate


def report(exc: BaseException, note: str | None = None) -> ExitCode:
    """Print what ``exc`` means for the user (``note``: where the work is, how to go on); its exit code."""
    from ..errors import InputError, Interrupted, RunFailed
    from ..write_errors import sentence_for
    from .console import err, escape

    def error(sentence: str) -> None:
        heading = getattr(exc, "heading", "error")  # a few errors head their sentence otherwise
        err.print(f"[red]{heading}[/red]{'' if heading == 'error' else ':'} {escape(sentence)}")

    if type(exc).__name__ == "SpendingCapReached":  # the library keeps it inside a run; said in case one escapes
        error(str(exc))
        return ExitCode.SPENDING_CAP
    if isinstance(exc, KeyboardInterrupt | Interrupted):
        what = "stopped by SIGTERM" if terminated() else "interrupted"
        err.print(f"[yellow]{what}[/yellow]" + (f": {escape(note)}" if note else ""))
        return interrupted_code()
    if isinstance(exc, RunFailed):
        error(str(exc))
        if note:
            err.print(escape(note))
        return ExitCode.FAILED
    if isinstance(exc, InputError):
        error(str(exc))
        return ExitCode.USAGE
    if isinstance(exc, OSError):  # the machine's, not ours: a file that cannot be read or written
        error(sentence_for(exc))
        if note:
            err.print(escape(note))
        return ExitCode.USAGE
    import traceback

    traceback.print_exception(exc)
    err.print(f"[red]{BUG}[/red]", soft_wrap=True)
    return ExitCode.FAILED


def _note(after: After, exc: BaseException, kwargs: dict[str, Any]) -> str | None:
    return after(exc, kwargs) if callable(after) else after
