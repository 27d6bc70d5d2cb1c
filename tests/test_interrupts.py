"""Ctrl-C (SIGINT) and SIGTERM stop `cc evaluate` the same way: what finished is saved, run.json says
`interrupted`, the message names the real run directory to resume, and the exit code is 130 or 143."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from consistency.cli.exits import ExitCode

CC = Path(sys.executable).parent / "cc"
SLOW = """
import asyncio
from consistency import Forecaster, Forecast

class Slow(Forecaster):
    async def forecast(self, question):
        await asyncio.sleep(0.2)
        return Forecast(prob=0.4)
"""


@pytest.mark.parametrize(
    ("sig", "code", "word"),
    [(signal.SIGINT, ExitCode.INTERRUPTED, "interrupted"), (signal.SIGTERM, ExitCode.TERMINATED, "stopped by SIGTERM")],
    ids=["SIGINT", "SIGTERM"],
)
def test_a_signal_saves_the_run_and_names_its_directory(tmp_path, sig, code, word):
    (tmp_path / "slow.py").write_text(SLOW)
    env = os.environ | {"NO_COLOR": "1", "COLUMNS": "400"}
    argv = [str(CC), "evaluate", "-f", "slow.py::Slow", "--concurrency", "1", "-o", "run"]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    journal = tmp_path / "run" / "forecasts.jsonl"
    deadline = time.monotonic() + 120
    while not (journal.is_file() and journal.read_text().count("\n") >= 2):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no forecast was journaled"
        time.sleep(0.05)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == code, stderr
    assert f"{word}: finished forecasts are saved in run; resume with: cc evaluate --resume run" in stderr
    assert "<run dir>" not in stderr and "Traceback" not in stderr
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["status"] == "interrupted"
    assert meta["sessions"][-1]["status"] == "interrupted"
    saved = [json.loads(line) for line in journal.read_text().splitlines()]
    assert len(saved) >= 2 and all(r["forecast"]["prob"] == 0.4 for r in saved)


def test_sigterm_stops_a_model_calling_command_with_its_own_code(tmp_path):
    from consistency.testing import Fault, ScriptedServer, faults_then, probability_rule

    env = os.environ | {"NO_COLOR": "1", "COLUMNS": "400", "CC_CACHE_DIR": str(tmp_path / "cache")}
    with ScriptedServer(faults_then(probability_rule(), Fault.hang(60))) as srv:
        argv = [str(CC), "ask", "Will it rain in 2030?", "-m", srv.model_spec(), "--max-attempts", "1"]
        proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while not srv.requests:  # the question is being asked (the server holds it)
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the request never arrived"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == ExitCode.TERMINATED, stderr
    assert "stopped by SIGTERM" in stderr and "Traceback" not in stderr
