"""The inspect tasks over real HTTP: inspect's OpenAI-compatible provider (`openai-api/scripted/...`)
against our scripted server, through the `inspect` command and its entry point, and from Python."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.support.inspect_support import (
    INSPECT,
    assert_same,
    cc_scores,
    log_metrics,
    require_inspect,
    same_as_summary,
    summary_of_cc_score,
)

require_inspect()

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.log import list_eval_logs, read_eval_log  # noqa: E402

from consistency.fake_openai import Fault, Reply, ScriptedServer, probability_for, probability_rule  # noqa: E402
from consistency.fake_openai.replies import random_faults  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning")

MODEL = "openai-api/scripted/scripted"


@pytest.fixture
def server(monkeypatch):
    with ScriptedServer() as srv:
        monkeypatch.setenv("SCRIPTED_BASE_URL", srv.base_url)
        monkeypatch.setenv("SCRIPTED_API_KEY", "not-a-real-key")
        yield srv


def test_inspect_eval_command_over_http_equals_cc_score(server, tmp_path):
    logs = tmp_path / "logs"
    cmd = [str(INSPECT), "eval", "consistency/negation", "--model", MODEL, "-T", "limit=5"]
    result = subprocess.run(
        [*cmd, "--log-dir", str(logs), "--display", "none"],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    (info,) = list_eval_logs(str(logs))
    log = read_eval_log(info)
    assert log.status == "success" and log.eval.task == "consistency/negation"
    assert server.count == len({r.last_user_text for r in server.requests})  # each question asked once
    request = server.requests[0].body
    assert request["response_format"]["type"] == "json_schema"  # our structured answer, asked for
    values = log_metrics(log)
    assert values["scored"] == 5
    assert_same(values, cc_scores(tmp_path, ["NegChecker"], 5), multi=False)
    same_as_summary(values, summary_of_cc_score(log.location, tmp_path / "scored"))


def test_malformed_answers_over_http_are_scored_failures(server, tmp_path):
    base = probability_rule()

    def rule(request):
        if request.wants_json and probability_for(request.last_user_text) < 0.3:
            return Reply.text("The question is too uncertain to put a number on.")
        return base(request)

    server.rule = rule
    (log,) = inspect_eval(
        "consistency/all",
        model=MODEL,
        task_args={"limit": 4, "checks": "neg,and"},
        model_base_url=server.base_url,  # inspect memoises models by base URL: each test's server is new
        max_retries=1,
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success"
    values = log_metrics(log)
    assert values["failed"] >= 1 and values["scored"] >= 1
    failed = [s for s in log.samples if s.scores["consistency_scorer"].value["failed"]]
    assert all("too uncertain" in s.scores["consistency_scorer"].metadata["error"] for s in failed)
    same_as_summary(values, summary_of_cc_score(log.location, tmp_path / "scored"))


def test_arbitrage_forecaster_runs_through_inspects_model(server, tmp_path):
    (log,) = inspect_eval(
        "consistency/paraphrase",
        model=MODEL,
        task_args={"limit": 2, "forecaster": "arbitrage:basic", "forecaster_options": "instantiator=template"},
        model_base_url=server.base_url,  # inspect memoises models by base URL: each test's server is new
        max_retries=1,
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success", log.error
    assert log_metrics(log)["scored"] == 2
    for sample in log.samples:
        answers = sample.scores["consistency_scorer"].metadata["answers"]
        for answer in answers.values():
            tree = json.loads(answer["raw"])  # the arbitrage call tree, kept as the forecast's metadata
            assert tree and 0 < answer["prob"] < 1
    # the base forecasts and the arbitraged questions all went over HTTP to the scripted server
    assert server.count > 4


def faulty_eval(server, tmp_path, task: str, **kwargs):
    (log,) = inspect_eval(
        task,
        model=MODEL,
        model_base_url=server.base_url,  # inspect memoises models by base URL: each test's server is new
        display="none",
        log_dir=str(tmp_path / "logs"),
        **kwargs,
    )
    return log


def test_malformed_bodies_are_retried_and_every_sample_is_scored(server, tmp_path):
    # One response in five is HTTP 200 with a body that is not JSON: the openai SDK's JSONDecodeError,
    # which inspect does not retry, ended the evaluation after a few samples.
    server.rule = random_faults(probability_rule(), {"malformed": 0.2}, seed=3)
    log = faulty_eval(server, tmp_path, "consistency/negation", task_args={"limit": 12})
    assert log.status == "success", log.error
    values = log_metrics(log)
    assert len(log.samples) == 12 and values["scored"] == 12 and values["failed"] == 0
    asked = len({r.last_user_text for r in server.requests})
    assert server.count > asked  # some answers came on a retry
    assert_same(values, cc_scores(tmp_path, ["NegChecker"], 12), multi=False)  # the same answers as cc's


def test_a_question_never_answered_readably_fails_only_its_samples(server, tmp_path):
    base = probability_rule()

    def rule(request):  # questions below 0.3 always get a broken body
        return Fault.malformed() if probability_for(request.last_user_text) < 0.3 else base(request)

    server.rule = rule
    log = faulty_eval(server, tmp_path, "consistency/all", task_args={"limit": 4, "checks": "neg,and"}, max_retries=2)
    assert log.status == "success", log.error
    values = log_metrics(log)
    failed = [s for s in log.samples if s.scores["consistency_scorer"].value["failed"]]
    assert failed and values["failed"] == len(failed) and values["scored"] == 8 - len(failed)
    for s in failed:
        assert "no answer after 3 attempt(s): JSONDecodeError" in s.scores["consistency_scorer"].metadata["error"]
    broken = [r for r in server.requests if probability_for(r.last_user_text) < 0.3]
    assert len(broken) == 3 * len({r.last_user_text for r in broken})  # --max-retries 2: three attempts each
    same_as_summary(values, summary_of_cc_score(log.location, tmp_path / "scored"))


def test_an_error_that_cannot_succeed_on_retry_still_stops_the_run(server, tmp_path):
    server.rule = lambda request: Fault.error(401, "Incorrect API key provided (scripted).", "invalid_api_key")
    log = faulty_eval(server, tmp_path, "consistency/negation", task_args={"limit": 3})
    assert log.status == "error" and "401" in log.error.message  # not turned into failed samples
