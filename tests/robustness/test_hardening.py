"""Findings of the bad-input and fault audit (issue 18), one section per finding: a corrupt cache,
concurrent resumes, keys in URLs, one-sentence errors, reported skipped input, file modes,
per-call accounting, JSON error wording; and the fault-injection wrapper the audit needed."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import socket
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel, Field
from typer.testing import CliRunner

from consistency.cli import app
from consistency.evaluation import RunDir, RunDirError, RunOptions, evaluate
from consistency.fake_openai import Fault, Reply, ScriptedServer, faults_then, probability_rule, random_faults
from consistency.jsonl import AppendLog, iter_json_lines, write_json
from consistency.llm import LLM, LLMSettings, ResponseCache

FAST = LLMSettings(timeout=5, max_backoff=0.05, max_connections=16)
runner = CliRunner()


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CC_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)


class Answer(BaseModel):
    reasoning: str
    prob: float = Field(ge=0.0, le=1.0)


def lines(path: Path) -> list[dict]:
    return [obj for _, obj in iter_json_lines(path)]


def ask(spec: str, n: int, settings: LLMSettings, transcript: Path | None = None):
    async def go():
        async with LLM(settings, transcript=transcript) as llm:
            questions = [[{"role": "user", "content": f"Will event {i} happen before 2030?"}] for i in range(n)]
            results = await asyncio.gather(*(llm.structured(spec, q, Answer) for q in questions))
            return results, llm.stats

    return asyncio.run(go())


# ------------------------------------------------------------------ 1. a corrupt cache is set aside


def _real_cache(path: Path) -> None:
    cache = ResponseCache(path)
    for i in range(400):
        cache.put(f"key{i}", "m", {"value": "x" * 500, "raw": None, "usage": {}})
    cache.close()


@pytest.mark.parametrize("damage", ["random", "zeros", "truncated"])
def test_a_corrupt_cache_is_moved_aside_and_replaced(tmp_path, damage, caplog):
    path = tmp_path / "cache" / "responses.sqlite"
    path.parent.mkdir(parents=True)
    if damage == "random":
        path.write_bytes(os.urandom(300_000))
    elif damage == "zeros":
        path.write_bytes(bytes(300_000))
    else:
        _real_cache(path)
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    with ScriptedServer(probability_rule()) as srv:
        results, _ = ask(srv.model_spec(), 3, FAST)
        _, stats2 = ask(srv.model_spec(), 3, FAST)
    assert all(r.ok for r in results) and stats2.cache_hits == 3  # the fresh cache works
    aside = list(path.parent.glob("responses.sqlite.corrupt-*"))
    if damage != "zeros":  # SQLite takes an all-zero file for an empty database: nothing to set aside
        assert len(aside) == 1
        warnings = [r.getMessage() for r in caplog.records if "moved it to" in r.getMessage()]
        assert len(warnings) == 1 and str(path) in warnings[0]
    for command in (["cache", "stats"], ["cache", "clear"]):
        for side in path.parent.glob("responses.sqlite-*"):
            side.unlink()
        path.write_bytes(os.urandom(4096))
        done = runner.invoke(app, command)
        assert done.exit_code == 0, done.output
    assert "removed 0 cached responses" in done.output


def test_a_locked_cache_is_waited_for(tmp_path):
    path = tmp_path / "cache" / "responses.sqlite"
    ResponseCache(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    cache = ResponseCache(path)

    async def write():  # blocks on the lock until the holder commits half a second later
        asyncio.get_running_loop().call_later(0.5, lambda: holder.execute("COMMIT"))
        await asyncio.to_thread(cache.put, "k", "m", {"value": 1})

    asyncio.run(write())
    assert cache.get("k") == {"value": 1}
    cache.close()
    holder.close()


def test_answers_stored_in_a_loop_are_written_at_its_next_turn_in_one_transaction(tmp_path):
    path = tmp_path / "cache" / "responses.sqlite"
    cache, other = ResponseCache(path), ResponseCache(path)  # ``other``: as another process sees the file

    statements: list[str] = []
    cache._connect().set_trace_callback(statements.append)

    async def store() -> tuple[bool, bool, int]:
        before = cache._connect().total_changes
        for i in range(500):
            cache.put(f"k{i}", "m", {"value": i})
        seen_here, seen_elsewhere = cache.get("k499") == {"value": 499}, other.get("k499") is not None
        await asyncio.sleep(0)  # the loop's next turn
        return seen_here, seen_elsewhere, cache._connect().total_changes - before

    seen_here, seen_elsewhere_before, changes = asyncio.run(store())
    assert seen_here and not seen_elsewhere_before and changes == 500
    assert [x for x in statements if x.startswith(("BEGIN", "COMMIT"))] == ["BEGIN IMMEDIATE", "COMMIT"]
    assert other.get("k0") == {"value": 0} and other.get("k499") == {"value": 499}
    cache.put("sync", "m", {"value": "x"})  # outside a loop: written at once
    assert other.get("sync") == {"value": "x"}
    cache.close()
    other.close()


def test_a_cache_that_cannot_be_opened_costs_calls_not_the_run(tmp_path, caplog):
    path = tmp_path / "cache" / "responses.sqlite"
    path.mkdir(parents=True)  # not even a file
    with ScriptedServer(probability_rule()) as srv:
        results, stats = ask(srv.model_spec(), 2, FAST)
    assert all(r.ok for r in results) and stats.calls == 2
    assert any("running without it" in r.getMessage() and str(path) in r.getMessage() for r in caplog.records)
    done = runner.invoke(app, ["cache", "stats"])
    assert done.exit_code == 2 and str(path) in " ".join(done.output.split())


# ------------------------------------------------------------------ 2. one process owns a run directory


def test_a_second_process_cannot_take_a_run_directory_in_use(tmp_path):
    run = RunDir(tmp_path / "run")
    run.create(kind="consistency")
    code = (
        "import sys\nfrom consistency.evaluation import RunDir, RunDirError\n"
        "try:\n    RunDir(sys.argv[1]).acquire()\nexcept RunDirError as exc:\n    print(exc); sys.exit(3)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(run.path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    assert f"process {os.getpid()} on {socket.gethostname()}" in done.stdout and "since 20" in done.stdout
    with pytest.raises(RunDirError, match="in use by process"):
        RunDir(run.path).create(kind="consistency")  # --out on a directory in use
    run.release()
    done = subprocess.run([sys.executable, "-c", code, str(run.path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_killed_owner_releases_the_run_directory(tmp_path):
    path = tmp_path / "run"
    code = (
        "import sys, time\nfrom consistency.evaluation import RunDir\n"
        "run = RunDir(sys.argv[1]); run.acquire(); print('held', flush=True); time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(RunDirError, match=f"in use by process {proc.pid}"):
            RunDir(path).acquire()
    finally:
        proc.kill()  # SIGKILL: no cleanup code runs
        proc.wait()
    RunDir(path).acquire()


def test_cli_resume_of_a_run_in_use_exits_non_zero_naming_the_owner(tmp_path):
    with ScriptedServer(probability_rule()) as srv:
        result = evaluate(srv.model_spec(), limit=1, out=tmp_path / "run", options=RunOptions(llm=FAST))
    holder = RunDir(result.run_dir)
    holder.acquire()
    try:
        done = runner.invoke(app, ["evaluate", "--resume", str(result.run_dir)])
    finally:
        holder.release()
    assert done.exit_code != 0
    assert f"in use by process {os.getpid()}" in done.output


# ------------------------------------------------------------------ 3. keys in URLs never reach a file or log

KEY = "sk-urlkey-TOPSECRET0123456789"
PLAIN = "hunter2correcthorsebattery"  # a key that looks like no known key format


def _everything_written(root: Path) -> str:
    texts = []
    for p in root.rglob("*"):
        if p.is_file():
            texts.append(p.read_bytes().decode("utf-8", "replace"))
    return "\n".join(texts)


@pytest.mark.parametrize("way", ["env", "dotenv", "option", "userinfo", "query"])
def test_a_key_given_any_way_is_in_no_file_log_or_message(tmp_path, way, monkeypatch):
    secret = PLAIN if way in ("userinfo", "query") else KEY
    with ScriptedServer(probability_rule()) as srv:
        spec = srv.model_spec()
        extra: list[str] = []
        if way == "env":
            monkeypatch.setenv("CC_API_KEY", KEY)
        elif way == "dotenv":
            (tmp_path / ".env").write_text(f"CC_API_KEY={KEY}\n")
        elif way == "option":
            extra = ["-F", f"user={KEY}"]
        elif way == "userinfo":
            spec = f"http://me:{PLAIN}@127.0.0.1:{srv.port}/v1::scripted"
        else:
            spec = f"http://127.0.0.1:{srv.port}/v1?api_key={PLAIN}::scripted"
        args = ["-V", "evaluate", "-f", spec, "-n", "1", "-c", "neg", "-o", str(tmp_path / "run"), *extra]
        done = subprocess.run(
            [sys.executable, "-m", "consistency", *args], capture_output=True, text=True, timeout=120, env=os.environ
        )
        assert done.returncode == 0, done.stderr
        assert len(srv.requests) == 2
        bad = runner.invoke(app, ["evaluate", "-f", spec.replace("::scripted", "::scripted?mode=nope"), "-n", "1"])
    assert bad.exit_code != 0 and "unknown option" in bad.output
    if way == "env":
        monkeypatch.delenv("CC_API_KEY")  # so that redaction by value cannot hide a leak
    written = _everything_written(tmp_path / "run") + _everything_written(tmp_path / "cache")
    for text in (written, done.stdout, done.stderr, bad.output):
        assert secret not in text
    assert "HTTP Request: POST" in done.stderr  # -V logged the requests (scrubbed)
    with sqlite3.connect(tmp_path / "cache" / "responses.sqlite") as db:
        models = [m for (m,) in db.execute("SELECT model FROM responses")]
    assert models and all(secret not in m for m in models)


def test_distinct_keys_in_urls_get_distinct_cache_entries():
    from consistency.llm import parse_model_spec

    a = parse_model_spec("http://u:one-secret@127.0.0.1:1/v1::m").identity()
    b = parse_model_spec("http://u:two-secret@127.0.0.1:1/v1::m").identity()
    assert a != b and "secret" not in a + b


# ------------------------------------------------------------------ 5. one sentence instead of a traceback


def _write_benchmark(tmp_path: Path) -> Path:
    """A small NegChecker tuple file with distinct questions (2 questions per tuple)."""
    from consistency.datasets import benchmark_dir

    source = benchmark_dir() / "tuples" / "NegChecker.jsonl"
    target = tmp_path / "bench" / "NegChecker.jsonl"
    target.parent.mkdir()
    target.write_text("".join(source.read_text().splitlines(keepends=True)[:6]))
    return target.parent


def test_disk_full_during_evaluate_stops_cleanly_and_resumes(tmp_path, monkeypatch, caplog):
    from consistency.llm.accounting import Transcript

    bench = _write_benchmark(tmp_path)
    real_append, real_write = AppendLog.append, Transcript.write
    full = []  # set once the "disk" is full: every write of the run fails from then on

    class FullDisk:
        def __init__(self, fh):
            self.fh = fh

        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

        def __getattr__(self, name):
            return getattr(self.fh, name)

    def append(self, item):
        if len(lines(self.path)) >= 3:
            full.append(True)
        if full and not isinstance(self._fh, FullDisk):
            self._fh = FullDisk(self._fh)
        real_append(self, item)

    def transcribe(self, record):
        if full:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(self, record)

    with ScriptedServer(probability_rule(), latency=0.05) as srv:
        monkeypatch.setattr(AppendLog, "append", append)
        monkeypatch.setattr(Transcript, "write", transcribe)
        args = ["evaluate", "-f", srv.model_spec(), "-t", str(bench), "-o", str(tmp_path / "run"), "--concurrency", "4"]
        done = runner.invoke(app, args)
        monkeypatch.setattr(AppendLog, "append", real_append)
        monkeypatch.setattr(Transcript, "write", real_write)
        assert done.exit_code != 0
        message = " ".join(done.output.split())
        assert "forecasts.jsonl: No space left on device" in message and "--resume" in message, message
        assert "Traceback" not in done.output and done.output.count("error") == 1
        assert not [r for r in caplog.records if r.levelname == "ERROR"]  # no asyncio shutdown noise
        meta = json.loads((tmp_path / "run" / "run.json").read_text())
        assert meta["status"] == "interrupted"
        assert len(lines(tmp_path / "run" / "forecasts.jsonl")) == 3
        resumed = runner.invoke(app, ["evaluate", "--resume", str(tmp_path / "run")])
    assert resumed.exit_code == 0, resumed.output
    assert json.loads((tmp_path / "run" / "run.json").read_text())["status"] == "complete"
    assert len(lines(tmp_path / "run" / "forecasts.jsonl")) == 12


def test_generate_out_on_a_file_is_one_sentence(tmp_path):
    (tmp_path / "q.jsonl").write_text(json.dumps({"title": "Will X happen by 2030?"}) + "\n")
    (tmp_path / "taken").write_text("x")
    args = ["generate", "-c", "neg", "-q", str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "taken")]
    done = runner.invoke(app, args)
    assert done.exit_code != 0 and "Traceback" not in done.output
    assert str(tmp_path / "taken") in " ".join(done.output.split()) and "not a directory" in done.output


def test_score_on_a_full_disk_names_the_file_and_the_missing_checks(tmp_path, monkeypatch):
    from consistency import jsonl

    written = []
    real = jsonl.os.replace

    def full_after_three(src, dst):
        if len(written) >= 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        written.append(dst)
        real(src, dst)

    monkeypatch.setattr(jsonl.os, "replace", full_after_three)
    from consistency.datasets import sample_dir

    done = runner.invoke(app, ["score", str(sample_dir() / "forecasts"), "-o", str(tmp_path / "out")])
    text = " ".join(done.output.split())
    assert done.exit_code != 0 and "Traceback" not in done.output
    assert "No space left on device" in text and str(tmp_path / "out") in text
    assert "1 of 10 checks written, not written: ParaphraseChecker, " in text and "no summary.json" in text, text


# ------------------------------------------------------------------ 6. skipped input is reported; CSV encodings

HEADER = "forecaster,question_id,prob,resolution\n"
ROWS = "a,q1,0.9,1\na,q2,0.2,0\nb,q1,0.6,1\nb,q2,0.5,0\n"


@pytest.mark.parametrize(
    ("encoding", "prefix"), [("utf-8-sig", b""), ("utf-16", b""), ("latin-1", b"")], ids=["bom", "utf16", "latin1"]
)
def test_leaderboard_reads_excel_and_windows_csv(tmp_path, encoding, prefix):
    text = HEADER + ROWS.replace("a,", "café,") if encoding == "latin-1" else HEADER + ROWS
    path = tmp_path / "t.csv"
    path.write_bytes(prefix + text.encode(encoding))
    done = runner.invoke(app, ["leaderboard", str(path), "--json"])
    assert done.exit_code == 0, done.output
    names = [s["forecaster"] for s in json.loads(done.stdout)["standings"]]
    assert sorted(names) == (["b", "café"] if encoding == "latin-1" else ["a", "b"])


def test_a_ragged_csv_row_is_skipped_with_file_and_line(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(HEADER + "a,q1,0.9,1\nb,q1,0.6\n")
    done = runner.invoke(app, ["leaderboard", str(path)])
    assert done.exit_code == 0
    assert f"skipped {path}:3: 3 field(s) where the header has 4" in " ".join(done.output.split())


def test_evaluate_reports_skipped_tuple_lines(tmp_path):
    bench = _write_benchmark(tmp_path)
    path = bench / "NegChecker.jsonl"
    good = path.read_text().splitlines()
    path.write_text("\n".join([good[0], "{not json", '{"P": 3}']) + "\n")
    with ScriptedServer(probability_rule()) as srv:
        done = runner.invoke(app, ["evaluate", "-f", srv.model_spec(), "-t", str(bench), "-o", str(tmp_path / "r")])
    assert done.exit_code == 0, done.output
    text = " ".join(done.output.split())
    assert "2 input line(s) skipped" in text and f"{path}:2:" in text and f"{path}:3:" in text
    assert "summary.json" in text


def test_evaluate_reports_skipped_questions(tmp_path):
    path = tmp_path / "q.jsonl"
    good = {"title": "Will X happen by 2030?", "body": "b", "resolution": True}
    path.write_text(json.dumps(good) + "\n" + json.dumps({"body": "no title"}) + "\n")
    with ScriptedServer(probability_rule()) as srv:
        done = runner.invoke(app, ["evaluate", "-f", srv.model_spec(), "-q", str(path), "-o", str(tmp_path / "r")])
    assert done.exit_code == 0, done.output
    text = " ".join(done.output.split())
    assert "1 input line(s) skipped" in text and f"{path}:2:" in text


def test_generate_on_an_empty_questions_file_says_so(tmp_path):
    (tmp_path / "q.jsonl").write_text("")
    done = runner.invoke(app, ["generate", "-c", "neg", "-q", str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "g")])
    assert done.exit_code != 0
    assert "q.jsonl" in done.output and "empty" in done.output


# ------------------------------------------------------------------ 7. files get the umask's mode


def test_result_files_are_created_with_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        write_json(tmp_path / "a.json", {"x": 1})
        assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o644
        os.umask(0o077)
        write_json(tmp_path / "b.json", {"x": 1})
        assert stat.S_IMODE((tmp_path / "b.json").stat().st_mode) == 0o600
    finally:
        os.umask(old)


# ------------------------------------------------------------------ 8. the transcript adds up to the totals


def test_every_attempt_is_in_the_transcript(tmp_path):
    bad = Reply.json({"reasoning": "?", "prob": "likely"})  # billed, fails validation, re-asked...
    rule = faults_then(probability_rule(), Fault.malformed())

    def flaky(request):
        if "event 0" in request.last_user_text and request.attempt == 0 and len(request.messages) == 1:
            return bad
        if "event 0" in request.last_user_text and len(request.messages) > 1 and request.attempt == 0:
            return Fault.server_error(500)  # ... and the re-ask fails: the whole call is retried
        return rule(request)

    with ScriptedServer(flaky) as srv:
        results, stats = ask(srv.model_spec(), 4, FAST, transcript=tmp_path / "calls.jsonl")
        billed = srv.billed
        sent = srv.count
    assert all(r.ok for r in results)
    calls = lines(tmp_path / "calls.jsonl")
    assert sum(c["usage"]["prompt_tokens"] for c in calls) == stats.prompt_tokens == billed["prompt_tokens"]
    assert sum(c["usage"]["completion_tokens"] for c in calls) == billed["completion_tokens"]
    assert sum(c["attempts"] for c in calls) == stats.calls == sent
    assert all(c["attempts"] >= 2 for c in calls)  # a malformed body then a good one: two requests each


def test_random_faults_lose_nothing_and_bill_what_the_transcript_says(tmp_path):
    rule = random_faults(
        probability_rule(),
        {"429": 0.05, "500": 0.05, "hang": 0.03, "malformed": 0.04, "drop": 0.03},
        seed=1,
        hang_seconds=30,
        retry_after=0.01,
    )
    with ScriptedServer(rule) as srv:  # a 2 s timeout ends hangs, not normal answers on a loaded machine
        results, stats = ask(
            srv.model_spec(), 40, LLMSettings(timeout=2.0, max_backoff=0.05, max_attempts=10), tmp_path / "c.jsonl"
        )
        billed = srv.billed
    assert all(r.ok for r in results)
    calls = lines(tmp_path / "c.jsonl")
    assert len(calls) == 40
    assert sum(c["usage"]["prompt_tokens"] for c in calls) == billed["prompt_tokens"] == stats.prompt_tokens
    assert stats.retries > 0


def test_fault_options_of_the_scripted_server_cli():
    from consistency.fake_openai.__main__ import _fault

    assert _fault("429=0.1") == ("429", 0.1) and _fault("hang") == ("hang", 0.05)
    with pytest.raises(Exception, match="unknown fault"):
        _fault("teapot=0.1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "consistency.fake_openai", "--port", "0", "--fault", "500=1"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        banner = proc.stdout.readline()
        assert "faults: 500 100%" in banner
        url = banner.split()[2]
        import httpx2

        reply = httpx2.post(
            f"{url}/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "x"}]}
        )
        assert reply.status_code == 500
    finally:
        proc.terminate()
        proc.wait()


# ------------------------------------------------------------------ 9. JSON error wording


def test_json_errors_read_well_and_utf16_is_named(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"title": "unterminated')
    (error,) = [obj for _, obj in iter_json_lines(path)]
    assert "at at" not in str(error) and "starting at column" in str(error)
    path.write_bytes(json.dumps({"title": "Will X happen?"}).encode("utf-16") + "\n".encode("utf-16-le"))
    done = runner.invoke(app, ["validate", str(path)])
    assert done.exit_code != 0 and "UTF-16" in done.output


def test_a_run_whose_url_held_a_key_resumes_when_given_the_spec_again(tmp_path):
    with ScriptedServer(probability_rule()) as srv:
        spec = f"http://me:{PLAIN}@127.0.0.1:{srv.port}/v1::scripted"
        done = runner.invoke(app, ["evaluate", "-f", spec, "-n", "1", "-c", "neg", "-o", str(tmp_path / "run")])
        assert done.exit_code == 0, done.output
        refused = runner.invoke(app, ["evaluate", "--resume", str(tmp_path / "run")])
        resumed = runner.invoke(app, ["evaluate", "--resume", str(tmp_path / "run"), "-f", spec])
    assert refused.exit_code != 0 and "held a key" in refused.output and PLAIN not in refused.output
    assert resumed.exit_code == 0, resumed.output


def test_cc_ask_never_prints_a_key_written_into_the_url():
    with ScriptedServer(probability_rule()) as srv:
        for spec in (
            f"http://me:{PLAIN}@127.0.0.1:{srv.port}/v1::scripted",
            f"http://127.0.0.1:{srv.port}/v1?api_key={PLAIN}::scripted",
        ):
            for extra in ([], ["--json"]):
                done = runner.invoke(app, ["ask", "Will it rain in Paris?", "--model", spec, "--no-cache", *extra])
                assert done.exit_code == 0, done.output
                assert PLAIN not in done.output and "[redacted]" in done.output
