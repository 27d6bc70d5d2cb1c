"""Exclusive ownership of a file that a command appends to (``flock``), so two commands cannot write one file at once.

Two ``cc questions scrape --out s.jsonl`` started together would each read the ids already in the
file, each find every question new, and each append all of them: a file with every question
twice. Every appending command therefore owns its output while it runs: the lock is taken before
the file's existing lines (and so its ids) are read, and a second process gets an
:class:`InUseError` at once instead of waiting or writing duplicates. The OS drops the lock when the
owner ends, however it ends (``kill -9`` included), so no stale lock is ever left behind.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO

from .errors import InputError


class InUseError(InputError):
    """Another process owns the file; ``str()`` is the one sentence to print."""


def owner_of(fh: IO) -> int | None:
    """The pid holding a ``flock`` on ``fh``'s file, from ``/proc/locks`` (Linux); None when unknown."""
    try:
        st = os.fstat(fh.fileno())
        with open("/proc/locks", encoding="ascii") as locks:
            for line in locks:
                parts = line.split()
                # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"
                if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5].rsplit(":", 1)[-1] == str(st.st_ino):
                    pid = int(parts[4])
                    if pid != os.getpid():
                        return pid
    except (OSError, ValueError):
        pass
    return None


def try_lock(fh: IO) -> bool:
    """Take an exclusive ``flock`` on ``fh`` without waiting; False when another open file holds it."""
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:  # a filesystem without locks (some network mounts): nothing to coordinate with
        return True
    return True


def lock_for_append(fh: IO, path: str | Path) -> None:
    """Own ``path`` (open as ``fh``) until ``fh`` is closed, or raise :class:`InUseError` naming the owner."""
    if try_lock(fh):
        return
    pid = owner_of(fh)
    fh.close()
    who = f"process {pid}" if pid else "another process"
    raise InUseError(
        f"{path} is being written by {who} (another command appending to the same file); "
        "wait for it to finish, or write to another file"
    )
