"""``cc``'s exit codes: one table, read by the commands, by ``cc --help`` and by the documentation."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    #: The command ran but produced nothing usable (no question scored, no tuple made, every question failed,
    #: more failures than --fail-on-error), or stopped on an error no retry can fix (bad key, unknown model).
    FAILED = 1
    #: Bad input or options, refused before any work or run directory (unknown forecaster, check or option,
    #: unreadable file, a file with no usable line, questions with no resolution for a ground-truth run).
    USAGE = 2
    #: The run's spending cap (``--max-cost``) was reached: no new call was made, the run directory is
    #: ``interrupted`` and resumes with a higher cap.
    SPENDING_CAP = 3
    #: Ctrl-C (SIGINT): what finished is saved and the resume command is printed (128 + 2).
    INTERRUPTED = 130
    #: SIGTERM (a job scheduler's stop, ``kill``): the same as Ctrl-C (128 + 15).
    TERMINATED = 143


#: Code → meaning, for ``cc --help`` and the exit-code table of the docs.
MEANINGS: dict[int, str] = {
    ExitCode.OK: "done (a run with some failed questions too: the retry command is printed)",
    ExitCode.FAILED: "nothing usable was produced, or an error no retry can fix stopped the command",
    ExitCode.USAGE: "bad input or options, refused before any work started",
    ExitCode.SPENDING_CAP: "the spending cap (--max-cost) was reached; saved, resume with a higher cap",
    ExitCode.INTERRUPTED: "interrupted by Ctrl-C; what finished is saved, resume with the printed command",
    ExitCode.TERMINATED: "stopped by SIGTERM; saved and resumable like Ctrl-C",
}


def epilog() -> str:
    """The exit codes as ``cc --help`` shows them."""
    return "Exit codes: " + "; ".join(f"{int(code)} {text}" for code, text in MEANINGS.items()) + "."


_terminated = False


def install_sigterm() -> None:
    """Make SIGTERM stop ``cc`` the way Ctrl-C does (work saved, ``interrupted`` recorded, the resume command
    printed), then exit :attr:`ExitCode.TERMINATED`. Only in the main thread of a process that has not chosen
    its own SIGTERM handling."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)


def _on_sigterm(signum: int, frame: object) -> None:
    import signal

    global _terminated
    _terminated = True
    handler = signal.getsignal(signal.SIGINT)  # inside asyncio.run: its handler, which cancels the main task
    if callable(handler):
        handler(signal.SIGINT, frame)
        return
    raise KeyboardInterrupt


def terminated() -> bool:
    """Whether SIGTERM (rather than Ctrl-C) is what stopped this process."""
    return _terminated


def interrupted_code() -> ExitCode:
    return ExitCode.TERMINATED if _terminated else ExitCode.INTERRUPTED
