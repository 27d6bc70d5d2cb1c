"""The project's exceptions, one tree, so a command can tell bad input from a failed run from a bug.

    ConsistencyError            anything the package raises on purpose; ``str()`` is one sentence to print
    ├── InputError              bad input or options, refused before (or instead of) any work: exit 2
    ├── RunFailed               the work started and could not produce anything usable: exit 1
    └── Interrupted             stopped by Ctrl-C or SIGTERM, with what finished saved: exit 130 / 143

``InputError`` is also a :class:`ValueError` and ``RunFailed`` a :class:`RuntimeError`, so code that
catches those today keeps working while the older exception classes move under this tree. Any other
exception escaping a command is a bug, not bad input.
"""

from __future__ import annotations


class ConsistencyError(Exception):
    """The base of every error the package raises on purpose."""


class InputError(ConsistencyError, ValueError):
    """A file, field or option that cannot be used; the message names it and says why."""


class RunFailed(ConsistencyError, RuntimeError):
    """Work that started and produced nothing usable (or stopped on an error no retry can fix)."""


class Interrupted(ConsistencyError):
    """Stopped by the user or the system (Ctrl-C, SIGTERM); what finished is kept."""
