"""Runs that cannot succeed stop early with one sentence; exit codes; totals that survive resumes and kills.

Every run here is the real ``cc evaluate`` in a subprocess over real HTTP against the scripted server.
"How fast" is asserted as how few requests the server saw before the run stopped (deterministic),
not as a time.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from consistency.cli import app
from consistency.evaluation import evaluate
from consistency.fake_openai import Fault, ScriptedServer, probability_rule
from consistency.llm.fatal import FatalError

TIMEOUT = 120
CONNECTIONS = 4  # requests in flight at once: the most a stopped run can have sent after the first error


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))
    for variable in ("OPENAI_API_KEY", "CC_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(tmp_path)


@dataclass
class Ran:
    returncode: int
    stderr: str


def cc(*args: str | Path, process: bool = False) -> Ran:
    """The real CLI: in this process (fast), or as the ``python -m consistency`` process itself."""
    if process:
        cmd = [sys.executable, "-m", "consistency", *map(str, args)]
        env = os.environ | {"COLUMNS": "400"}  # one message, one line
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=env, check=False)
        return Ran(done.returncode, done.stderr)
    result = CliRunner().invoke(app, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Ran(result.exit_code, result.stderr)


def evaluate_cmd(spec: str, out: Path, *extra: str, process: bool = False) -> Ran:
    fast = ("--max-connections", str(CONNECTIONS), "--timeout", "5")
    return cc("evaluate", "-f", spec, "-c", "neg,and", "-n", "6", "-o", out, *fast, *extra, process=process)


def run_json(run: Path) -> dict:
    return json.loads((run / "run.json").read_text())


def assert_stopped(proc: Ran, run: Path, sentence: str) -> dict:
    """Exit 1, the sentence printed once (and no per-question noise), run.json ``failed`` with the reason."""
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count(sentence) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"cc evaluate --resume {run}" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) <= 6, proc.stderr
    meta = run_json(run)
    assert meta["status"] == "failed" and sentence in meta["failure"]
    assert meta["sessions"][-1]["status"] == "failed"
    return meta


def resume_completes(run: Path, process: bool = False) -> dict:
    done = cc("evaluate", "--resume", run, process=process)
    assert done.returncode == 0, done.stderr
    meta = run_json(run)
    assert meta["status"] == "complete" and meta["failure"] is None
    return meta


def test_a_wrong_key_stops_the_run_at_once_and_it_resumes_once_fixed(tmp_path, monkeypatch):
    secret = "sk-proj-WRONGkey0123456789abcdef"
    monkeypatch.setenv("CC_API_KEY", secret)
    refused = Fault.error(401, f"Incorrect API key provided: {secret}.", "invalid_api_key")  # as OpenAI echoes it
    with ScriptedServer(lambda request: refused) as srv:
        proc = evaluate_cmd(srv.model_spec(), tmp_path / "run", process=True)  # the process's own exit code
        assert srv.count <= CONNECTIONS  # nothing asked after the first answers came back
        srv.rule = probability_rule()
        host = f"127.0.0.1:{srv.port}"
        assert_stopped(proc, tmp_path / "run", f"{host} refused the API key with HTTP 401")
        assert "check CC_API_KEY" in proc.stderr
        assert secret not in proc.stderr
        assert not [f.name for f in (tmp_path / "run").iterdir() if secret in f.read_text()]
        meta = resume_completes(tmp_path / "run")
    assert [s["status"] for s in meta["sessions"]] == ["failed", "complete"]


def test_an_unknown_model_stops_the_run(tmp_path):
    def rule(request):
        if request.model != "scripted":
            return Fault.error(404, f"The model `{request.model}` does not exist.", "model_not_found")
        return probability_rule()(request)

    with ScriptedServer(rule) as srv:
        proc = evaluate_cmd(srv.model_spec("gpt-9-turbo"), tmp_path / "run")
        assert srv.count <= CONNECTIONS
    assert_stopped(proc, tmp_path / "run", f"127.0.0.1:{srv.port} has no model 'gpt-9-turbo' (HTTP 404")
    assert "check the model name" in proc.stderr


def test_a_request_parameter_the_server_rejects_stops_the_run(tmp_path):
    def rule(request):
        if "top_logprobs" in request.body:
            return Fault.error(400, "Unrecognized request argument supplied: top_logprobs", "invalid_parameter")
        return probability_rule()(request)

    with ScriptedServer(rule) as srv:
        proc = evaluate_cmd(srv.model_spec(), tmp_path / "run", "-F", "top_logprobs=2")
        assert srv.count <= 3 + CONNECTIONS  # three identical rejections stop it
    assert_stopped(proc, tmp_path / "run", "rejected the request with HTTP 400")
    assert "Unrecognized request argument supplied: top_logprobs" in proc.stderr


def test_a_request_parameter_the_client_does_not_take_is_refused_before_the_run(tmp_path):
    with ScriptedServer() as srv:
        proc = evaluate_cmd(srv.model_spec(), tmp_path / "run", "-F", "api_key=sk-secret-1234567890")
        typo = evaluate_cmd(srv.model_spec(), tmp_path / "run2", "-F", "temprature=0.2")
        assert srv.count == 0
    assert proc.returncode == 2 and "BasicForecaster has no option 'api_key'" in proc.stderr
    assert "environment or .env" in proc.stderr and "sk-secret" not in proc.stderr
    assert typo.returncode == 2 and "did you mean 'temperature'?" in typo.stderr
    assert proc.stderr.count("error") == 1 and "Traceback" not in proc.stderr
    assert not (tmp_path / "run").exists()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_endpoint_that_refuses_connections_stops_the_run(tmp_path):
    port = _closed_port()
    spec = f"http://127.0.0.1:{port}/v1::scripted"
    proc = evaluate_cmd(spec, tmp_path / "run")
    meta = assert_stopped(proc, tmp_path / "run", f"cannot connect to 127.0.0.1:{port} (ConnectError")
    assert "check that the server is running" in proc.stderr
    assert meta["totals"]["calls"] <= 3 + CONNECTIONS  # not 6 attempts for each of the questions
    with ScriptedServer(port=port) as srv:  # the server comes up on that port: the run finishes
        resume_completes(tmp_path / "run")
        assert srv.count == run_json(tmp_path / "run")["questions"]


BROKEN = """
from consistency import Forecaster

