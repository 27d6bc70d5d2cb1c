"""`evaluate`/`cc evaluate`: run directories, asking once, replay, resume after SIGKILL, faults, ground truth."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from consistency.checks.builtin import BUILTIN_CHECKS
from consistency.cli import app
from consistency.datasets import benchmark_dir
from consistency.datasets.make_benchmark import make_benchmark
from consistency.evaluation import RunOptions, evaluate, load_benchmark, resume
from consistency.evaluation.ground_truth import evaluate_questions
from consistency.evaluation.scoring import score_path
from consistency.fake_openai import Fault, Reply, ScriptedServer, every_nth, probability_rule
from consistency.forecasters import BasicForecaster
from consistency.jsonl import iter_json_lines
from consistency.llm import LLMSettings
from tests.support.reference import FORECASTS as REF_FORECASTS
from tests.support.reference import GROUND_TRUTH_RUN as REF_GROUND_TRUTH
from tests.support.reference import needs_reference

FAST = LLMSettings(timeout=5, max_backoff=0.05, max_connections=16)
RESULT_FILES = ("summary.json", "forecasts.jsonl")

runner = CliRunner()


pytestmark = pytest.mark.usefixtures("in_tmp_dir")


def lines(path: Path) -> list[dict]:
    return [obj for _, obj in iter_json_lines(path)]


def result_files(run: Path) -> dict[str, bytes]:
    names = [p.name for p in run.iterdir() if p.name.endswith("Checker.jsonl") or p.name.startswith("stats_")]
    return {name: (run / name).read_bytes() for name in sorted([*names, *RESULT_FILES])}


def test_bundled_benchmark_is_large_enough_and_regenerates_identically(tmp_path):
    questions = lines(benchmark_dir() / "questions.jsonl")
    assert len(questions) >= 60
    years = {q["resolution_date"][:4] for q in questions}
    assert years == {"2027", "2028", "2029", "2030"}
    assert all(len(q["body"]) > 80 for q in questions)
    sets = load_benchmark()
    assert [ts.check.name for ts in sets] == [c.name for c in BUILTIN_CHECKS]
    assert all(len(ts.tuples) >= 20 and not ts.errors for ts in sets)
    make_benchmark(benchmark_dir() / "questions.jsonl", tmp_path / "again")
    for ts in sets:
        assert (tmp_path / "again" / ts.path.name).read_bytes() == ts.path.read_bytes()


def test_each_distinct_question_is_asked_once_and_the_run_directory_is_complete(tmp_path):
    with ScriptedServer(probability_rule()) as srv:
        result = evaluate(srv.model_spec(), limit=3, out=tmp_path / "run", options=RunOptions(llm=FAST, concurrency=16))
        asked = [r.last_user_text for r in srv.requests]
    run = result.run_dir
    journal = lines(run / "forecasts.jsonl")
    assert len(asked) == len(set(asked)) == len(journal) == result.meta.to_dict()["questions"]
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "complete" and meta["totals"]["calls"] == len(asked)
    assert meta["forecaster"]["forecaster_class"] == "BasicForecaster"
    assert (run / "llm_calls.jsonl").exists()
    for check in BUILTIN_CHECKS:
        scored = lines(run / f"{check.class_name}.jsonl")
        assert len(scored) == 3
        for line in scored:
            assert set(line["line"]) == set(check.field_names)
            assert set(line["violation_data"]) == {"default", "default_scaled", "frequentist"}
        assert (run / f"stats_{check.class_name}.json").exists()
    # the forecasts written are the server's answers, and `cc score` on the run gives the same numbers
    first = lines(run / "NegChecker.jsonl")[0]["line"]["P"]
    assert 0.02 <= first["forecast"]["prob"] <= 0.98
    rescored = score_path(run)
    ours = json.loads((run / "summary.json").read_text())
    for f in rescored.files:
        assert f.stats()["default"].avg_violation == pytest.approx(
            ours["checks"][f.check.class_name]["default"]["avg_violation"]
        )


@needs_reference
def test_replay_reproduces_the_published_forecasts_and_cc_score(tmp_path):
    result = evaluate(
        "replay", tuples=REF_FORECASTS, forecaster_options={"source": str(REF_FORECASTS)}, out=tmp_path / "replayed"
    )
    assert not result.failures
    published = score_path(REF_FORECASTS)
    for f in published.files:
        ours = lines(result.run_dir / f"{f.check.class_name}.jsonl")
        theirs = lines(REF_FORECASTS / f"{f.check.class_name}.jsonl")
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            for name in f.check.field_names:
                assert a["line"][name]["forecast"]["prob"] == b["line"][name]["forecast"]["prob"]
        mine = next(g for g in result.report.files if g.check.name == f.check.name)
        for metric in ("default", "frequentist"):
            np.testing.assert_array_equal(mine.scores.values(metric), f.scores.values(metric))


def test_user_forecaster_by_path_through_the_cli(tmp_path):
    path = tmp_path / "agent.py"
    path.write_text(
        "from consistency import Forecaster, Forecast\n\n"
        "class Always(Forecaster):\n"
        "    def __init__(self, p: float = 0.5):\n"
        "        self.p = p\n\n"
        "    async def forecast(self, question):\n"
        "        return Forecast(prob=self.p)\n"
    )
    res = runner.invoke(
        app, ["evaluate", "-f", f"{path}::Always", "-F", "p=0.3", "-c", "neg,para", "-n", "4", "-o", "out"]
    )
    assert res.exit_code == 0, res.output
    assert "NEGATION" in res.output and "run directory" in res.output
    meta = json.loads((tmp_path / "out" / "run.json").read_text())
    assert meta["forecaster"]["full_forecaster_config"] == {"p": 0.3}
    neg = json.loads((tmp_path / "out" / "stats_NegChecker.json").read_text())["overall"]["default"]
    assert neg["num_samples"] == 4 and neg["fraction_violated"] == 1.0  # 0.3 + 0.3 != 1
    para = json.loads((tmp_path / "out" / "stats_ParaphraseChecker.json").read_text())["overall"]["default"]
    assert para["avg_violation"] == 0.0


def test_faults_end_as_retries_or_recorded_failures_and_resume_retries_failures(tmp_path):
    rule = every_nth(probability_rule(), 4, Fault.rate_limit(0.01))
    with ScriptedServer(rule) as srv:
        ok = evaluate(srv.model_spec(), checks=["neg"], limit=6, out=tmp_path / "a", options=RunOptions(llm=FAST))
    assert not ok.failures  # 429s were retried
    broken = every_nth(probability_rule(), 3, Fault.server_error(500))
    settings = LLMSettings(timeout=5, max_backoff=0.01, max_attempts=1)
    with ScriptedServer(broken) as srv:
        partial = evaluate(
            srv.model_spec(), checks=["neg"], limit=6, out=tmp_path / "b", options=RunOptions(llm=settings)
        )
    assert partial.failures and all("500" in f["error"] for f in partial.failures)
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["questions"]["failed"] == len(partial.failures)
    assert summary["checks"]["NegChecker"]["unscorable"] > 0
    with ScriptedServer(probability_rule()) as srv:
        fixed = resume(tmp_path / "b", forecaster=BasicForecaster(srv.model_spec()), options=RunOptions(llm=FAST))
        assert srv.count == len(partial.failures)  # only the failed questions are asked again
    assert not fixed.failures and len(lines(tmp_path / "b" / "NegChecker.jsonl")) == 6


def _spawn(spec: str, out: Path, cache: Path, *extra: str) -> subprocess.Popen:
    env = os.environ | {"CC_CACHE_DIR": str(cache)}
    cmd = [sys.executable, "-m", "consistency", "evaluate", "-f", spec, "-c", "cond,and,neg", "-n", "8", "-o", str(out)]
    return subprocess.Popen(
        [*cmd, "--concurrency", "4", *extra], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def _wait_for_lines(journal: Path, n: int) -> Path:
    deadline = time.time() + 60
    while time.time() < deadline and (not journal.exists() or journal.read_text().count("\n") < n):
        time.sleep(0.01)
    return journal


def _resume(run: Path, cache: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "consistency", "evaluate", "--resume", str(run)]
    return subprocess.run(cmd, env=os.environ | {"CC_CACHE_DIR": str(cache)}, capture_output=True, timeout=60)


def test_a_run_killed_with_sigkill_resumes_to_exactly_the_uninterrupted_files(tmp_path):
    with ScriptedServer(probability_rule(), latency=0.05) as srv:
        whole = _spawn(srv.model_spec(), tmp_path / "whole", tmp_path / "cache-whole")
        assert whole.wait(60) == 0, whole.stderr.read().decode()
        srv.reset()
        killed = _spawn(srv.model_spec(), tmp_path / "killed", tmp_path / "cache-killed")
        journal = _wait_for_lines(tmp_path / "killed" / "forecasts.jsonl", 12)
        killed.send_signal(signal.SIGKILL)
        killed.wait(10)
        answered = {json.loads(x)["question_id"] for x in journal.read_text().splitlines() if x.endswith("}")}
        asked_before = len(srv.requests)
        resumed = _resume(tmp_path / "killed", tmp_path / "cache-killed")
        assert resumed.returncode == 0, resumed.stderr.decode()
        asked_after = [r.last_user_text for r in srv.requests[asked_before:]]
    assert 12 <= len(answered) < json.loads((tmp_path / "whole" / "run.json").read_text())["questions"]
    assert not any(qid in text for qid in answered for text in asked_after)  # answered questions not re-asked
    final = lines(tmp_path / "killed" / "forecasts.jsonl")
    assert len(final) == len({r["key"] for r in final})  # no duplicate lines
    assert result_files(tmp_path / "killed") == result_files(tmp_path / "whole")
    assert json.loads((tmp_path / "killed" / "run.json").read_text())["status"] == "complete"


@needs_reference
def test_ground_truth_replay_reproduces_the_published_scores(tmp_path):
    results = REF_GROUND_TRUTH / "ground_truth_results.jsonl"
    result = evaluate_questions("replay", results, forecaster_options={"source": str(results)}, out=tmp_path / "gt")
    summary = result.meta.to_dict()["summary"]
    published = json.loads((REF_GROUND_TRUTH / "ground_truth_summary.json").read_text())
    assert summary["total_questions"] == published["total_questions"] and summary["failed"] == 0
    assert round(summary["avg_brier_score"], 3) == published["avg_brier_score"]
    assert round(summary["avg_log_score"], 3) == published["avg_log_score"]
    ours = lines(tmp_path / "gt" / "ground_truth_results.jsonl")
    theirs = {r["question"]["id"]: r for r in lines(results)}
    for row in ours:
        assert row["brier_score"] == pytest.approx(theirs[row["question"]["id"]]["brier_score"], abs=1e-4)


def test_cli_reports_bad_input_clearly(tmp_path):
    bad = tmp_path / "NegChecker.jsonl"
    bad.write_text('{"P": {"title": "x"}, "not_P": {"title": "y"}}\n{"P": \n')
    res = runner.invoke(app, ["evaluate", "-f", "constant", "-t", str(bad), "-o", "o1"])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "o1" / "summary.json").read_text())
    assert any(e["line"] == 2 for e in summary["errors"])
    res = runner.invoke(app, ["evaluate", "-f", "constant", "-F", "p=2", "-o", "o2"])
    assert res.exit_code == 2 and "p must be a probability" in res.output
    res = runner.invoke(app, ["evaluate", "-f", "constant", "-o", "o1"])  # o1 is complete: nothing to resume
    assert res.exit_code == 2 and "already holds a complete run" in res.output and "--resume" not in res.output


def test_ctrl_c_leaves_a_valid_interrupted_run_that_resumes(tmp_path):
    with ScriptedServer(probability_rule(), latency=0.05) as srv:
        proc = _spawn(srv.model_spec(), tmp_path / "run", tmp_path / "cache")
        _wait_for_lines(tmp_path / "run" / "forecasts.jsonl", 8)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 130
        assert "--resume" in proc.stderr.read().decode()
        meta = json.loads((tmp_path / "run" / "run.json").read_text())
        assert meta["status"] == "interrupted"
        summary = json.loads((tmp_path / "run" / "summary.json").read_text())
        assert summary["questions"]["answered"] >= 8
        done = _resume(tmp_path / "run", tmp_path / "cache")
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads((tmp_path / "run" / "run.json").read_text())["status"] == "complete"


def test_a_key_passed_as_an_option_is_not_written_to_the_run(tmp_path, monkeypatch):
    secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    path = tmp_path / "keyed.py"
    path.write_text(
        "from consistency import Forecaster, Forecast\n\n"
        "class Keyed(Forecaster):\n"
        "    def __init__(self, api_key: str = ''):\n"
        "        self.api_key = api_key\n\n"
        "    async def forecast(self, question):\n"
        "        return Forecast(prob=0.4)\n"
    )
    evaluate(f"{path}::Keyed", forecaster_options={"api_key": secret}, checks=["neg"], limit=2, out=tmp_path / "r")
    for file in (tmp_path / "r").iterdir():
        assert secret not in file.read_text(), file.name


def test_a_resume_keeps_the_recorded_options_unless_given_again(tmp_path):
    """A first run with --no-cache and --max-attempts 1: a bare --resume keeps both (no cache file appears,
    a 500 is not retried); an option that changes what the run measures is refused with one sentence;
    a call option given again (--cache, --max-attempts, --rpm) is used, said, and kept for later resumes."""
    cache = tmp_path / "cache" / "responses.sqlite"
    broken = every_nth(probability_rule(), 3, Fault.server_error(500))
    with ScriptedServer(broken) as srv:
        spec = srv.model_spec()
        first = ["evaluate", "-f", spec, "-c", "neg", "-n", "6", "-o", "run", "--no-cache", "--max-attempts", "1"]
        assert runner.invoke(app, first).exit_code == 0
        assert not cache.exists()
        failed = json.loads((tmp_path / "run" / "summary.json").read_text())["questions"]["failed"]
        asked = srv.count
        again = runner.invoke(app, ["evaluate", "--resume", "run"])
        assert again.exit_code == 0, again.output
        assert not cache.exists()  # the cache stayed off
        assert srv.count - asked == failed  # each failed question asked once: max_attempts 1 was kept
        meta = json.loads((tmp_path / "run" / "run.json").read_text())
        assert meta["llm"]["cache"] is False and meta["llm"]["max_attempts"] == 1
        asked = srv.count
        for conflict, flag in ((["-n", "2"], "--limit"), (["-c", "cond"], "--checks"), (["-f", "constant"], "-f")):
            refused = runner.invoke(app, ["evaluate", "--resume", "run", *conflict])
            assert refused.exit_code == 2
            said = " ".join(refused.output.split())
            assert said.startswith("error --") and flag.lstrip("-")[0] in said and "a resume finishes a run" in said
        assert srv.count == asked  # refused before any call
        same = runner.invoke(
            app, ["evaluate", "--resume", "run", *first[1:9], "--cache", "--max-attempts", "4", "--rpm", "6000"]
        )
        assert same.exit_code == 0, same.output
        said = " ".join(same.output.split())
        assert "--cache: the response cache is on from this resume on (the run had it off)" in said
        assert "--max-attempts 4: used from this resume on (the run had 1)" in said
        assert "--rpm 6000.0: used from this resume on (the run had None)" in said  # once ignored: a name mismatch
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["llm"]["cache"] is True and meta["llm"]["max_attempts"] == 4
    assert meta["llm"]["requests_per_minute"] == 6000


def test_answers_cut_at_the_token_limit_are_recorded_failures_with_the_reason(tmp_path):
    def always_cut(request):
        return Reply.json({"reasoning": "the answer ran", "prob": 0.4}, finish_reason="length")

    with ScriptedServer(always_cut) as srv:
        result = evaluate(srv.model_spec(), checks=["neg"], limit=2, out=tmp_path / "run", options=RunOptions(llm=FAST))
        assert srv.count == 2 * result.meta.to_dict()["questions"]  # each asked once more with room, no more
    assert len(result.failures) == result.meta.to_dict()["questions"]
    assert {f["error"] for f in result.failures} == {"answer truncated at 1024 tokens"}
    assert json.loads((tmp_path / "run" / "run.json").read_text())["status"] == "failed"  # not one forecast


def test_time_queued_for_the_models_slots_does_not_count_against_the_forecast_timeout(tmp_path):
    """One slot (as the bundled model has 4), 0.3 s per answer and a 1.5 s forecast timeout: questions
    queued far longer than 1.5 s behind the others are answered; the one whose answer hangs times out,
    and the ones queued behind it are answered after it."""
    hang = Fault.hang(30)

    def rule(request):
        return hang if request.index == 2 else probability_rule()(request)

    slow = LLMSettings(timeout=60, max_backoff=0.05, max_connections=1, max_attempts=1)
    with ScriptedServer(rule, latency=0.3) as srv:
        result = evaluate(
            srv.model_spec(),
            checks=["neg"],
            limit=6,
            out=tmp_path / "run",
            options=RunOptions(llm=slow, concurrency=32, timeout=1.5),
        )
        assert srv.max_in_flight == 1
    assert result.meta.to_dict()["questions"] == 12  # about 4 s of queue for the last one, against 1.5 s of timeout
    assert [f["error"] for f in result.failures] == ["timed out after 1.5 s"]


def test_a_resume_of_a_run_with_damaged_scoring_parameters_is_one_sentence(tmp_path):
    """The parameters are checked with the rest of the record (they were read after it, so a bad value was a
    pydantic traceback rather than an error naming the field)."""
    from consistency.errors import InputError

    evaluate("constant", checks=["neg"], limit=2, out=tmp_path / "run")
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    meta["parameters"]["epsilon"] = "abc"
    (tmp_path / "run" / "run.json").write_text(json.dumps(meta))
    with pytest.raises(InputError, match=r"run.json: parameters.epsilon: .*cannot be resumed"):
        resume(tmp_path / "run")


def test_run_json_changes_are_checked_before_they_are_written(tmp_path):
    from consistency.evaluation.rundir import RunDir
    from consistency.store.meta import RunMetaError, SessionRecord

    run = RunDir(tmp_path / "run")
    run.create(kind="consistency", questions=3)
    before = run.run_file.read_bytes()
    with pytest.raises(RunMetaError, match=r"questions: should be a valid integer"):
        run.update(questions="many")
    assert run.run_file.read_bytes() == before
    record = run.update(sessions=[SessionRecord(action="start", pid=7)], status="complete")
    assert record.status == "complete" and record.sessions and record.sessions[0].pid == 7
    assert json.loads(run.run_file.read_text())["sessions"] == [{"action": "start", "pid": 7}]
    run.release()


def test_run_request_is_the_library_call_under_cc_evaluate(tmp_path):
    """`cc evaluate`'s options as a Request: the same run, gates and refusals for a Python caller."""
    from consistency.errors import InputError
    from consistency.evaluation import RunOptions
    from consistency.evaluation.request import Gates, Request, run_request

    request = Request("constant", ["p=0.3"], checks="neg", limit=2, out_dir=tmp_path / "run")
    result = run_request(request, RunOptions())
    assert result.run_dir == tmp_path / "run" and result.record.status == "complete"
    assert [f.check.name for f in result.report.files] == ["NEGATION"]
    assert Gates(max_violation=10.0).failures(result) == [] and Gates(max_violation=0.0).failures(result)
    with pytest.raises(InputError):
        Gates(fail_on_error=float("nan"))
    with pytest.raises(InputError, match="--checks cond differs"):  # a resume finishes the run as it began
        run_request(Request("constant", checks="cond"), RunOptions(), resume_dir=result.run_dir, explicit={"checks"})
