"""A run directory on disk: ``run.json`` and the forecast journal that makes runs resumable.

``forecasts.jsonl`` is an :class:`~consistency.jsonl.AppendLog`: appended (and flushed) as each
forecast finishes, so a crash or Ctrl-C loses at most the forecasts in flight, and a torn last
line (a kill mid-write) is cut off on resume.
When a run completes, the journal is rewritten in question order, so a resumed run and an
uninterrupted one leave the same file.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import subprocess
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import InputError
from ..jsonl import AppendLog, atomic_write, dump_line, write_json
from ..store.layout import JOURNAL, LOCK_FILE, RUN_FILE, TRANSCRIPT
from ..store.meta import RunMeta, read_run_meta, run_meta_of
from ..store.outputs import no_links_inside, output_dir

__all__ = ["JOURNAL", "LOCK_FILE", "RUN_FILE", "TRANSCRIPT", "RunDir", "RunDirError", "git_commit", "now"]


class RunDirError(InputError):
    """A directory that cannot be used as (or is not) a run directory; ``str()`` says why in one sentence."""


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def git_commit() -> str | None:
    """The commit of the checkout the package runs from, when it is one."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


class RunDir:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._log: AppendLog | None = None
        self._lock: Any = None  # the open lock file while we own the run

    # ----------------------------------------------------------------- ownership
    def acquire(self) -> None:
        """Own the run directory until :meth:`release` (or this process ends, even by kill -9).

        A second process (a second ``--resume`` of the same run) gets a :class:`RunDirError`
        naming the owner instead of asking every missing question a second time.
        """
        if self._lock is not None:
            return
        output_dir(self.path)  # a link to a directory is followed; one leading nowhere is refused
        self.path.mkdir(parents=True, exist_ok=True)
        no_links_inside(self.path)  # the journal, transcript and record are appended to in place
        fh = (self.path / LOCK_FILE).open("a+", encoding="utf-8")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            try:
                owner = json.loads(fh.read() or "{}")
            except json.JSONDecodeError:
                owner = {}
            fh.close()
            raise RunDirError(
                f"{self.path} is in use by process {owner.get('pid', '?')} on {owner.get('host', '?')} "
                f"(since {owner.get('since', '?')}); wait for it to finish or stop it first"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": now()}) + "\n")
        fh.flush()
        self._lock = fh

    def release(self) -> None:
        if self._lock is not None:
            self._lock.close()  # closing the file drops the flock
            self._lock = None

    # ----------------------------------------------------------------- run.json
    @property
    def run_file(self) -> Path:
        return self.path / RUN_FILE

    def create(self, **fields: Any) -> None:
        """Own the (new, empty) directory and write its first ``run.json``: ``fields`` after the version,
        commit, status and start time, each checked by :class:`~consistency.store.meta.RunMeta`."""
        self.acquire()
        if self.run_file.exists():
            self.release()
            raise RunDirError(self._taken())
        if any(p.name != LOCK_FILE for p in self.path.iterdir()):
            self.release()
            raise RunDirError(f"{self.path} exists and is not empty; choose another --out")
        first = {"consistency_version": __version__, "git_commit": git_commit(), "status": "running", "started": now()}
        write_json(self.run_file, _record({}, first | fields))

    def _taken(self) -> str:
        """Why a new run cannot go into this directory, and what to do instead: a complete run is done (its
        results can be scored again or drawn), any other is finished with ``--resume``."""
        try:
            meta = self.meta()
        except RunDirError:
            meta = RunMeta()
        p = self.path
        if meta.status != "complete":
            return f"{p} already holds a run ({meta.status or 'unreadable'}); finish it with --resume {p}"
        failed = meta.failed_questions or 0
        retry = f"; ask its {failed} failed question(s) again with cc evaluate --resume {p}" if failed else ""
        again = "" if meta.kind == "ground_truth" else f"score it again with cc score {p}, "
        return (
            f"{p} already holds a complete run (ended {meta.ended or '?'}){retry}; {again}draw it with "
            f"cc report {p}, or give another --out for a new run"
        )

    def meta(self) -> RunMeta:
        """``run.json``, checked by :func:`~consistency.store.meta.read_run_meta` (a damaged record is a
        :class:`~consistency.store.meta.RunMetaError` naming the field)."""
        return read_run_meta(self.path)

    def update(self, **changes: Any) -> RunMeta:
        """Write ``changes`` (fields of :class:`~consistency.store.meta.RunMeta`, typed or plain, checked
        before anything is written) into ``run.json``; returns the record as written."""
        data = _record(self.meta().to_dict(), changes)
        write_json(self.run_file, data)
        return run_meta_of(data, self.run_file)

    # ----------------------------------------------------------------- journal
    @property
    def journal(self) -> Path:
        return self.path / JOURNAL

    def open_journal(self) -> dict[str, dict[str, Any]]:
        """Open the journal for appending; the latest record per key (a torn last line is cut off)."""
        self.close()
        self._log = AppendLog(self.journal)
        records: dict[str, dict[str, Any]] = {}
        for number, obj in enumerate(self._log.existing, start=1):
            if "key" not in obj:
                raise RunDirError(f"{self.journal}:{number}: not a forecast record; the run directory is damaged")
            records[obj["key"]] = obj
        return records

    def append(self, record: dict[str, Any]) -> None:
        if self._log is None:
            raise RunDirError("open_journal() first")
        self._log.append(record)

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def rewrite_journal(self, records: Iterable[dict[str, Any]]) -> None:
        self.close()
        with atomic_write(self.journal) as fh:
            for record in records:
                fh.write(dump_line(record))


def _record(recorded: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """``recorded`` with ``changes`` checked as :class:`~consistency.store.meta.RunMeta` fields and laid over it:
    existing keys keep their place, new ones follow in the order given (so the file reads as it always has)."""
    checked = run_meta_of(changes).to_dict()
    return recorded | {key: checked[key] for key in changes}