class Broken(Forecaster):
    async def forecast(self, question):
        raise RuntimeError("no data source configured")
"""

FIXED = """
from consistency import Forecast, Forecaster

class Broken(Forecaster):
    async def forecast(self, question):
        return Forecast(prob=0.25)
"""


def test_a_forecaster_that_always_raises_stops_the_run(tmp_path):
    source = tmp_path / "broken.py"
    source.write_text(BROKEN)
    proc = evaluate_cmd(f"{source}::Broken", tmp_path / "run", "--concurrency", "4")
    sentence = "forecaster Broken raised the same error on each of the first 3 questions"
    meta = assert_stopped(proc, tmp_path / "run", sentence)
    assert "RuntimeError: no data source configured" in proc.stderr
    journal = (tmp_path / "run" / "forecasts.jsonl").read_text().splitlines()
    assert 3 <= len(journal) <= 3 + 4 < meta["questions"]  # those in flight at most, not every question
    source.write_text(FIXED)  # a new process imports the fixed file
    resume_completes(tmp_path / "run", process=True)


def test_the_library_raises_the_fatal_error_with_the_run_directory(tmp_path):
    with ScriptedServer(lambda request: Fault.error(401, "bad key")) as srv, pytest.raises(FatalError) as stopped:
        evaluate(srv.model_spec(), checks=["neg"], limit=3, out=tmp_path / "run")
    assert stopped.value.run_dir == tmp_path / "run"
    assert "HTTP 401" in str(stopped.value) and run_json(tmp_path / "run")["status"] == "failed"


def test_ten_percent_transient_faults_still_complete_with_exit_0(tmp_path):
    transient = {3: Fault.server_error(503), 9: Fault.rate_limit(0.01), 14: Fault.drop(), 18: Fault.server_error(500)}
    base = probability_rule()

    def rule(request):  # 4 requests in 40 fail, each in a way a retry gets past
        return transient.get(request.index % 40) or base(request)

    with ScriptedServer(rule) as srv:
        proc = evaluate_cmd(srv.model_spec(), tmp_path / "run")
        served = srv.count
    assert proc.returncode == 0, proc.stderr
    meta = run_json(tmp_path / "run")
    assert meta["status"] == "complete" and meta["totals"]["retries"] > 0
    assert meta["totals"]["calls"] == served
    assert "0 failed" in proc.stderr


FLAKY = """
import hashlib
from consistency import Forecast, Forecaster

