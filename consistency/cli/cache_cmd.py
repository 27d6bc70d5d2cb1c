"""``cc cache stats`` and ``cc cache clear``: the persistent response cache."""

from __future__ import annotations

import sqlite3

import typer

from ..errors import InputError
from ..llm import ResponseCache
from .console import escape, out

app = typer.Typer(help="The response cache (SQLite, under CC_CACHE_DIR).", no_args_is_help=True)


@app.command("stats")
def stats() -> None:
    """Entries, size on disk, and the hits and misses of the last run."""
    cache = _open()
    s = cache.stats()
    cache.close()
    out.print(f"cache: {escape(s.path)}")
    out.print(f"entries: {s.entries}")
    out.print(f"size: {s.size_bytes / 1e6:.2f} MB")
    if s.last_run:
        out.print(
            f"last run: {s.last_run['hits']} hits, {s.last_run['misses']} misses (finished {s.last_run['finished']})"
        )
    else:
        out.print("last run: none recorded")


@app.command("clear")
def clear() -> None:
    """Delete every cached response."""
    cache = _open()
    n = cache.clear()
    cache.close()
    out.print(f"removed {n} cached responses from {escape(str(cache.path))}")


def _open() -> ResponseCache:
    """The cache (a damaged file is set aside by the cache itself); one sentence if it cannot be opened."""
    try:
        return ResponseCache()
    except (sqlite3.Error, OSError) as exc:
        from ..paths import cache_dir

        raise InputError(f"cannot open the response cache {cache_dir() / ResponseCache.FILENAME}: {exc}") from None
