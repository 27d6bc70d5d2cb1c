"""Batch mode (``--batch``): the provider's Files + Batch API under the ordinary call path, over real
HTTP against the scripted server's Batch API; results, resume after SIGKILL, failures, ``cc batches``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from consistency.cli import app
from consistency.evaluation import RunOptions, evaluate
from consistency.fake_openai import Fault, Reply, ScriptedServer, faults_then, probability_rule
from consistency.fake_openai.replies import call_rule
from consistency.llm import LLMSettings
from consistency.llm.batch import BATCHES, read_batches
from tests.evaluation.test_evaluate import lines, result_files

#: batch mode with short waits: a batch file goes 50 ms after the last request, polled every 20 ms
BATCH = LLMSettings(batch=True, batch_idle=0.05, batch_poll=0.02, batch_poll_max=0.1, max_backoff=0.05, timeout=10)
DIRECT = LLMSettings(timeout=10, max_backoff=0.05)
FAST_CLI = ["--batch", "--batch-poll", "0.02"]

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("in_tmp_dir")


def run_eval(spec: str, out: Path, settings: LLMSettings, cache: str, n: int = 4):
    settings = settings.model_copy(update={"cache_path": Path(cache) / "responses.sqlite"})
    return evaluate(spec, checks=["neg", "and"], limit=n, out=out, options=RunOptions(llm=settings))


def test_cli_batch_run_gives_the_files_of_a_direct_run_through_one_batch(tmp_path):
    with ScriptedServer(probability_rule()) as srv:
        direct = runner.invoke(app, ["evaluate", "-f", srv.model_spec(), "-c", "neg,and,cond", "-n", "5", "-o", "d"])
        assert direct.exit_code == 0, direct.output
        direct_calls = srv.count
        srv.reset()
        os.environ["CC_CACHE_DIR"] = str(tmp_path / "cache-batch")  # a cold cache: every request goes to the batch
        batch = runner.invoke(
            app, ["evaluate", "-f", srv.model_spec(), "-c", "neg,and,cond", "-n", "5", "-o", "b", *FAST_CLI]
        )
        assert batch.exit_code == 0, batch.output
        executions = srv.batches.executions
        http = srv.http_requests
    assert result_files(tmp_path / "b") == result_files(tmp_path / "d")
    assert srv.batches.batches_created == 1 and srv.batches.files_uploaded == 1
    assert len(executions) == direct_calls and set(executions.values()) == {1}
    assert http.get("POST /v1/chat/completions", 0) == 0  # nothing was asked directly
    (record,) = read_batches(tmp_path / "b" / BATCHES).values()
    assert record["state"] == "completed" and record["collected"] and record["requests"] == direct_calls
    calls = lines(tmp_path / "b" / "llm_calls.jsonl")  # the transcript, as for direct calls
    assert len(calls) == direct_calls and all(c["error"] is None and c["attempts"] == 1 for c in calls)
    meta = json.loads((tmp_path / "b" / "run.json").read_text())
    assert meta["totals"]["calls"] == direct_calls and meta["llm"]["batch"] is True

    listed = runner.invoke(app, ["batches", str(tmp_path / "b")])
    assert listed.exit_code == 0, listed.output
    assert record["batch_id"] in listed.output and "completed" in listed.output
    assert str(direct_calls) in listed.output


def test_batch_prices_are_half_the_direct_ones_and_reach_the_run_totals(tmp_path, monkeypatch):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"scripted": {"input": 2.0, "output": 8.0, "batch_input": 1.0, "batch_output": 4.0}}))
    monkeypatch.setenv("CC_PRICES", str(prices))
    from consistency.llm.accounting import price_table

    price_table.cache_clear()
    try:
        with ScriptedServer(probability_rule()) as srv:
            direct = run_eval(srv.model_spec(), tmp_path / "d", DIRECT, tmp_path / "c1")
            batch = run_eval(srv.model_spec(), tmp_path / "b", BATCH, tmp_path / "c2")
    finally:
        price_table.cache_clear()
    d, b = direct.meta.to_dict()["totals"], batch.meta.to_dict()["totals"]
    assert d["prompt_tokens"] == b["prompt_tokens"] and d["completion_tokens"] == b["completion_tokens"]
    assert b["cost"] == pytest.approx(d["cost"] / 2) and b["cost"] > 0
    (record,) = read_batches(tmp_path / "b" / BATCHES).values()
    assert record["cost"] == pytest.approx(b["cost"]) and record["expected_cost"] > 0


def test_a_run_killed_while_its_batch_runs_resumes_without_running_anything_twice(tmp_path):
    env = os.environ | {"CC_CACHE_DIR": str(tmp_path / "cache")}
    with ScriptedServer(probability_rule()) as srv:
        direct = run_eval(srv.model_spec(), tmp_path / "direct", DIRECT, tmp_path / "c0", n=8)
        srv.reset()
        srv.batches.behaviour.processing_delay = 60.0  # in progress until we kill the client
        cmd = [sys.executable, "-m", "consistency", "evaluate", "-f", srv.model_spec(), "-c", "neg,and"]
        killed = subprocess.Popen(
            [*cmd, "-n", "8", "-o", str(tmp_path / "killed"), *FAST_CLI],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        journal = tmp_path / "killed" / BATCHES
        deadline = time.time() + 60
        while time.time() < deadline and not any(r.get("batch_id") for r in read_batches(journal).values()):
            time.sleep(0.02)
        killed.send_signal(signal.SIGKILL)
        killed.wait(10)
        (record,) = read_batches(journal).values()
        assert record["state"] not in ("completed", "collected")
        srv.batches.behaviour.processing_delay = 0.0  # batches already running keep their pace; new ones are instant
        resumed = subprocess.run(
            [sys.executable, "-m", "consistency", "evaluate", "--resume", str(tmp_path / "killed")],
            env=env,
            capture_output=True,
            timeout=120,
        )
        assert resumed.returncode == 0, resumed.stderr.decode()
        executions = srv.batches.executions
    assert srv.batches.batches_created == 1  # the resumed run collected the batch it had submitted
    assert len(executions) == direct.meta.to_dict()["questions"] and set(executions.values()) == {1}
    assert result_files(tmp_path / "killed") == result_files(direct.run_dir)
    assert json.loads((tmp_path / "killed" / "run.json").read_text())["status"] == "complete"


def test_lines_answered_with_server_errors_are_retried_in_a_follow_up_batch(tmp_path):
    rule = faults_then(probability_rule(), Fault.server_error(500))  # each request fails once, then succeeds
    with ScriptedServer(rule) as srv:
        result = run_eval(srv.model_spec(), tmp_path / "b", BATCH, tmp_path / "c")
        executions = srv.batches.executions
    assert not result.failures
    assert srv.batches.batches_created == 2 and set(executions.values()) == {2}
    assert result.meta.to_dict()["totals"]["retries"] == result.meta.to_dict()["questions"]


def test_an_expired_batch_has_its_unrun_lines_submitted_again(tmp_path):
    with ScriptedServer(probability_rule()) as srv:
        srv.batches.behaviour.expire_next = 1
        result = run_eval(srv.model_spec(), tmp_path / "b", BATCH, tmp_path / "c")
        executions = srv.batches.executions
    assert not result.failures
    assert srv.batches.batches_created == 2 and set(executions.values()) == {1}
    assert len(executions) == result.meta.to_dict()["questions"]
    states = [r["state"] for r in read_batches(tmp_path / "b" / BATCHES).values()]
    assert states == ["expired", "completed"]


def test_batches_that_keep_expiring_end_as_recorded_failures_with_the_reason(tmp_path):
    with ScriptedServer(probability_rule()) as srv:
        srv.batches.behaviour.expire_next = 10
        srv.batches.behaviour.expire_fraction = 0.0
        result = run_eval(srv.model_spec(), tmp_path / "b", BATCH, tmp_path / "c")
        assert srv.batches.batches_created == 3  # the first submission and two more, then it gives up
        assert not srv.batches.executions
    assert len(result.failures) == result.meta.to_dict()["questions"]
    assert all("no batch answered this request after 3 submissions" in f["error"] for f in result.failures)
    assert not any("BatchFailure" in f["error"] for f in result.failures)  # the sentence, not a class name
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["questions"]["failed"] == result.meta.to_dict()["questions"]


def test_a_line_the_batch_could_not_run_is_a_recorded_failure_and_resume_asks_it_again(tmp_path):
    first = probability_rule()
    hanging = {"text": None}  # one question's line times out in every batch of the first session

    async def rule(request):
        if "Will" in request.last_user_text and hanging["text"] in (None, request.last_user_text):
            hanging["text"] = request.last_user_text
            return Fault.hang(5.0)
        return await call_rule(first, request)

    with ScriptedServer(rule) as srv:
        srv.batches.behaviour.hang_timeout = 0.01
        result = run_eval(srv.model_spec(), tmp_path / "b", BATCH, tmp_path / "c")
        # retried in the next batches like a direct timeout, within the attempt budget, then recorded
        assert len(result.failures) == 1 and "504" in result.failures[0]["error"], result.failures
        hanging["text"] = "never again"
        srv.reset()
        again = runner.invoke(app, ["evaluate", "--resume", str(tmp_path / "b"), *FAST_CLI])
        assert again.exit_code == 0, again.output
        assert sum(srv.batches.executions.values()) == 1  # only the failed question, in a new batch
    assert "0 failed" in again.output


def test_failed_uploads_are_retried_with_the_shared_policy(tmp_path):
    with ScriptedServer(probability_rule()) as srv:
        srv.batches.behaviour.fail_next_uploads = 2
        result = run_eval(srv.model_spec(), tmp_path / "b", BATCH, tmp_path / "c")
        http = srv.http_requests
    assert not result.failures
    assert http["POST /v1/files"] == 3 and srv.batches.files_uploaded == 1 and srv.batches.batches_created == 1
    assert result.meta.to_dict()["totals"]["retries"] == 2


@pytest.mark.parametrize(
    ("status", "sentence"),
    [(401, "refused the API key with HTTP 401"), (404, "has no Batch API (HTTP 404 on /v1/files)")],
)
def test_fatal_batch_api_errors_stop_the_run_with_one_sentence(tmp_path, status, sentence):
    with ScriptedServer(probability_rule()) as srv:
        srv.batches.behaviour.fail_next_uploads = 100
        srv.batches.behaviour.upload_failure_status = status
        res = runner.invoke(app, ["evaluate", "-f", srv.model_spec(), "-c", "neg", "-n", "3", "-o", "r", *FAST_CLI])
        uploads = srv.http_requests["POST /v1/files"]
    assert res.exit_code == 1
    assert sentence in res.output and "resume it with" in res.output
    assert uploads == 1  # not retried


def test_batch_fallback_direct_asks_reasks_directly(tmp_path):
    forecasts = probability_rule()

    async def first_answer_invalid(request):
        if len(request.messages) <= 2:  # the first ask; a re-ask carries the answer and the error
            return Reply.json({"prob": 7.5})
        return await call_rule(forecasts, request)

    with ScriptedServer(first_answer_invalid) as srv:
        settings = BATCH.model_copy(update={"batch_fallback": "direct"})
        result = run_eval(srv.model_spec(), tmp_path / "d", settings, tmp_path / "c1")
        direct_reasks = srv.http_requests.get("POST /v1/chat/completions", 0)
        srv.reset()
        batched = run_eval(srv.model_spec(), tmp_path / "b", BATCH, tmp_path / "c2")
        assert srv.http_requests.get("POST /v1/chat/completions", 0) == 0
        assert srv.batches.batches_created == 2  # the answers, then their re-asks
    n = result.meta.to_dict()["questions"]
    assert not result.failures and not batched.failures
    assert direct_reasks == n and srv.batches.batches_created == 2
    assert result_files(result.run_dir) == result_files(batched.run_dir)


def test_batch_files_respect_the_request_limit(tmp_path):
    with ScriptedServer(probability_rule()) as srv:
        settings = BATCH.model_copy(update={"batch_max_requests": 5})
        result = run_eval(srv.model_spec(), tmp_path / "b", settings, tmp_path / "c")
        created = srv.batches.batches_created
    n = result.meta.to_dict()["questions"]
    assert not result.failures and created == -(-n // 5)
    assert all(r["requests"] <= 5 for r in read_batches(tmp_path / "b" / BATCHES).values())


def test_cc_batches_cancel_cancels_the_unfinished_batches_of_a_run(tmp_path):
    journal = tmp_path / "run" / BATCHES
    with ScriptedServer(probability_rule()) as srv:
        srv.batches.behaviour.processing_delay = 60.0
        env = os.environ | {"CC_CACHE_DIR": str(tmp_path / "cache")}
        cmd = [sys.executable, "-m", "consistency", "evaluate", "-f", srv.model_spec(), "-c", "neg", "-n", "3"]
        proc = subprocess.Popen([*cmd, "-o", str(tmp_path / "run"), *FAST_CLI], env=env, stderr=subprocess.PIPE)
        deadline = time.time() + 60
        while time.time() < deadline and not any(r.get("batch_id") for r in read_batches(journal).values()):
            time.sleep(0.02)
        listed = runner.invoke(app, ["batches", str(tmp_path / "run"), "--refresh"])
        cancelled = runner.invoke(app, ["batches", "cancel", str(tmp_path / "run")])
        code = proc.wait(60)
        stderr = proc.stderr.read().decode()
    assert code in (0, 1), stderr  # (1 when no line had run before the cancel)
    assert listed.exit_code == 0 and "in_progress" in listed.output, listed.output
    assert cancelled.exit_code == 0, cancelled.output
    assert "cancel" in cancelled.output
    assert "(cancelled) did not answer" in stderr
    failed = json.loads((tmp_path / "run" / "summary.json").read_text())["questions"]["failed"]
    assert failed >= 1 and f"{failed} failed" in stderr  # recorded failures, resumable


def test_cc_generate_and_cc_questions_take_batch(tmp_path):
    from tests.generate.test_generate import answers, question
    from tests.questions.test_questions import TITLES, rule

    qs = tmp_path / "q.jsonl"
    qs.write_text("".join(question(i).model_dump_json() + "\n" for i in range(8)))
    gen = ["generate", "--check", "neg", "--questions", str(qs), "-n", "3", "--embeddings", "lexical"]
    with ScriptedServer(answers()) as srv:
        direct = runner.invoke(app, [*gen, "--out", "direct", "--model", srv.model_spec()])
        assert direct.exit_code == 0, direct.output
        srv.reset()
        os.environ["CC_CACHE_DIR"] = str(tmp_path / "cache-batch")
        batch = runner.invoke(app, [*gen, "--out", "batch", "--model", srv.model_spec(), *FAST_CLI])
        assert batch.exit_code == 0, batch.output
        assert srv.http_requests.get("POST /v1/chat/completions", 0) == 0 and srv.batches.batches_created >= 1
    made = {
        name: sorted((tmp_path / name / "NegChecker.jsonl").read_text().splitlines()) for name in ("batch", "direct")
    }
    assert made["batch"] == made["direct"]  # the same tuples (written in the order they finished)
    journal = tmp_path / "cache-batch" / BATCHES  # no run directory: the journal in the cache directory
    assert all(r["state"] == "completed" for r in read_batches(journal).values())
    listed = runner.invoke(app, ["batches"])
    assert listed.exit_code == 0 and "completed" in listed.output

    titles = tmp_path / "titles.txt"
    titles.write_text("\n".join(TITLES) + "\n")
    with ScriptedServer(rule) as srv:
        common = ["--model", srv.model_spec(), "--created", "2024-10-01", "--resolve-by", "2028-01-01"]
        res = runner.invoke(app, ["questions", "fill", "--titles", str(titles), "--out", "f.jsonl", *common, *FAST_CLI])
        assert res.exit_code == 0, res.output
        assert srv.http_requests.get("POST /v1/chat/completions", 0) == 0 and srv.batches.batches_created >= 1


def test_a_batch_created_but_not_journaled_is_found_on_resume_not_created_again(tmp_path):
    """A kill between creating the batch and journaling its id: the resumed run finds the batch by
    its input file on the provider instead of submitting the requests a second time."""
    import asyncio

    from pydantic import BaseModel

    from consistency.llm import LLM

    class Answer(BaseModel):
        prob: float

    journal = tmp_path / BATCHES
    settings = BATCH.model_copy(update={"cache_path": tmp_path / "cache.sqlite"})

    async def ask_all(spec: str, stop_when_submitted: bool) -> list:
        async with LLM(settings, batches=journal) as llm:
            calls = [llm.structured(spec, [{"role": "user", "content": f"Will {i} happen?"}], Answer) for i in range(3)]
            work = asyncio.gather(*calls)
            if not stop_when_submitted:
                return await work
            while not any(r.get("batch_id") for r in read_batches(journal).values()):
                await asyncio.sleep(0.01)
            work.cancel()
            with pytest.raises(asyncio.CancelledError):
                await work
            return []

    with ScriptedServer(probability_rule()) as srv:
        srv.batches.behaviour.processing_delay = 0.5
        asyncio.run(ask_all(srv.model_spec(), stop_when_submitted=True))
        text = journal.read_text().splitlines()
        first = next(i for i, line in enumerate(text) if '"batch_id"' in line)
        journal.write_text("\n".join(text[:first]) + "\n")  # as if killed before the batch id was written
        (record,) = read_batches(journal).values()
        assert record["state"] == "uploaded" and "batch_id" not in record
        results = asyncio.run(ask_all(srv.model_spec(), stop_when_submitted=False))
        assert all(r.ok for r in results) and len(results) == 3
        assert srv.batches.batches_created == 1 and set(srv.batches.executions.values()) == {1}
        assert srv.http_requests["GET /v1/batches"] == 1


def test_a_journal_line_torn_by_a_kill_is_cut_before_the_next_record(tmp_path):
    from consistency.llm.batch_journal import BatchJournal

    journal = tmp_path / BATCHES
    BatchJournal(journal).write("b1", state="validating")
    with journal.open("a", encoding="utf-8") as fh:
        fh.write('{"id": "b1", "state": "compl')  # killed mid-write
    BatchJournal(journal).write("b2", state="in_progress")
    records = read_batches(journal)  # before the fix, the glued line was a damaged line mid-file
    assert records["b1"]["state"] == "validating" and records["b2"]["state"] == "in_progress"
    assert journal.read_text(encoding="utf-8").count("\n") == 2
