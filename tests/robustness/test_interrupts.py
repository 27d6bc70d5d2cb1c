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
    from consistency.fake_openai import Fault, ScriptedServer, faults_then, probability_rule

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


# A process in the state of a shell's background job (SIGINT ignored) that installs what `cc` installs
# (SIGTERM as Ctrl-C) and what the LLM layer installs on meeting the bundled model (the local server's
# SIGTERM/SIGINT handlers, on the event loop's thread), then waits in the loop as a run waits for answers.
_BACKGROUND = """
import asyncio, sys
from consistency.cli.exits import install_sigterm
from consistency.llm.local import install_exit_handlers

install_sigterm()

async def main():
    install_exit_handlers()
    print("waiting", flush=True)
    await asyncio.sleep(60)

try:
    asyncio.run(main())
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(143)
print("slept through it", flush=True)
"""


def test_sigterm_stops_a_background_job_that_met_the_local_model():
    """bash starts background jobs with SIGINT ignored; the local server's handlers chained SIGTERM to
    that ignored SIGINT, so SIGTERM stopped the server and nothing else (the run went on to the end)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _BACKGROUND],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),  # as bash does for `cmd &`
    )
    assert proc.stdout is not None and proc.stdout.readline() == "waiting\n", proc.communicate()
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert (proc.returncode, out) == (143, "interrupted\n"), err
    assert time.monotonic() - start < 30  # not the 60 s the loop would have slept


@pytest.mark.local
def test_sigterm_stops_a_backgrounded_local_run_promptly_and_it_resumes(local_model, tmp_path):
    """The issue's `bash -c 'cc evaluate --forecaster local ... & kill -TERM $!'`: the run stops as
    `interrupted` with 143 while questions remain, instead of asking them all, and its resume finishes it."""
    env = os.environ | {"NO_COLOR": "1", "COLUMNS": "400"}
    env |= {"CC_CACHE_DIR": str(tmp_path / "cache"), "CC_LOCAL_MODEL": str(local_model)}
    run = f'"{CC}" evaluate --forecaster local --checks cond,condcond --limit 2 -o run --no-cache'
    proc = subprocess.Popen(
        ["bash", "-c", f"{run} & echo $!; wait $!"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    pid = int(proc.stdout.readline())
    journal = tmp_path / "run" / "forecasts.jsonl"
    deadline = time.monotonic() + 600
    while not (journal.is_file() and journal.read_text().count("\n") >= 1):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no forecast was journaled"
        time.sleep(0.1)
    os.kill(pid, signal.SIGTERM)
    start = time.monotonic()
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == ExitCode.TERMINATED, stderr
    assert time.monotonic() - start < 60, stderr
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    saved = journal.read_text().count("\n")
    answered = sum(json.loads(line)["forecast"] is not None for line in journal.read_text().splitlines())
    assert meta["status"] == "interrupted" and 1 <= saved < meta["questions"] == 14, stderr
    assert "stopped by SIGTERM: finished forecasts are saved in run; resume with: cc evaluate --resume run" in stderr
    done = subprocess.run([CC, "evaluate", "--resume", "run"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["status"] == "complete" and meta["sessions"][-1]["asked"] == 14 - answered  # nothing asked twice


def test_the_tests_children_take_ctrl_c_when_the_session_is_a_background_job():
    """A session started with SIGINT ignored (`pytest &`) still gives its children a terminal's Ctrl-C:
    without that, every test that sends SIGINT to a child timed out in a backgrounded run."""
    code = (
        "import signal, subprocess, sys\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})\n"
        "import conftest\n"
        "child = 'import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)'\n"
        "print(subprocess.run([sys.executable, '-c', child], capture_output=True, text=True).stdout.strip())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),  # as bash does for `pytest &`
    )  # fmt: skip
    assert (proc.returncode, proc.stdout) == (0, "True\n"), proc.stderr
