"""Where outputs may be written, and how symbolic links are treated (one rule, in one place).

- A directory named on the command line (``--out DIR``, ``--resume DIR``) may be a symbolic link
  to a directory: it is followed, as ``cd`` would (``runs/latest`` pointing at a run works).
  A link that leads nowhere (or to a file) is refused with one sentence.
- A file named on the command line as an output (``cc report -o FILE``) is never written through
  a link: a link there is refused, so a link planted in a shared directory cannot redirect a write.
- Files inside a run directory (``forecasts.jsonl``, ``llm_calls.jsonl``, ``run.json``...) are never
  links: a run directory holding one is refused before anything is appended to it.
- Reading follows links everywhere.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import InputError


class OutputPathError(InputError):
    """An output path that cannot be written as asked; one sentence naming it."""


def _target(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def output_dir(path: str | Path) -> Path:
    """``path`` checked as an output directory (it may not exist yet): a link to a directory is followed
    and returned resolved; a dangling link, a link to a file, or a file is refused."""
    path = Path(path)
    if path.is_symlink():
        if not path.exists():
            raise OutputPathError(
                f"{path} is a symbolic link to {_target(path)}, which does not exist: "
                "create the directory it points to, or choose another output directory"
            )
        if not path.is_dir():
            raise OutputPathError(f"{path} is a symbolic link to a file ({_target(path)}), not a directory")
        return path.resolve()
    if path.exists() and not path.is_dir():
        raise OutputPathError(f"{path} is a file, not a directory; choose another output directory")
    return path


def output_file(path: str | Path) -> Path:
    """``path`` checked as an output file: refused when it is a symbolic link or a directory."""
    path = Path(path)
    if path.is_symlink():
        raise OutputPathError(
            f"{path} is a symbolic link (to {_target(path)}); outputs are never written through a link: "
            "remove the link or give the file it points to"
        )
    if path.is_dir():
        raise OutputPathError(f"{path} is a directory; give a file name")
    return path


def no_links_inside(directory: str | Path, names: tuple[str, ...] | None = None) -> None:
    """Refuse a directory whose own files (``names``, default all) include a symbolic link: appending to
    one would write wherever it points."""
    directory = Path(directory)
    try:
        entries = [directory / n for n in names] if names is not None else list(directory.iterdir())
    except OSError:
        return  # not there yet, or unreadable: the caller's own open says why
    for entry in entries:
        if entry.is_symlink():
            raise OutputPathError(
                f"{entry} is a symbolic link (to {_target(entry)}); a run directory's files are written in "
                "place and never through a link: replace the link with a copy of the file"
            )
