"""ArbitrageForecaster against the scripted server's hypocritical rule (real HTTP, no mocks)."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from consistency.checks import get_check
from consistency.datasets import benchmark_dir
from consistency.evaluation import evaluate
from consistency.evaluation.asking import RunOptions
from consistency.evaluation.scoring import score_path
from consistency.fake_openai import ScriptedServer, hypocritical_probability, hypocritical_rule
from consistency.forecasters import ArbitrageForecaster, BasicForecaster, ForecasterSpecError, load_forecaster
from consistency.forecasters.arbitrage.step import arbitrage_step, step_weights
from consistency.generate import TemplateInstantiator
from consistency.llm import LLMSettings
from consistency.metrics.arbitrage import arbitrage
from consistency.models import ForecastingQuestion

NO_CACHE = LLMSettings(timeout=5, max_backoff=0.05, max_connections=16, cache=False)
QUESTIONS = benchmark_dir() / "questions.jsonl"
X = ForecastingQuestion(id="x1", title="Will the Artemis III crew land on the Moon before 2029?", body="Per NASA.")


pytestmark = pytest.mark.usefixtures("in_tmp_dir")


@pytest.fixture(scope="module")
def server():
    with ScriptedServer(hypocritical_rule()) as srv:
        yield srv


def logit(p: float) -> float:
    return math.log(p / (1 - p))


def sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-z))


def wrapped(srv, checks, depth, **kw) -> ArbitrageForecaster:
    base = BasicForecaster(srv.model_spec())
    return ArbitrageForecaster(base, checks=checks, depth=depth, instantiator="template", **kw)


def run_eval(srv, forecaster, out: Path, check: str, limit: int = 6):
    srv.reset()
    result = evaluate(forecaster, checks=[check], limit=limit, out=out, options=RunOptions(llm=NO_CACHE))
    prompts = [r.last_user_text for r in srv.requests]
    return result, prompts


@pytest.mark.parametrize("check", ["neg", "para"])
def test_violation_falls_with_depth_and_no_prompt_is_sent_twice(server, tmp_path, check):
    violations, calls = [], []
    for depth in range(4):
        f = wrapped(server, [check], depth)
        result, prompts = run_eval(server, f, tmp_path / f"r{depth}", check)
        stats = result.report.files[0].stats()["default"]
        assert stats.num_samples == 6 and not result.failures
        violations.append(stats.avg_violation)
        calls.append(len(prompts))
        duplicates = [p for p, n in Counter(prompts).items() if n > 1]
        assert not duplicates, f"depth {depth}: {len(duplicates)} prompt(s) reached the server twice"
        assert f.stats.base_calls == len(prompts)
    assert violations[0] > violations[1] > violations[2] > violations[3], violations
    if check == "neg":  # the issue's target for NEGATION at depth 3
        assert violations[3] <= 0.25 * violations[0], violations
    # memoisation: far fewer than the naive 2^r calls per field of the 6 tuples (12 questions)
    assert calls[3] < 12 * 2**3


def test_depth_one_negation_is_the_closed_form_of_the_two_base_answers(server):
    out = wrapped(server, ["neg"], 1).forecast_sync(X)
    tree = out.metadata
    a = tree[0]["elicited_prob"]
    not_p = tree[1]["data"]["not_P"]
    b = not_p["elicited_prob"]
    # the base answers are the rule's, for the prompts the base forecaster sent
    assert a == hypocritical_probability(f"Question: {X.title}")
    assert b == hypocritical_probability(f"Question: {not_p['title']}")
    assert a + b > 1.0  # jointly incoherent to begin with
    expected = sigmoid((logit(a) + logit(1 - b)) / 2)  # appendix D, weight 1 on each
    assert out.prob == pytest.approx(expected, abs=1e-9)
    assert tree[1]["violation"] > 0 and tree[1]["certificate"]["gap"] < 1e-9


def test_a_three_check_list_applies_the_checks_in_order_with_accumulating_weights(server):
    f = wrapped(server, ["neg", "para", "expev"], 1, related=str(QUESTIONS))
    out = f.forecast_sync(X)
    tree = out.metadata
    assert [e["name"] for e in tree] == ["P", "NegChecker", "ParaphraseChecker", "ExpectedEvidenceChecker"]
    assert [e["weights"]["P"] for e in tree[1:]] == [1.0, 2.0, 3.0]
    ee = tree[3]
    assert set(ee["weights"]) == {"P", "Q", "P_given_Q", "P_given_not_Q"}  # every field takes part
    assert all(ee["weights"][k] == 1.0 for k in ("Q", "P_given_Q", "P_given_not_Q"))
    # each step starts from the previous one's result; NEG and PARA steps are closed forms
    a, b, c = (
        tree[0]["elicited_prob"],
        tree[1]["data"]["not_P"]["elicited_prob"],
        tree[2]["data"]["para_P"]["elicited_prob"],
    )
    p1 = sigmoid((logit(a) + logit(1 - b)) / 2)
    p2 = sigmoid((2 * logit(p1) + logit(c)) / 3)
    assert tree[1]["prob_after"] == pytest.approx(p1, abs=1e-9)
    assert tree[2]["prob_before"] == pytest.approx(p1, abs=1e-12)
    assert tree[2]["prob_after"] == pytest.approx(p2, abs=1e-9)
    assert ee["prob_before"] == pytest.approx(p2, abs=1e-12)
    assert out.prob == ee["prob_after"]
    # the four-field step is the exact weighted arbitrage of all four fields
    check = get_check("expev")
    probs = np.array([[p2, *(ee["data"][k]["elicited_prob"] for k in check.field_names[1:])]])
    solved = arbitrage(probs, check.worlds, np.array([3.0, 1, 1, 1]))
    assert out.prob == pytest.approx(solved.prices[0, 0], abs=1e-9)


def test_every_field_of_a_four_field_check_moves_the_result():
    check = get_check("expev")
    weights, nxt = step_weights("accumulate", check.field_names, 2.0)
    assert weights == {"P": 2.0, "Q": 1.0, "P_given_Q": 1.0, "P_given_not_Q": 1.0} and nxt == 5.0
    base = {"P": 0.3, "Q": 0.6, "P_given_Q": 0.7, "P_given_not_Q": 0.2}
    p = arbitrage_step(check, base, weights).after
    for field in check.field_names[1:]:
        moved = arbitrage_step(check, base | {field: base[field] + 0.1}, weights).after
        assert abs(moved - p) > 1e-4, field


def test_weight_rules_differ_as_documented():
    fields = get_check("neg").field_names
    assert step_weights("cf", fields, 1.0) == ({"P": 1.0, "not_P": 1.0}, 1.0)  # cf grows by n - 2 = 0
    four = get_check("expev").field_names
    assert step_weights("cf", four, 3.0) == ({"P": 1.0, "Q": 3.0, "P_given_Q": 1.0, "P_given_not_Q": 1.0}, 5.0)
    assert step_weights("equal", four, 3.0)[0] == dict.fromkeys(four, 1.0)
    with pytest.raises(ValueError, match="unknown weight rule"):
        ArbitrageForecaster("constant", weights="mean", instantiator="template")


def test_repeated_checks_get_different_related_questions(server):
    f = wrapped(server, ["expev"] * 4, 1, related=str(QUESTIONS))
    out = f.forecast_sync(X)
    qs = [e["data"]["Q"]["id"] for e in out.metadata[1:]]
    assert len(set(qs)) == 4
    assert f.label == "arbitrage-4xEE1_basic_scripted"


class Recorded:
    """An instantiator that hands out recorded tuples (any Instantiator-shaped object plugs in)."""

    name = "recorded"

    def __init__(self) -> None:
        self.calls = 0

    def bases_for(self, check):
        return ("P",)

    async def instantiate(self, check, bases):
        self.calls += 1
        p = bases["P"]
        return {"P": p.model_dump(mode="json"), "not_P": {"id": f"not-{p.id}", "title": f"Will it fail that {p.title}"}}


def test_a_custom_instantiator_plugs_in():
    inst = Recorded()
    f = ArbitrageForecaster("constant", checks=["neg"], instantiator=inst)
    out = f.forecast_sync(X)
    assert inst.calls == 1 and out.metadata[1]["data"]["not_P"]["id"] == "not-x1"
    assert out.prob == pytest.approx(0.5)  # constant 0.5 and 0.5: coherent, nothing to do


def test_run_dir_has_trees_a_sidecar_and_budget_failures_are_recorded(server, tmp_path):
    f = wrapped(server, ["neg"], 2, max_calls=2)  # depth 2 NEGATION needs 3 distinct base forecasts (4 naive)
    result, _ = run_eval(server, f, tmp_path / "run", "neg", limit=2)
    assert result.failures and all("call budget" in fl["error"] for fl in result.failures)
    ok = wrapped(server, ["neg"], 2)
    result, _ = run_eval(server, ok, tmp_path / "ok", "neg", limit=2)
    assert not result.failures
    lines = [json.loads(x) for x in (result.run_dir / "arbitrage_steps.jsonl").read_text().splitlines()]
    assert {line["depth"] for line in lines} == {1, 2}
    assert len({(line["depth"], line["key"]) for line in lines}) == len(lines)  # one line per (depth, question)
    step = lines[0]["tree"][1]
    assert {"data", "weights", "prices", "violation", "certificate", "prob_before", "prob_after"} <= set(step)
    record = json.loads((result.run_dir / "forecasts.jsonl").read_text().splitlines()[0])
    tree = record["forecast"]["metadata"]
    # forecasts.jsonl keeps one level; the depth-1 trees below are the sidecar's lines, referred to by key
    ref = tree[0]["elicitation_metadata"]
    assert tree[0]["name"] == "P" and ref["arbitrage_steps"] == "arbitrage_steps.jsonl" and ref["depth"] == 1
    assert (1, ref["key"]) in {(line["depth"], line["key"]) for line in lines}
    top = next(line for line in lines if line["depth"] == 2 and line["question_id"] == record["question_id"])
    assert record["forecast"]["prob"] == top["prob"]


def test_cost_limit_is_a_recorded_failure(server, tmp_path, monkeypatch):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"scripted": {"input": 1000.0, "output": 1000.0}}))
    monkeypatch.setenv("CC_PRICES", str(prices))
    from consistency.llm.accounting import price_table

    price_table.cache_clear()
    try:
        server.reset()
        settings = NO_CACHE.model_copy(update={"cost_limit": 0.01, "max_connections": 1})
        result = evaluate(
            wrapped(server, ["neg"], 2),
            checks=["neg"],
            limit=3,
            out=tmp_path / "run",
            options=RunOptions(llm=settings, concurrency=1),
        )
    finally:
        price_table.cache_clear()
    assert result.failures and all("cost limit" in fl["error"] for fl in result.failures)
    assert server.count < 6


def test_specs_and_options():
    f = load_forecaster("arbitrage:constant", ["checks=neg; para", "depth=2", "instantiator=template"])
    assert isinstance(f, ArbitrageForecaster) and [c.name for c in f.checks] == ["NEGATION", "PARAPHRASE"]
    assert f.depth == 2 and f.label == "arbitrage-NP2_constant_0.5"
    # repeats of a check count as one run; a check whose code ends another's is not a repeat of it
    labels = {",".join(c): ArbitrageForecaster("constant", checks=c, instantiator="template").label
              for c in (["andor", "andor", "or"], ["neg", "neg", "para", "neg"], ["or", "andor"])}  # fmt: skip
    assert labels == {"andor,andor,or": "arbitrage-2xandoror1_constant_0.5",
                      "neg,neg,para,neg": "arbitrage-2xNPN1_constant_0.5",
                      "or,andor": "arbitrage-orandor1_constant_0.5"}  # fmt: skip
    g = load_forecaster("arbitrage", ["base=cot:gpt-4o-mini", "checks=neg"])
    assert g.base.label == "cot_gpt-4o-mini" and g.model == "gpt-4o-mini"
    with pytest.raises(ForecasterSpecError, match="unknown check"):
        load_forecaster("arbitrage:constant", ["checks=negg"])
    with pytest.raises(ForecasterSpecError, match="needs a model"):
        load_forecaster("arbitrage:constant", ["checks=neg"])  # llm instantiator, no model anywhere


def test_template_instantiator_is_the_default_shape():
    assert TemplateInstantiator().bases_for(get_check("neg")) == ("P",)


def test_cli_evaluate_with_the_arbitrage_forecaster(server, tmp_path):
    from typer.testing import CliRunner

    from consistency.cli import app

    args = ["evaluate", "--forecaster", "arbitrage", "-F", f"base={server.model_spec()}", "-F", "checks=neg; para"]
    args += ["-F", "depth=2", "-F", "instantiator=template", "--checks", "neg", "--limit", "2", "--no-cache"]
    args += ["--out", str(tmp_path / "cli"), "--json"]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    summary = json.loads(done.stdout[done.stdout.index("{") :])
    assert summary["questions"]["failed"] == 0
    assert (tmp_path / "cli" / "arbitrage_steps.jsonl").is_file()


def test_the_papers_list_metadata_loads_and_scores(tmp_path):
    """A line in the shape of the paper's ConsistentForecaster files: metadata is a list (the call tree)."""
    tree = [
        {"name": "P", "elicited_prob": 0.7, "elicitation_metadata": {"reasoning": "r"}},
        {
            "name": "NegChecker",
            "data": {"not_P": {"id": "n", "title": "Not P?", "elicited_prob": 0.4, "elicitation_metadata": None}},
        },
    ]
    line = {
        "line": {
            "P": {"question": {"id": "p", "title": "P?"}, "forecast": {"prob": 0.65, "metadata": tree}},
            "not_P": {"question": {"id": "n", "title": "Not P?"}, "forecast": {"prob": 0.4, "metadata": []}},
        }
    }
    path = tmp_path / "NegChecker.jsonl"
    path.write_text(json.dumps(line) + "\n")
    report = score_path([path])
    assert not report.errors and report.files[0].stats()["default"].num_samples == 1


