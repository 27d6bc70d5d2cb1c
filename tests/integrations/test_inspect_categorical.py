"""The inspect tasks on multiple-choice and numeric tuples, over real HTTP to the scripted server's worlds: the
solver asks for a distribution, the scorer puts it in the check's columns, and the numbers equal ``cc evaluate``'s
on the same tuples; a log and a ``cc`` run convert both ways."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.categorical_runs import PLAN, questions, write_tuples
from tests.support.inspect_support import require_inspect

require_inspect()

from inspect_ai import eval as inspect_eval  # noqa: E402

from consistency.checks import get_check  # noqa: E402
from consistency.cli import app  # noqa: E402
from consistency.fake_openai import ScriptedServer  # noqa: E402
from consistency.fake_openai.rules import coherent_rule, incoherent_rule  # noqa: E402
from consistency.integrations.inspect.logs import export_run, score_log  # noqa: E402
from consistency.jsonl import iter_json_lines  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning")

MODEL = "openai-api/scripted/scripted"
CHECKS = ",".join(PLAN)


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SCRIPTED_API_KEY", "not-a-real-key")
    monkeypatch.chdir(tmp_path)
    write_tuples(tmp_path / "tuples")


def run_inspect(server: ScriptedServer, tmp_path: Path, **task_args):
    (log,) = inspect_eval(
        "consistency/all",
        model=MODEL,
        task_args={"tuples": str(tmp_path / "tuples"), "checks": CHECKS, **task_args},
        model_base_url=server.base_url,
        max_retries=1,
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success", log.error
    return log


def per_sample(log) -> dict[str, float | None]:
    return {s.id: s.scores["consistency_scorer"].value["arbitrage"] for s in log.samples}


@pytest.mark.parametrize("forecaster", [None, "cot"])
def test_a_coherent_model_violates_no_new_check_in_inspect(tmp_path, forecaster):
    with ScriptedServer(coherent_rule(questions())) as srv:
        log = run_inspect(srv, tmp_path, **({"forecaster": forecaster} if forecaster else {}))
        asked = [r for r in srv.requests if r.wants_json]
    values = per_sample(log)
    assert len(values) == sum(len(v) for v in PLAN.values())
    assert all(v is not None and v < 1e-9 for v in values.values()), values
    metrics = log.results.scores[0].metrics
    assert metrics["failed"].value == 0 and metrics["arbitrage_mean"].value < 1e-9
    assert "partition4/arbitrage_mean" in metrics  # per check, the new ones too
    schemas = {tuple(sorted(r.schema["properties"])) for r in asked if r.schema}
    assert any("probabilities" in s for s in schemas) and any("p50" in s for s in schemas)


def test_inspect_and_cc_evaluate_agree_on_the_incoherent_rule_and_logs_convert_both_ways(tmp_path):
    with ScriptedServer(incoherent_rule(questions())) as srv:
        log = run_inspect(srv, tmp_path)
        res = CliRunner().invoke(app, ["evaluate", "-t", "tuples", "-f", f"basic:{srv.model_spec()}", "-o", "run"])
        assert res.exit_code == 0, res.output
    inspect_values = per_sample(log)
    by_check: dict[str, list[float]] = {}
    for sample_id, value in inspect_values.items():
        by_check.setdefault(sample_id.split(":")[0], []).append(value)
    for name in PLAN:
        cls = get_check(name).class_name
        expected = [
            ln["violation_data"]["default"]["violation"] for _, ln in iter_json_lines(Path("run") / f"{cls}.jsonl")
        ]
        assert sorted(by_check[cls]) == pytest.approx(sorted(expected), rel=1e-9, abs=1e-12), name
        assert max(expected) > 1e-3, name  # the incoherent rule is seen by every new check
    # the log scored as `cc score` scores forecast files, and a cc run exported as a log: the same numbers
    report = score_log(log.location, tmp_path / "scored")
    for scored in report.files:
        assert sorted(scored.scores.arbitrage.violation) == pytest.approx(sorted(by_check[scored.check.class_name]))
    metrics = export_run(Path("run"), tmp_path / "exported.eval")
    assert metrics["failed"] == 0 and metrics["scored"] == len(inspect_values)
    assert metrics["arbitrage_mean"] == pytest.approx(log.results.scores[0].metrics["arbitrage_mean"].value)
