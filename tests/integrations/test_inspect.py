"""The inspect tasks with inspect's own mock provider (mockllm): metrics equal `cc score` on the same
answers, malformed answers are scored failures, a shared question is asked once, `cc score` on the
log and `cc export inspect` reproduce the task's metrics, and nothing imports inspect without need."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest

from tests.support.inspect_support import (
    CC,
    assert_same,
    cc_scores,
    log_metrics,
    prompt_of,
    require_inspect,
    same_as_summary,
    summary_of_cc_score,
)

require_inspect()

# inspect's own retry policy passes tenacity a deprecated argument; not ours to fix
pytestmark = pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning")

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402

from consistency.evaluation.benchmark import load_benchmark  # noqa: E402
from consistency.fake_openai import probability_for  # noqa: E402
from consistency.integrations.inspect.answers import parse_answer  # noqa: E402


def mock(answer, calls: Counter | None = None):
    """mockllm answering each request with ``answer(last user text, config)``; token usage set, so
    mockllm never counts tokens with tiktoken (which would download its encoding)."""

    def respond(messages, tools, tool_choice, config):
        text = messages[-1].text
        if calls is not None:
            calls[text] += 1
        out = ModelOutput.from_content(model="mockllm", content=answer(text, config))
        out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
        return out

    return get_model("mockllm/model", custom_outputs=respond, memoize=False)


def structured(text: str, config) -> str:
    return json.dumps({"reasoning": "base rates", "prob": probability_for(text)})


def run(task: str, model, tmp_path, **task_args):
    (log,) = inspect_eval(task, model=model, task_args=task_args, display="none", log_dir=str(tmp_path / "logs"))
    assert log.status == "success", log.error
    return log


def test_negation_task_metrics_equal_cc_score_on_the_same_answers(tmp_path):
    log = run("consistency/negation", mock(structured), tmp_path, limit=8)
    assert len(log.samples) == 8
    assert_same(log_metrics(log), cc_scores(tmp_path, ["NegChecker"], 8), multi=False)
    sample = log.samples[0]
    score = sample.scores["consistency_scorer"]
    meta = score.metadata
    assert set(meta["answers"]) == {"P", "not_P"}
    assert meta["certificate"]["epsilon"] == 1e-3 and set(meta["certificate"]["prices"]) == {"P", "not_P"}
    assert score.value["arbitrage"] == meta["violation_data"]["default"]["violation"]
    assert meta["certificate"]["gap"] <= 1e-9  # the certificate proves the violation exact


def test_all_task_per_check_metrics_and_cc_score_on_the_log(tmp_path):
    log = run("consistency/all", mock(structured), tmp_path, limit=3, checks="neg,cond,expev")
    values = log_metrics(log)
    assert values["scored"] == 9 and values["failed"] == 0
    assert_same(values, cc_scores(tmp_path, ["NegChecker", "CondChecker", "ExpectedEvidenceChecker"], 3), multi=True)
    summary = summary_of_cc_score(log.location, tmp_path / "scored")
    same_as_summary(values, summary)
    assert summary["inspect"]["task"] == "consistency/all"
    # every cc command reads the result: the scored files are forecast files
    again = subprocess.run(
        [str(CC), "score", str(tmp_path / "scored"), "-o", str(tmp_path / "again"), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["aggregate"]["default"] == summary["aggregate"]["default"]


def test_a_question_shared_by_several_tuples_is_asked_once_per_run(tmp_path):
    calls: Counter = Counter()
    log = run("consistency/all", mock(structured, calls), tmp_path, limit=4, checks="neg,para,cons")
    sets = load_benchmark(None, ["neg", "para", "cons"], 4)
    asked = [q for ts in sets for t in ts.tuples for q in t.values()]
    distinct = {prompt_of(q) for q in asked}
    assert len(distinct) < len(asked)  # the benchmark's tuples share questions (P across checks)
    assert set(calls) == distinct and set(calls.values()) == {1}
    assert log_metrics(log)["scored"] == 12


def test_a_malformed_answer_is_a_scored_failure_with_its_reason(tmp_path):
    def sometimes_prose(text: str, config) -> str:
        p = probability_for(text)
        return "I would rather not say." if p < 0.3 else structured(text, config)

    log = run("consistency/negation", mock(sometimes_prose), tmp_path, limit=12)
    scores = [s.scores["consistency_scorer"] for s in log.samples]
    failed = [s for s in scores if s.value["failed"]]
    assert failed and len(failed) < len(scores)
    for s in failed:
        assert "no probability in the answer" in s.explanation
        assert "rather not say" in s.metadata["error"]
        assert s.value["arbitrage"] is None
    values = log_metrics(log)
    assert values["failed"] == len(failed) and values["scored"] == len(scores) - len(failed)

    # the scored tuples' metrics are cc score's over the tuples whose answers were all readable
    summary = summary_of_cc_score(log.location, tmp_path / "scored")
    same_as_summary(values, summary)
    assert summary["checks"]["NegChecker"]["unscorable"] == len(failed)
    assert all("no forecast: no probability in the answer" in e["message"] for e in summary["errors"])


def test_cot_forecaster_runs_on_inspects_model(tmp_path):
    def cot(text: str, config) -> str:
        if config.response_schema is None:  # the free-text reasoning step
            return f"Thinking it through. Probability: {probability_for(text):.2f}"
        return json.dumps({"reasoning_summary": "read back", "prob": 0.25})

    log = run("consistency/negation", mock(cot), tmp_path, limit=2, forecaster="cot")
    for sample in log.samples:
        answers = sample.scores["consistency_scorer"].metadata["answers"]
        assert {a["prob"] for a in answers.values()} == {0.25}
    assert log_metrics(log)["arbitrage_violated"] == 1.0  # 0.25 + 0.25 != 1


def test_export_of_a_cc_run_reads_back_with_the_same_metrics(tmp_path):
    log = run("consistency/all", mock(structured), tmp_path, limit=2, checks="and,or")
    summary = summary_of_cc_score(log.location, tmp_path / "scored")
    target = tmp_path / "exported.eval"
    result = subprocess.run(
        [str(CC), "export", "inspect", str(tmp_path / "scored"), "-o", str(target)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    from inspect_ai.log import read_eval_log

    exported = read_eval_log(str(target))
    assert len(exported.samples) == 4
    same_as_summary(log_metrics(exported), summary)
    same_as_summary(log_metrics(log), summary_of_cc_score(target, tmp_path / "rescored"))


@pytest.mark.parametrize(
    ("text", "prob"),
    [
        ('{"reasoning": "x", "prob": 0.3}', 0.3),
        ('```json\n{"probability": "42%"}\n```', 0.42),
        ("Weighing it all. Probability: 0.61", 0.61),
        ("I'd say 35% overall.", 0.35),
        ("0.7", 0.7),
    ],
)
def test_answers_are_read_in_the_shapes_models_give(text, prob):
    answer = parse_answer(text)
    assert answer.ok and answer.prob == pytest.approx(prob)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty answer"),
        ('{"prob": 1.7}', "outside [0, 1]"),
        ('{"prob": "high"}', "not a number"),
        ("somewhere between 20% and 40%", "no probability"),
    ],
)
def test_unreadable_answers_say_why(text, reason):
    answer = parse_answer(text)
    assert not answer.ok and reason in answer.error


def test_without_need_nothing_imports_inspect():
    code = (
        "import sys\n"
        "from consistency.__main__ import main\n"
        "for argv in (['cc', 'checks'], ['cc', 'version'], ['cc', 'score', '--help']):\n"
        "    sys.argv = argv\n"
        "    try:\n        main()\n    except SystemExit:\n        pass\n"
        "import consistency.evaluation, consistency.evaluation.scoring, consistency.forecasters\n"
        "print('inspect_ai' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip().splitlines()[-1] == "False"


def test_each_epoch_asks_again_and_every_epoch_counts_as_cc_score_counts_it(tmp_path):
    calls: Counter = Counter()
    noisy = Counter()

    def drifting(text: str, config) -> str:  # a second ask of the same question gets another answer
        noisy[text] += 1
        p = min(0.99, probability_for(text) + 0.05 * (noisy[text] - 1))
        return json.dumps({"reasoning": "again", "prob": round(p, 2)})

    (log,) = inspect_eval(
        "consistency/negation",
        model=mock(lambda t, c: drifting(t, c), calls),
        task_args={"limit": 3},
        epochs=2,
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success"
    assert set(calls.values()) == {2}
    values = log_metrics(log)
    assert values["scored"] == 6
    same_as_summary(values, summary_of_cc_score(log.location, tmp_path / "scored"))


def test_bad_task_parameters_stop_before_any_call():
    from consistency.forecasters.loading import ForecasterSpecError
    from consistency.integrations.inspect.solvers import forecaster_tuple
    from consistency.integrations.inspect.tasks import consistency_task

    with pytest.raises(ForecasterSpecError, match="the model is inspect's --model"):
        forecaster_tuple("gpt-4o")  # cc would read a bare model as the basic forecaster on it
    with pytest.raises(ValueError, match="no such file or directory"):
        consistency_task(["neg"], tuples="/no/such/tuples")
    with pytest.raises(ValueError, match="expected key=value"):
        consistency_task(["neg"], limit=1, forecaster="cot", forecaster_options="oops")


def test_inspects_openai_check_is_relaxed_for_the_pinned_release_only(monkeypatch):
    import openai
    from inspect_ai._util.error import PrerequisiteError
    from inspect_ai.model._providers import providers

    from consistency.integrations.inspect.compat import PINNED_OPENAI, accept_pinned_openai

    accept_pinned_openai()
    accept_pinned_openai()  # idempotent: wrapped once
    assert getattr(providers.validate_openai_client, "_consistency_wrapped", False)
    for key in [k for k in os.environ if k.startswith("AZURE_OPENAI")]:
        monkeypatch.delenv(key)
    if openai.__version__ == PINNED_OPENAI:
        providers.validate_openai_client("OpenAI API")  # accepted
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", "x")
        with pytest.raises(PrerequisiteError, match=r"3\.4\.0"):  # Azure keeps inspect's own check
            providers.validate_openai_client("OpenAI API")