def test_llm_instantiator_and_generated_related_questions(server):
    f = ArbitrageForecaster(server.model_spec(), checks=["neg", "expev", "expev"], depth=1)
    server.reset()
    out = f.forecast_sync(X)
    prompts = [r.last_user_text for r in server.requests]
    assert sum("same events as the source question" in p for p in prompts) == 2  # one request per EXPEVIDENCE
    assert "request number 2" in next(p for p in prompts if "request number 2" in p)
    q1, q2 = (e["data"]["Q"] for e in out.metadata[2:])
    assert q1["id"] != q2["id"] and q1["data_source"] == "arbitrage-related"
    assert [e["weights"]["P"] for e in out.metadata[1:]] == [1.0, 2.0, 5.0]


def test_ground_truth_mode_and_resolutions_do_not_leak(server, tmp_path):
    from consistency.evaluation.ground_truth import evaluate_questions

    path = tmp_path / "resolved.jsonl"
    rows = [
        {"id": f"g{i}", "title": f"Will event number {i} of the test happen?", "resolution": bool(i % 2)}
        for i in range(4)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = evaluate_questions(
        wrapped(server, ["neg"], 1), path, out=tmp_path / "gt", options=RunOptions(llm=NO_CACHE)
    )
    summary = json.loads((result.run_dir / "ground_truth_summary.json").read_text())
    assert summary["answered"] == 4 and summary["avg_brier_score"] is not None
    record = json.loads((result.run_dir / "forecasts.jsonl").read_text().splitlines()[0])
    assert record["forecast"]["metadata"][1]["data"]["not_P"]["resolution"] is None


def test_a_run_with_budget_failures_resumes_without_duplicate_sidecar_lines(server, tmp_path):
    from consistency.evaluation import resume

    first = evaluate(
        wrapped(server, ["neg"], 2, max_calls=2),
        checks=["neg"],
        limit=2,
        out=tmp_path / "run",
        options=RunOptions(llm=NO_CACHE),
    )
    assert first.failures
    done = resume(tmp_path / "run", forecaster=wrapped(server, ["neg"], 2), options=RunOptions(llm=NO_CACHE))
    assert not done.failures and done.meta.to_dict()["status"] == "complete"
    lines = [json.loads(x) for x in (done.run_dir / "arbitrage_steps.jsonl").read_text().splitlines()]
    assert len({(line["depth"], line["key"]) for line in lines}) == len(lines)


def test_the_hypocritical_rule_is_incoherent_and_deterministic():
    p = hypocritical_probability(f"Question: {X.title}")
    neg = hypocritical_probability(f"Question: Will \u201c{X.title}\u201d resolve NO?\nResolution criteria: ...")
    para = hypocritical_probability(f"Question: Will the following question resolve YES: \u201c{X.title}\u201d?")
    assert p == hypocritical_probability(f"Question: {X.title}")  # a pure function of the text
    assert all(0.01 <= v <= 0.99 for v in (p, neg, para))
    assert p + neg > 1.0  # both lean YES
    assert para != p  # two wordings disagree
