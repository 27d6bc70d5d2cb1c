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
    #: Ctrl-C (SIGINT): what finished is saved and the resume command is printed (128 + 2).
    INTERRUPTED = 130
    #: SIGTERM (a job scheduler's stop, ``kill``): the same as Ctrl-C (128 + 15).
    TERMINATED = 143


#: Code → meaning, for ``cc --help`` and the exit-code table of the docs.
MEANINGS: dict[int, str] = {
    ExitCode.OK: "done (a run with some failed questions too: the retry command is printed)",
    ExitCode.FAILED: "nothing usable was produced, or an error no retry can fix stopped the command",
    ExitCode.USAGE: "bad input or options, refused before any work started",
    ExitCode.INTERRUPTED: "interrupted by Ctrl-C; what finished is saved, resume with the printed command",
    ExitCode.TERMINATED: "stopped by SIGTERM; saved and resumable like Ctrl-C",
}


def epilog() -> str:
    """The exit codes as ``cc --help`` shows them."""
    return "Exit codes: " + "; ".join(f"{int(code)} {text}" for code, text in MEANINGS.items()) + "."
