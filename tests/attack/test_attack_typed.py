"""`cc attack` over the checks of multiple-choice and numeric questions, over real HTTP against the scripted server's
worlds: a coherent world gives nothing to find; an incoherent one (option answers summing to 1.2, a CDF shifted
against its thresholds, a second wording's CDF shifted again) is found, and what the attack reports re-scores to
the same violations with `cc score`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from consistency.attack import attack
from consistency.attack.families import relation_tuple
from consistency.attack.mutations import Lineage, Variant, applies, template_variant
from consistency.attack.store import Journal, question_key
from consistency.checks import get_check
from consistency.cli import app
from consistency.datasets import typed_benchmark_dir
from consistency.fake_openai import ScriptedServer
from consistency.fake_openai.rules import coherent_rule, incoherent_rule
from consistency.jsonl import iter_json_lines
from consistency.llm import LLMSettings
from consistency.models import ForecastingQuestion

FAST = LLMSettings(timeout=5, max_backoff=0.05)
THRESHOLD = 0.01
TYPED_CHECKS = ["PARTITION3", "PARTITION4", "PARTITION5", "PARTITION6", "MC_BINARY", "CDF_THRESHOLDS",
                "NUMERIC_PARAPHRASE"]  # fmt: skip
runner = CliRunner()


pytestmark = pytest.mark.usefixtures("in_tmp_dir")


def lines(path: Path) -> list[dict]:
    return [obj for _, obj in iter_json_lines(path)]


def typed_questions() -> list[ForecastingQuestion]:
    return [ForecastingQuestion.model_validate(q) for q in lines(typed_benchmark_dir() / "questions.jsonl")]


def test_a_coherent_world_gives_the_search_nothing_to_find(tmp_path):
    with ScriptedServer(coherent_rule()) as srv:
        seeds = typed_benchmark_dir() / "tuples"
        result = attack(srv.model_spec(), budget=60, out=tmp_path / "c", checks=TYPED_CHECKS, tuples=seeds, llm=FAST)
    s = result.summary
    assert s["found_above_threshold"] == 0 and s["forecasts"]["search"] == 60
    log = lines(tmp_path / "c" / "search_log.jsonl")
    assert log and all(e["error"] is None for e in log)  # every tuple answered and scored
    assert max(e["violation"] for e in log) < 1e-9
    assert {e["check"] for e in log if e["sampler"] == "search"} == set(TYPED_CHECKS)
    assert "Nothing found above the threshold" in (tmp_path / "c" / "report.md").read_text()


def test_an_incoherent_world_is_found_and_its_violations_rescore_with_cc_score(tmp_path):
    with ScriptedServer(incoherent_rule()) as srv:
        res = runner.invoke(
            app,
            ["attack", "-f", srv.model_spec(), "--budget", "60", "-o", "i", "-t", "bundled:typed",
             "-c", ",".join(TYPED_CHECKS), "--timeout", "5"],
        )  # fmt: skip
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "i" / "attack.json").read_text())["summary"]
    found = {c for c, row in summary["per_check"].items() if row["found"]["above_threshold"]}
    assert {"PARTITION4", "CDF_THRESHOLDS", "NUMERIC_PARAPHRASE"} <= found
    assert "MC_BINARY" not in found or summary["per_check"]["MC_BINARY"]["found"]["max"] > THRESHOLD
    # the detail mutation of a weak numeric question is paired with it (a NUMERIC_PARAPHRASE the template cannot
    # make); the world answers an irrelevant detail as its original, so the pair shows nothing
    log = lines(tmp_path / "i" / "search_log.jsonl")
    pairs = [e for e in log if e["family"] == "mutate:detail" and e["check"] == "NUMERIC_PARAPHRASE"]
    assert pairs and all(e["lineage"]["role"] == "pair" and e["violation"] < 1e-9 for e in pairs)
    assert all(e["error"] is None for e in log)
    # the report shows a categorical field by its columns and a whole grid by its quartiles
    report = (tmp_path / "i" / "report.md").read_text()
    assert "X[0] " in report and "quartiles " in report
    # the forecasts the attack wrote are each field's own (probs, cdf, prob) and re-score to its violations
    recorded = {}
    for path in sorted((tmp_path / "i" / "forecasts").glob("*.jsonl")):
        check = get_check(path.stem)
        for obj in lines(path):
            kinds = {next(iter(e["forecast"])) for e in obj["line"].values()}
            assert kinds <= {"prob", "probs", "cdf"} and (kinds != {"prob"} or not check.categorical)
            recorded[(path.name, len(recorded))] = obj["violation_data"]["default"]["violation"]
    assert recorded
    res = runner.invoke(app, ["score", "i/forecasts", "-o", "scored"])
    assert res.exit_code == 0, res.output
    rescored = {}
    for path in sorted((tmp_path / "scored").glob("*Checker.jsonl")):
        for obj in lines(path):
            rescored[(path.name, len(rescored))] = obj["violation_data"]["default"]["violation"]
    assert list(rescored.values()) == pytest.approx(list(recorded.values()), rel=1e-9, abs=1e-12)
    res = runner.invoke(app, ["report", "i", "-o", "r.html"])
    assert res.exit_code == 0, res.output
    section = (tmp_path / "r.html").read_text().split('<section id="attack"')[1]
    assert "CDF_THRESHOLDS" in section and "quartiles " in section


def test_mutations_keep_a_question_s_type_and_yes_no_wordings_stay_with_yes_no_questions():
    by_type = {}
    for q in typed_questions():
        by_type.setdefault(q.question_type, q)
    mc, numeric = by_type["multiple_choice"], by_type["numeric"]
    detail = template_variant(numeric, "detail")
    assert detail is not None and detail.question.range == numeric.range and detail.question.question_type == "numeric"
    assert Lineage.of(detail.question).root == numeric.id and Lineage.of(detail.question).mutation_depth == 1
    assert template_variant(mc, "detail").question.options == mc.options  # type: ignore[union-attr]
    assert not applies("restate", mc) and not applies("double_negation", numeric) and applies("detail", mc)
    assert not applies("paraphrase", numeric, model=True)  # a model's prompts ask for YES/NO wordings
    check, tup = relation_tuple(numeric, detail)  # type: ignore[misc]
    assert check.name == "NUMERIC_PARAPHRASE" and tup["para_X"]["title"] == detail.question.title
    assert relation_tuple(mc, template_variant(mc, "detail")) is None  # no check pairs two wordings of a choice
    # a metadata key of another meaning under a lineage name is ignored, not a crash
    odd = numeric.model_copy(update={"metadata": {"mutation_depth": "deep", "category": "Economy"}})
    assert Lineage.of(odd).mutation_depth == 0 and Lineage.of(odd).category == "Economy"
    # same title and body, other options: two forecasts, not one
    other = mc.model_copy(update={"options": [*(mc.options or []), "Neither"]})
    assert question_key(other) != question_key(mc)
    assert isinstance(detail, Variant)


def test_a_journal_written_before_typed_forecasts_still_resumes(tmp_path):
    (tmp_path / "journal.jsonl").write_text(
        json.dumps({"kind": "forecast", "key": "k1", "prob": 0.25, "error": None, "title": "t"}) + "\n"
        + json.dumps({"kind": "forecast", "key": "k2", "prob": None, "error": "timeout", "title": "u"}) + "\n"
    )  # fmt: skip
    journal = Journal.open(tmp_path)
    try:
        assert journal.answers == {
            "k1": {"forecast": {"prob": 0.25}, "error": None},
            "k2": {"forecast": None, "error": "timeout"},
        }
    finally:
        journal.close()
