"""MONOTONE everywhere checks go: `cc checks`, `cc evaluate` on the bundled benchmark, `cc report`, the
ArbitrageForecaster's check list (template and model-written chains), the inspect task and `cc attack`."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from consistency.checks import MONOTONE, get_check
from consistency.cli import app
from consistency.datasets import benchmark_dir
from consistency.evaluation import evaluate
from consistency.evaluation.asking import RunOptions
from consistency.fake_openai import ScriptedServer, hypocritical_rule
from consistency.fake_openai.rules import RULES
from consistency.forecasters import ArbitrageForecaster, BasicForecaster, load_forecaster
from consistency.llm import LLMSettings
from consistency.metrics.arbitrage import arbitrage
from consistency.models import ForecastingQuestion

FAST = LLMSettings(timeout=5, max_backoff=0.05, max_connections=16, cache=False)
runner = CliRunner()
X = ForecastingQuestion(
    id="x1",
    title="Will a crewed mission land on Mars by December 31, 2035?",
    body="Resolves YES if, from January 1, 2026 to December 31, 2035, astronauts land on Mars (per NASA or CNSA).",
    resolution_date="2035-12-31",
    created_date="2026-01-01",
)


pytestmark = pytest.mark.usefixtures("in_tmp_dir")


@pytest.fixture(scope="module")
def server():
    with ScriptedServer(hypocritical_rule()) as srv:
        yield srv


def test_cc_checks_lists_monotone_with_its_fields_worlds_and_condition():
    res = runner.invoke(app, ["checks", "--json"])
    assert res.exit_code == 0, res.output
    row = next(r for r in json.loads(res.output) if r["name"] == "MONOTONE")
    assert row["class_name"] == "MonotoneChecker" and row["aliases"] == ["mono", "monotone"]
    assert row["fields"] == {"P_1": "P_1", "P_2": "P_2", "P_3": "P_3"} and row["worlds"] == 4
    assert row["condition"] == ["P_1 ≤ P_2", "P_2 ≤ P_3"]


def test_arbitrage_forecaster_arbitrages_x_against_its_own_horizon_chain(server):
    f = ArbitrageForecaster(BasicForecaster(server.model_spec()), checks=["neg", "mono"], instantiator="template")
    out = f.forecast_sync(X)
    tree = out.metadata
    assert [e["name"] for e in tree] == ["P", "NegChecker", "MonotoneChecker"]
    step = tree[2]
    assert [step["data"][k]["title"][-5:] for k in ("P_2", "P_3")] == ["2036?", "2037?"]
    assert step["weights"] == {"P_1": 2.0, "P_2": 1.0, "P_3": 1.0}  # x carries the NEGATION step's weight
    answers = [step["data"][k]["elicited_prob"] for k in ("P_2", "P_3")]
    probs = np.array([[step["prob_before"], *answers]])
    solved = arbitrage(probs, MONOTONE.worlds, np.array([2.0, 1.0, 1.0]))
    assert out.prob == pytest.approx(solved.prices[0, 0], abs=1e-9)
    assert step["violation"] == pytest.approx(solved.violation[0], abs=1e-12)
    assert f.label.startswith("arbitrage-Nmonotone1_")
    # the spec form names checks the same way
    spec = load_forecaster(f"arbitrage:{server.model_spec()}", {"checks": "mono,neg", "instantiator": "template"})
    assert [c.name for c in spec.checks] == ["MONOTONE", "NEGATION"]


def test_arbitrage_forecaster_has_the_model_write_chains_for_questions_without_a_deadline(server):
    x = ForecastingQuestion(id="x2", title="Will at least 40 countries ratify the treaty?", body="Per the UN registry.")
    f = ArbitrageForecaster(BasicForecaster(server.model_spec()), checks=["mono"], model=server.model_spec())
    server.reset()
    out = f.forecast_sync(x)
    assert [r.tool_name for r in server.requests].count("ChainText") == 1
    step = out.metadata[1]
    assert set(step["data"]) == {"P_2", "P_3"} and step["certificate"]["gap"] < 1e-9


def test_arbitraging_on_chains_lowers_their_violation(server, tmp_path):
    averages = []
    for depth in (0, 1):
        base = BasicForecaster(server.model_spec())
        f = ArbitrageForecaster(base, checks=["mono"], depth=depth, instantiator="template")
        result = evaluate(f, checks=["mono"], limit=6, out=tmp_path / f"d{depth}", options=RunOptions(llm=FAST))
        assert not result.failures
        averages.append(result.report.files[0].stats()["default"].avg_violation)
    assert averages[0] > 0 and averages[1] < averages[0]


def test_cc_evaluate_scores_the_bundled_chains_and_cc_report_shows_them(tmp_path):
    with ScriptedServer(RULES["constant"](0.5)) as srv:
        res = runner.invoke(app, ["evaluate", "-f", srv.model_spec(), "-c", "mono,neg", "-n", "5", "-o", "run"])
    assert res.exit_code == 0, res.output
    scored = [json.loads(x) for x in (tmp_path / "run" / "MonotoneChecker.jsonl").read_text().splitlines()]
    assert len(scored) == 5 and set(scored[0]["line"]) == {"P_1", "P_2", "P_3"}
    assert all(line["violation_data"]["default"]["violation"] == 0.0 for line in scored)  # 0.5 everywhere: monotone
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert set(summary["checks"]) == {"MonotoneChecker", "NegChecker"}
    res = runner.invoke(app, ["report", "run", "-o", "r.html"])
    assert res.exit_code == 0, res.output
    assert "MONOTONE" in (tmp_path / "r.html").read_text()


@pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning")  # inspect's, as there
def test_the_inspect_task_for_monotone_scores_like_cc_score(tmp_path):
    pytest.importorskip("inspect_ai")
    from consistency.integrations.inspect.tasks import CHECK_TASKS
    from tests.integrations.test_inspect import mock, run, structured
    from tests.support.inspect_support import assert_same, cc_scores, log_metrics

    assert "monotone" in CHECK_TASKS and len(CHECK_TASKS) >= 11
    log = run("consistency/monotone", mock(structured), tmp_path, limit=4)
    assert len(log.samples) == 4
    assert set(log.samples[0].scores["consistency_scorer"].metadata["answers"]) == {"P_1", "P_2", "P_3"}
    assert_same(log_metrics(log), cc_scores(tmp_path, ["MonotoneChecker"], 4), multi=False)


def test_attack_proposes_chains_and_the_coherent_rule_holds_on_them(tmp_path):
    from consistency.attack import attack
    from consistency.fake_openai.rules import coherent_probability
    from consistency.metrics.scoring import score_forecasts
    from consistency.prompts import question_block

    chains = [json.loads(x) for x in (benchmark_dir() / "tuples" / "MonotoneChecker.jsonl").read_text().splitlines()]
    asked = [[question_block(ForecastingQuestion.model_validate(t[f])) for f in MONOTONE.field_names] for t in chains]
    probs = [[coherent_probability(x) for x in row] for row in asked]
    assert score_forecasts(MONOTONE, probs).values("default").max() < 1e-9
    assert any(row[0] < row[2] for row in probs)  # a later horizon is likelier, not merely equal
    with ScriptedServer(RULES["hypocritical"]()) as srv:
        result = attack(srv.model_spec(), budget=40, out=tmp_path / "a", checks=["mono"], llm=FAST, baseline=False)
    found = [e for e in result.found if e.check is get_check("mono")]
    assert found and max(e.violation for e in found) > 0.01
    assert result.summary["per_check"]["MONOTONE"]["found"]["above_threshold"] >= 1
