"""Where the project keeps per-user state (response cache, local-model files)."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path


def cache_root() -> Path:
    """``CC_CACHE_DIR`` if set, else the user's cache directory (``$XDG_CACHE_HOME`` or ``~/.cache``); not created."""
    explicit = os.environ.get("CC_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "consistency"


def cache_dir() -> Path:
    """:func:`cache_root`, created if missing (raises OSError when it cannot be)."""
    path = cache_root()
    path.mkdir(parents=True, exist_ok=True)
    return path


def new_run_dir(name: str, root: str | Path = "runs") -> Path:
    """``runs/<local time>_<name>``, made unique with a suffix; not created."""
    stamp = datetime.now().strftime("%Y-%m-%dT%H-%M-%S")
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in f"{stamp}_{name}")
    candidate, n = Path(root) / safe, 1
    while candidate.exists():
        n += 1
        candidate = Path(root) / f"{safe}_{n}"
    return candidate
