"""The cache directory of the local model, its small JSON records (verified hashes, server states) and locks."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...jsonl import atomic_write
from ...paths import cache_dir as _default_cache_dir
from .errors import LocalModelError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]


def local_cache_dir(explicit: Path | None = None) -> Path:
    if explicit is not None:
        explicit.mkdir(parents=True, exist_ok=True)
        return explicit
    return _default_cache_dir()


def load_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    with atomic_write(path) as fh:
        fh.write(json.dumps(data, indent=1, sort_keys=True))


@contextlib.contextmanager
def file_lock(path: Path, timeout: float, doing: str) -> Iterator[None]:
    """Exclusive flock on ``path`` (a no-op where fcntl is missing); ``doing`` names the work it guards."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    with open(path, "a+b") as fh:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise LocalModelError(
                        f"timed out after {timeout:.0f} s waiting for the lock {path} held by another process {doing}"
                    ) from None
                time.sleep(0.1)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
