"""Errors writing a command's own files (a full disk, a quota, a file-size limit, a read-only or failing
disk): each stops the command the same way, with what was written kept and a one-sentence fix."""

from __future__ import annotations

import errno
from pathlib import Path

_FIX = {
    errno.ENOSPC: "free some space",
    errno.EDQUOT: "free some space (disk quota exceeded)",
    errno.EFBIG: "raise the file-size limit (ulimit -f) or write elsewhere",
    errno.EROFS: "write to a writable location",
    errno.EIO: "check the disk",
    errno.EACCES: "make it writable",
    errno.EPERM: "make it writable",
}


def fix_for(exc: OSError) -> str:
    """What the user can do about ``exc`` (a few words)."""
    return _FIX.get(exc.errno or 0, "fix the cause")


def cannot_write(exc: OSError) -> str:
    """One sentence: which file, why, and what to do."""
    where = f"{exc.filename}: " if exc.filename else ""
    return f"cannot write {where}{exc.strerror or exc}; {fix_for(exc)}"


def cannot_read(exc: OSError) -> str:
    """One sentence for a file that cannot be opened (a broken or looping symbolic link, no permission...)."""
    name = exc.filename
    link = ""
    if name is not None:
        path = Path(name)
        if path.is_symlink() and not path.is_file():
            link = " (a symbolic link that leads to no file: its target is missing, or a loop)"
    where = f"{name}: " if name is not None else ""
    return f"cannot read {where}{exc.strerror or exc}{link}"


def sentence_for(exc: OSError) -> str:
    """One sentence for a file a command cannot use: which, why, and (when writing) the fix."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS):
        return cannot_write(exc)
    return cannot_read(exc)
