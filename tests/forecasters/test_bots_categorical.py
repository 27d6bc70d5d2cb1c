"""forecasting-tools bots (``ft:``) on multiple-choice and numeric questions: the bot's own
``_run_forecast_on_multiple_choice`` / ``_run_forecast_on_numeric`` called through ``cc evaluate``, over real HTTP
to the scripted server, and their option lists and CDFs converted; a binary-only bot gives failed items."""

from __future__ import annotations

import asyncio
import json
import os
import re
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from consistency.checks import get_check
from consistency.cli import app
from consistency.fake_openai import ScriptedServer, probability_for, schema_rule
from consistency.fake_openai.categorical import World, asked_title
from consistency.jsonl import iter_json_lines
from tests.support.categorical_runs import PLAN, questions, sources, write_tuples

if find_spec("forecasting_tools") is None:
    reason = 'forecasting-tools is not installed: pip install -e ".[bots]"'
    if os.environ.get("CC_REQUIRE_EXTRAS") == "1":
        pytest.fail(f"CC_REQUIRE_EXTRAS=1 but {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)

BOT = Path(__file__).resolve().parents[1] / "support" / "bots" / "scripted_bot.py"
runner = CliRunner()
LEVELS = (5, 10, 25, 50, 75, 90, 95)
_FIRST_QUESTION = re.compile(r"^Question: (.*)$", re.M)


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    write_tuples(tmp_path / "tuples")


@pytest.fixture
def world():
    return World(questions())


@pytest.fixture
def server(monkeypatch, world):
    """The coherent world: option percentages and percentile lines for the bot's prompts about them, and
    ``Probability: NN%`` for yes/no questions (the world's probability of an option or a threshold event)."""

    def text(prompt: str) -> str:
        title = asked_title(prompt)
        p = world.event(title)
        return (
            f"Base rates first, then the news. Probability: {100 * (probability_for(title) if p is None else p):.4f}%"
        )

    with ScriptedServer(schema_rule(text=text, world=world)) as srv:
        monkeypatch.setenv("BOT_BASE_URL", srv.base_url)
        yield srv


def scored(run: Path, name: str) -> list[dict]:
    return [obj for _, obj in iter_json_lines(run / f"{get_check(name).class_name}.jsonl")]


def evaluate(bot: str) -> tuple[Path, dict]:
    options = ["-F", "enable_summarize_research=false", "-o", "run"]
    res = runner.invoke(app, ["evaluate", "-t", "tuples", "-f", f"ft:{BOT}::{bot}", *options])
    assert res.exit_code == 0, res.output
    return Path("run"), json.loads(Path("run/summary.json").read_text())


def test_a_bots_multiple_choice_and_numeric_methods_are_evaluated_end_to_end(server, world):
    from forecasting_tools import NumericDistribution, NumericReport, Percentile

    from consistency.forecasters.bots import library_question

    run, summary = evaluate("AllTypesBot")
    # the bot forecasts numbers but not dates (the library's default for dates raises): those are failed items
    failed = {f["question_id"]: f["error"] for f in summary["failures"]}
    dates = {q.id for q in questions() if q.question_type == "date"}
    assert set(failed) == dates and len(dates) == 2, failed  # the date and its second wording
    assert set(failed.values()) == {"NotImplementedError: Subclass must implement this method"}
    src = sources()
    # options: the world's probabilities, as the bot read them from its own LLM's percentages
    for line in scored(run, "MC_BINARY"):
        x = line["line"]["X"]
        source = src[x["question"]["id"]]
        assert x["forecast"]["probs"] == pytest.approx(world.choice(source.title, source.options), abs=1e-9)
        assert "Option" in x["forecast"]["metadata"]["reasoning"] or "%" in x["forecast"]["metadata"]["reasoning"]
        assert line["violation_data"]["default"]["violation"] < 1e-9  # the bot's yes/no answers agree
    assert scored(run, "PARTITION4")[0]["violation_data"]["default"]["violation"] < 1e-9
    # numbers: the library's own 201-point CDF through the world's percentiles (what it would post to Metaculus)
    lines = scored(run, "CDF_THRESHOLDS")
    assert {ln["line"]["X"]["question"]["id"] for ln in lines} == {"units", "gdp"}  # the date tuple is unscored
    for line in lines:
        q = src[line["line"]["X"]["question"]["id"]]
        r = q.range
        values = world.stated_quantiles(q.question_type, r, [p / 100 for p in LEVELS])
        declared = [Percentile(percentile=p / 100, value=v) for p, v in zip(LEVELS, values, strict=True)]
        asked = library_question(q)  # the library aggregates its predictions (here one) into the report's
        one = NumericDistribution.from_question(declared, asked)
        expected = asyncio.run(NumericReport.aggregate_predictions([one], asked)).get_cdf()
        forecast = line["line"]["X"]["forecast"]
        assert forecast["cdf"] == pytest.approx([p.percentile for p in expected], abs=1e-12)
        assert forecast["metadata"]["percentiles"]["50"] == pytest.approx(values[3], rel=1e-2)  # after standardising
        # the library's CDF is not quite the world's (it keeps a minimum slope): a small violation, computed
        violation = line["violation_data"]["default"]["violation"]
        assert np.isfinite(violation) and 0 <= violation < 0.05
    for line in scored(run, "NUMERIC_PARAPHRASE"):  # the same range: the same CDF for both wordings
        assert line["violation_data"]["default"]["violation"] < 1e-9
    assert len(scored(run, "NUMERIC_PARAPHRASE")) == len(PLAN["NUMERIC_PARAPHRASE"]) - 1
    asked = {m.group(1) for r in server.requests if (m := _FIRST_QUESTION.search(r.last_user_text))}
    assert {src["mc4"].title, src["units"].title, src["gdp"].title} <= asked


def test_a_binary_only_bot_asked_other_questions_gives_failed_items_with_its_reason(server):
    run, summary = evaluate("ScriptedBot")
    kinds = {q.id: q.question_type for q in questions()}
    failed = {f["question_id"]: f["error"] for f in summary["failures"]}
    assert {kinds[i] for i in failed} == {"multiple_choice", "numeric", "date"}
    assert {failed[i] for i in ("mc3", "units")} == {"NotImplementedError: binary questions only"}
    assert len(scored(run, "PARTITION4")) == 1  # its yes/no answers are scored
