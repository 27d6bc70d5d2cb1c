"""``cc``'s exit codes: one table, read by the commands, by ``cc --help`` and by the documentation."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Each code with what it means, as ``cc --help`` says it (docs/reference/exit-codes.md has the details)."""

    meaning: str

    def __new__(cls, code: int, meaning: str) -> ExitCode:
        member = int.__new__(cls, code)
        member._value_, member.meaning = code, meaning
        return member

    OK = 0, "done (a run with some failed questions too: the retry command is printed)"
    FAILED = 1, "nothing usable was produced, or an error no retry can fix stopped the command"
    USAGE = 2, "bad input or options, refused before any work started"
    SPENDING_CAP = 3, "the spending cap (--max-cost) was reached; saved, resume with a higher cap"
    INTERRUPTED = 130, "interrupted by Ctrl-C; what finished is saved, resume with the printed command"
    TERMINATED = 143, "stopped by SIGTERM; saved and resumable like Ctrl-C"


def epilog() -> str:
    """The exit codes as ``cc --help`` shows them."""
    return "Exit codes: " + "; ".join(f"{int(code)} {code.meaning}" for code in ExitCode) + "."


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