class Flaky(Forecaster):
    async def forecast(self, question):
        if hashlib.sha256(question.title.encode()).digest()[0] % 4 == 0:
            raise ValueError(f"no data for {question.id}")
        return Forecast(prob=0.5)
"""


def test_fail_on_error_sets_the_exit_code_a_few_failures_do_not(tmp_path):
    source = tmp_path / "flaky.py"
    source.write_text(FLAKY)
    tolerant = evaluate_cmd(f"{source}::Flaky", tmp_path / "a")
    assert tolerant.returncode == 0, tolerant.stderr
    failed = json.loads((tmp_path / "a" / "summary.json").read_text())["questions"]["failed"]
    total = run_json(tmp_path / "a")["questions"]
    assert 0 < failed < total
    assert f"retry what is missing with: cc evaluate --resume {tmp_path / 'a'}" in tolerant.stderr
    strict = evaluate_cmd(f"{source}::Flaky", tmp_path / "b", "--fail-on-error", "0.01")
    assert strict.returncode == 1 and "exceed --fail-on-error 0.01" in strict.stderr
    by_count = evaluate_cmd(f"{source}::Flaky", tmp_path / "c", "--fail-on-error", str(failed))
    assert by_count.returncode == 0, by_count.stderr  # exactly the limit is not more than it
    assert run_json(tmp_path / "b")["status"] == "complete"  # the run itself finished


def test_a_run_where_every_question_failed_exits_1(tmp_path):
    source = tmp_path / "hopeless.py"
    source.write_text(FLAKY.replace("% 4 == 0", "% 1 == 0"))  # a different error for each question
    proc = evaluate_cmd(f"{source}::Flaky", tmp_path / "run")
    assert proc.returncode == 1 and "no question got a forecast" in proc.stderr
    assert run_json(tmp_path / "run")["status"] == "failed"  # not stopped early (the errors all differ), no forecast


# --- totals across sessions, including two SIGKILLs -------------------------------------------


def _wait_until(predicate, seconds: float = 60.0) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.01)
    raise AssertionError("timed out waiting")


def test_totals_survive_two_sigkills_and_match_the_transcript_and_the_server(tmp_path):
    """Requests number 5 and 13 hang, so each kill lands while exactly one request is in flight:
    the server received it but never answered, and the killed client never learnt of it."""
    held = {5, 13}
    base = probability_rule()

    def rule(request):
        return Fault.hang(60) if request.index in held else base(request)

    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "consistency", "evaluate", "-c", "neg,and", "-n", "4", "--concurrency", "1"]
    with ScriptedServer(rule) as srv:
        for kill_at in sorted(held):
            args = ["-f", srv.model_spec(), "-o", str(run)] if not run.exists() else ["--resume", str(run)]
            proc = subprocess.Popen([*cmd, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _wait_until(lambda kill_at=kill_at: srv.count > kill_at)
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        done = cc("evaluate", "--resume", run, process=True)
        assert done.returncode == 0, done.stderr
        answered = srv.count - len(held)
    meta = run_json(run)
    transcript = (run / "llm_calls.jsonl").read_text().splitlines()
    assert meta["status"] == "complete"
    assert meta["totals"]["calls"] == len(transcript) == answered
    assert meta["totals"]["cache_hits"] == 0
    prompt = sum(json.loads(line)["usage"]["prompt_tokens"] for line in transcript)
    assert meta["totals"]["prompt_tokens"] == prompt > 0
    sessions = meta["sessions"]
    assert [s["status"] for s in sessions] == ["killed", "killed", "complete"]
    assert [s["action"] for s in sessions] == ["start", "resume", "resume"]
    assert [s["totals"]["calls"] for s in sessions] == [5, 7, answered - 12]
    assert all(s["host"] and s["version"] and s["started"] and s["ended"] for s in sessions)
    assert f"{answered} model calls" in done.stderr
    assert f"over 3 sessions (this one: {answered - 12} calls" in done.stderr


# --- the other commands that call models ------------------------------------------------------

QUESTIONS = Path(__file__).resolve().parents[2] / "consistency" / "datasets" / "benchmark" / "questions.jsonl"


def refusing_server() -> ScriptedServer:
    return ScriptedServer(lambda request: Fault.error(401, "Incorrect API key provided.", "invalid_api_key"))


def test_a_ground_truth_run_stops_the_same_way(tmp_path):
    with refusing_server() as srv:
        proc = evaluate_cmd(srv.model_spec(), tmp_path / "gt", "-q", QUESTIONS)
        assert srv.count <= CONNECTIONS
    meta = assert_stopped(proc, tmp_path / "gt", "refused the API key with HTTP 401")
    assert meta["kind"] == "ground_truth"


def test_ask_generate_and_questions_stop_with_one_sentence(tmp_path):
    sentence = "refused the API key with HTTP 401 (Incorrect API key provided.); check CC_API_KEY"
    with refusing_server() as srv:
        model = ("--model", srv.model_spec(), "--max-connections", str(CONNECTIONS))
        asked = cc("ask", "Will it rain in Paris on 1 May 2030?", *model)
        assert asked.returncode == 1 and asked.stderr.count(sentence) == 1, asked.stderr
        assert srv.count == 1
        srv.reset()
        out = tmp_path / "tuples"
        made = cc("generate", "-c", "neg", "-q", QUESTIONS, "-o", out, "--instantiator", "llm", "-n", "5", *model)
        assert made.returncode == 1 and made.stderr.count(sentence) == 1, made.stderr
        assert "Traceback" not in made.stderr and srv.count <= CONNECTIONS
        assert "never retrieved" not in made.stderr  # the calls still in flight are collected, not left to warn
        rejects = list(out.rglob("*rejects*"))
        assert all(not p.read_text().strip() for p in rejects if p.is_file())  # nothing marked as tried
        srv.reset()
        filled = tmp_path / "filled.jsonl"
        titles = tmp_path / "titles.txt"
        titles.write_text("Will a Mars sample return mission launch before 2031?\nWill Brent crude trade above $150?\n")
        window = ("--created", "2024-10-01", "--resolve-by", "2031-01-01")
        fill = cc("questions", "fill", "--titles", titles, "--out", filled, *window, *model)
        assert fill.returncode == 1 and fill.stderr.count(sentence) == 1, fill.stderr
        assert "run the same command again" in fill.stderr
        assert srv.count <= 2


def test_a_parameter_the_client_rejects_stops_the_llm_layer_after_three_calls():
    """A forecaster of one's own passing a bad keyword straight to the LLM layer (no -F check on the way)."""
    from pydantic import BaseModel

    from consistency.llm import LLM, LLMSettings

    class Answer(BaseModel):
        prob: float

    async def go(spec: str) -> list[str]:
        errors = []
        async with LLM(LLMSettings(cache=False, max_backoff=0.01)) as llm:
            for i in range(5):
                result = await llm.structured(spec, [{"role": "user", "content": f"q{i}"}], Answer, api_key="x")
                errors.append(result.error)
        return errors

    with ScriptedServer() as srv:
        with pytest.raises(FatalError) as stopped:
            asyncio.run(go(srv.model_spec()))
        assert srv.count == 0  # refused by the client itself, before any request
    assert str(stopped.value) == (
        f"cannot call 127.0.0.1:{srv.port}: the client does not take the request parameter 'api_key'; "
        "remove -F api_key."
    )


def test_the_host_named_in_errors_never_holds_credentials():
    import instructor

    from consistency.llm.fatal import host_of
    from consistency.llm.specs import ModelSpec

    def spec(base_url: str) -> ModelSpec:
        return ModelSpec("s", "custom", "m", base_url, None, instructor.Mode.TOOLS)

    assert host_of(spec("https://user:s3cret@api.example.org:8443/v1")) == "api.example.org:8443"
    assert host_of(spec("user:s3cret@gpu-box:8000/v1")) == "gpu-box:8000"  # written without a scheme
    assert host_of(spec("localhost:8000/v1")) == "localhost:8000"
