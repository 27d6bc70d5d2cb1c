"""forecasting-tools bots as forecasters (``ft:``), over real HTTP to the scripted server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest
from typer.testing import CliRunner

from consistency.cli import app
from consistency.fake_openai import ScriptedServer, probability_for, schema_rule
from consistency.jsonl import iter_json_lines

BOT = Path(__file__).resolve().parents[1] / "support" / "bots" / "scripted_bot.py"
CHECKS = ("NegChecker", "AndChecker", "CondChecker")
NO_SUMMARY = "enable_summarize_research=false"
runner = CliRunner()

if find_spec("forecasting_tools") is None:
    reason = 'forecasting-tools is not installed: pip install -e ".[bots]"'
    if os.environ.get("CC_REQUIRE_EXTRAS") == "1":
        pytest.fail(f"CC_REQUIRE_EXTRAS=1 but {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)

_QUESTION = re.compile(r"^Question: (.*)$", re.M)


def percent_rule():
    """Free text: a short reasoning ending with ``Probability: NN%``, NN from the prompt's question line."""

    def text(prompt: str) -> str:
        found = _QUESTION.search(prompt)
        title = found.group(1).strip() if found else prompt
        return f"Base rates first, then the news. Probability: {round(probability_for(title) * 100)}%"

    return schema_rule(text=text)


pytestmark = pytest.mark.usefixtures("in_tmp_dir")


@pytest.fixture
def server(monkeypatch):
    with ScriptedServer(percent_rule()) as srv:
        monkeypatch.setenv("BOT_BASE_URL", srv.base_url)
        yield srv


def lines(path: Path) -> list[dict]:
    return [obj for _, obj in iter_json_lines(path)]


def evaluate(*args: str):
    res = runner.invoke(app, ["evaluate", "-c", "neg,and,cond", "-n", "2", "-o", "run", *args])
    return res, Path("run")


def test_a_bot_is_evaluated_over_http_and_its_probabilities_are_the_servers(server):
    res, run = evaluate("--forecaster", f"ft:{BOT}::ScriptedBot", "-F", "enable_summarize_research=false")
    assert res.exit_code == 0, res.output
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "complete"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["questions"]["failed"] == 0 and summary["questions"]["answered"] == summary["questions"]["total"]
    assert meta["forecaster"]["bot"].endswith(":ScriptedBot")
    assert meta["forecaster"]["full_forecaster_config"] == {"enable_summarize_research": False}
    seen = 0
    for check in CHECKS:
        scored = lines(run / f"{check}.jsonl")
        assert len(scored) == 2
        for line in scored:
            for entry in line["line"].values():
                forecast = entry["forecast"]
                assert forecast["prob"] == probability_for(entry["question"]["title"])
                assert "Probability:" in forecast["metadata"]["reasoning"]
                assert forecast["metadata"]["research"]
                seen += 1
    assert seen >= 14
    # research and forecast per question, both through the bot's own LLM wrapper; no summary call (-F)
    questions = summary["questions"]["total"]
    assert server.count == 2 * questions
    assert "not counted here" in res.output  # our ledger does not see the bot's litellm calls: say so
    prompts = [r.last_user_text for r in server.requests]
    assert sum(p.startswith("Find the news") for p in prompts) == questions


def test_a_rerun_of_an_unchanged_bot_is_answered_from_the_cache(server):
    res, _ = evaluate("--forecaster", f"ft:{BOT}::ScriptedBot", "-F", "enable_summarize_research=false")
    assert res.exit_code == 0, res.output
    asked = server.count
    res = runner.invoke(
        app,
        ["evaluate", "-c", "neg,and,cond", "-n", "2", "-o", "again", "-f", f"ft:{BOT}::ScriptedBot", "-F", NO_SUMMARY],
    )
    assert res.exit_code == 0, res.output
    assert server.count == asked  # nothing asked again
    first, second = lines(Path("run/NegChecker.jsonl")), lines(Path("again/NegChecker.jsonl"))
    assert [ln["line"]["P"]["forecast"] for ln in first] == [ln["line"]["P"]["forecast"] for ln in second]


def test_the_same_bot_as_the_base_of_the_arbitrage_forecaster(server):
    res, run = evaluate(
        "--forecaster",
        f"arbitrage:ft:{BOT}::ScriptedBot",
        "-F",
        "instantiator=template",
        "-F",
        "checks=neg",
    )
    assert res.exit_code == 0, res.output
    summary = json.loads((run / "summary.json").read_text())
    assert summary["questions"]["failed"] == 0
    # the arbitraged forecast of P combines the bot's answers on P and on its negation (template wording)
    asked = {m.group(1) for r in server.requests if (m := _QUESTION.search(r.last_user_text))}
    for line in lines(run / "NegChecker.jsonl"):
        title = line["line"]["P"]["question"]["title"]
        assert title in asked and f"Will \u201c{title}\u201d resolve NO?" in asked
        p, q = probability_for(title), probability_for(f"Will \u201c{title}\u201d resolve NO?")
        if abs(p + q - 1) > 0.02:  # the bot was inconsistent on this pair: arbitrage moved P towards 1 - q
            assert min(p, 1 - q) - 1e-9 <= line["line"]["P"]["forecast"]["prob"] <= max(p, 1 - q) + 1e-9


def test_a_bot_that_raises_gives_failed_items_with_its_reason_and_fails_fast(server):
    res, run = evaluate("--forecaster", f"ft:{BOT}::BrokenBot", "--concurrency", "1")
    assert res.exit_code == 1, res.output
    assert "ValueError: the parser could not read a probability" in res.output
    assert "raised the same error" in res.output  # fail-fast: the run stopped early
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "failed"
    journal = lines(run / "forecasts.jsonl")
    assert journal and all(r["forecast"] is None for r in journal)
    assert all("ValueError: the parser could not read a probability" in r["error"] for r in journal)


def test_one_failing_question_is_a_failed_item_and_the_rest_are_scored(tmp_path, server):
    bot = tmp_path / "picky.py"
    bot.write_text(
        f"import sys\nsys.path.insert(0, {str(BOT.parent)!r})\n"
        "from scripted_bot import ScriptedBot\n\n"
        "class PickyBot(ScriptedBot):\n"
        "    async def _run_forecast_on_binary(self, question, research):\n"
        "        if 'resolve NO' in question.question_text:\n"
        "            raise RuntimeError('no negations, please')\n"
        "        return await super()._run_forecast_on_binary(question, research)\n"
    )
    res, run = evaluate("--forecaster", f"ft:{bot}::PickyBot", "-F", "enable_summarize_research=false")
    assert res.exit_code == 0, res.output
    summary = json.loads((run / "summary.json").read_text())
    failures = summary["failures"]
    assert failures and all(f["error"] == "RuntimeError: no negations, please" for f in failures)
    assert summary["questions"]["answered"] > 0


def test_bad_specs_and_options_say_what_is_wrong(server):
    res = runner.invoke(app, ["evaluate", "-f", f"ft:{BOT}::NoSuchBot", "-n", "1"])
    assert res.exit_code == 2 and "has no bot 'NoSuchBot'" in res.output
    res = runner.invoke(app, ["evaluate", "-f", f"ft:{BOT}::ScriptedBot", "-F", "predictions=3", "-n", "1"])
    assert res.exit_code == 2 and "has no option 'predictions'" in res.output
    assert "predictions_per_research_report" in res.output
    res = runner.invoke(app, ["evaluate", "-f", f"ft:{BOT}::ScriptedBot", "-F", "publish_reports_to_metaculus=true"])
    assert res.exit_code == 2 and "never published" in res.output
    res = runner.invoke(app, ["evaluate", "-f", "ft:NoSuchTemplateBot", "-n", "1"])
    assert res.exit_code == 2 and "TemplateBot" in res.output


def test_the_librarys_template_bot_by_name_with_options():
    from consistency.forecasters import load_forecaster

    forecaster = load_forecaster(
        "ft:TemplateBot", ["predictions_per_research_report=3", 'llms={"researcher": "no_research"}']
    )
    assert type(forecaster.bot).__name__ == "TemplateBot"
    assert forecaster.bot.predictions_per_research_report == 3
    assert forecaster.bot.get_llm("researcher") == "no_research"
    assert forecaster.bot.publish_reports_to_metaculus is False
    assert forecaster.config() == {"predictions_per_research_report": 3, "llms": {"researcher": "no_research"}}
    # an llms entry given as an object is the library's GeneralLlm
    forecaster = load_forecaster("ft:TemplateBot", ['llms={"default": {"model": "openai/scripted", "temperature": 0}}'])
    llm = forecaster.bot.get_llm("default")
    assert type(llm).__name__ == "GeneralLlm" and llm.model == "openai/scripted"


def test_the_python_api_takes_a_bot_instance(tmp_path, server):
    sys.path.insert(0, str(BOT.parent))
    try:
        from scripted_bot import ScriptedBot
    finally:
        sys.path.remove(str(BOT.parent))
    from consistency.evaluation import evaluate as run_evaluation

    result = run_evaluation(ScriptedBot(enable_summarize_research=False), checks=["neg"], limit=2, out=tmp_path / "r")
    assert not result.failures
    meta = json.loads((result.run_dir / "run.json").read_text())
    assert meta["forecaster_spec"] == "ft:scripted_bot:ScriptedBot"
    line = lines(result.run_dir / "NegChecker.jsonl")[0]["line"]["P"]
    assert line["forecast"]["prob"] == probability_for(line["question"]["title"])
    # a second event loop in the same process (the template bots' class-level semaphore) works too
    again = run_evaluation(ScriptedBot(enable_summarize_research=False), checks=["neg"], limit=2, out=tmp_path / "s")
    assert not again.failures


def test_runs_without_a_bot_never_import_forecasting_tools(tmp_path):
    code = (
        "import sys\n"
        "from consistency.evaluation import evaluate\n"
        "evaluate('constant', checks=['neg'], limit=2, out=sys.argv[1])\n"
        "bad = [m for m in ('forecasting_tools', 'litellm', 'nest_asyncio') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "r")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_without_the_extra_ft_says_which_extra_to_install(tmp_path):
    code = (
        "import sys\n"
        "sys.modules['forecasting_tools'] = None  # as if the bots extra were not installed\n"
        "from typer.testing import CliRunner\n"
        "from consistency.cli import app\n"
        "res = CliRunner().invoke(app, ['evaluate', '-f', 'ft:TemplateBot', '-n', '1'])\n"
        "print(res.exit_code, res.output)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    said = " ".join(done.stdout.split())
    assert said.startswith("2 "), done.stdout + done.stderr
    assert (
        "ft: forecasters need forecasting-tools" in said
        and "install the 'bots' extra: pip install \"forecast-consistency[bots]\"" in said
        and '(in a clone: pip install -e ".[bots]")' in said
    )


def test_a_run_stopped_by_a_failing_bot_resumes_once_the_bot_is_fixed(tmp_path, server, monkeypatch):
    bot = tmp_path / "flaky.py"
    bot.write_text(
        f"import os, sys\nsys.path.insert(0, {str(BOT.parent)!r})\n"
        "from scripted_bot import ScriptedBot\n\n"
        "class FlakyBot(ScriptedBot):\n"
        "    async def _run_forecast_on_binary(self, question, research):\n"
        "        if os.environ.get('BOT_BROKEN'):\n"
        "            raise KeyError('settings')\n"
        "        return await super()._run_forecast_on_binary(question, research)\n"
    )
    monkeypatch.setenv("BOT_BROKEN", "1")
    res, run = evaluate("--forecaster", f"ft:{bot}::FlakyBot", "-F", NO_SUMMARY, "--concurrency", "1")
    assert res.exit_code == 1 and "raised the same error" in res.output
    monkeypatch.delenv("BOT_BROKEN")
    res = runner.invoke(app, ["evaluate", "--resume", str(run)])
    assert res.exit_code == 0, res.output
    summary = json.loads((run / "summary.json").read_text())
    assert summary["questions"]["failed"] == 0 and json.loads((run / "run.json").read_text())["status"] == "complete"
    line = lines(run / "NegChecker.jsonl")[0]["line"]["P"]
    assert line["forecast"]["prob"] == probability_for(line["question"]["title"])


_BLOCKING = """
import asyncio, os, sys, time
sys.path.insert(0, {bots!r})
from scripted_bot import ScriptedBot

RELEASE = {release!r}


class SlowBot(ScriptedBot):
    async def _run_forecast_on_binary(self, question, research):
        if "resolve NO" in question.question_text:  # the negations take long (until the test releases them)
            deadline = time.monotonic() + 30
            while not os.path.exists(RELEASE) and time.monotonic() < deadline:
                {wait}
        return await super()._run_forecast_on_binary(question, research)
"""


@pytest.mark.parametrize("wait", ["time.sleep(0.05)", "await asyncio.sleep(0.05)"], ids=["blocking", "async"])
def test_a_slow_bot_fails_only_its_slow_questions_even_when_it_blocks_its_event_loop(wait, tmp_path, server):
    release = tmp_path / "release"
    bot = tmp_path / "slow.py"
    bot.write_text(_BLOCKING.format(bots=str(BOT.parent), release=str(release), wait=wait))
    try:
        res, run = evaluate("-f", f"ft:{bot}::SlowBot", "-F", NO_SUMMARY, "--forecast-timeout", "15")
    finally:
        release.touch()  # the blocked bot threads finish (their answers are discarded)
    assert res.exit_code == 0, res.output
    summary = json.loads((run / "summary.json").read_text())
    failed = {f["title"] for f in summary["failures"]}
    researched = [r.last_user_text for r in server.requests if r.last_user_text.startswith("Find the news")]
    slow = {m.group(1) for text in researched if (m := _QUESTION.search(text)) and "resolve NO" in m.group(1)}
    assert slow and failed == slow  # the slow questions time out, and only they
    assert all(f["error"] == "timed out after 15 s" for f in summary["failures"])
    assert summary["questions"]["answered"] == summary["questions"]["total"] - len(slow) > 0


def test_a_mistyped_bot_file_is_refused_before_the_library_is_imported(tmp_path):
    (tmp_path / "mine.py").write_text("from forecasting_tools import ForecastBot\n\nclass MyBot(ForecastBot): ...\n")
    (tmp_path / "broken.py").write_text("class (:\n")
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from consistency.cli import app\n"
        "for spec in sys.argv[1:]:\n"
        "    res = CliRunner().invoke(app, ['evaluate', '-f', spec, '-n', '1', '-o', 'x'])\n"
        "    print(res.exit_code, ' '.join(res.output.split()))\n"
        "print('imported' if 'forecasting_tools' in sys.modules else 'not imported')\n"
    )
    specs = ["ft:nosuch.py::MyBot", "ft:mine.py::OtherBot", "ft:broken.py::MyBot"]
    done = subprocess.run([sys.executable, "-c", code, *specs], capture_output=True, text=True, cwd=tmp_path)
    said = done.stdout.splitlines()
    assert said[0] == "2 error nosuch.py: no such file", done.stdout + done.stderr
    assert said[1] == "2 error mine.py has no bot 'OtherBot' (its classes: MyBot)"
    assert said[2].startswith("2 error broken.py: not valid Python (invalid syntax")
    assert said[3] == "not imported"  # the library (seconds to import) was never needed to say so


def test_a_bot_file_imports_the_modules_beside_it(tmp_path, server):
    folder = tmp_path / "mybots"
    folder.mkdir()
    (folder / "sibling_base.py").write_text(BOT.read_text())  # a module beside the bot, not installed
    code = "from sibling_base import ScriptedBot\n\nclass SiblingBot(ScriptedBot): pass\n"
    (folder / "sibling_bot.py").write_text(code)
    res, run = evaluate("-f", f"ft:{folder / 'sibling_bot.py'}::SiblingBot", "-F", NO_SUMMARY)
    assert res.exit_code == 0, res.output
    summary = json.loads((run / "summary.json").read_text())
    assert summary["questions"]["failed"] == 0 and summary["questions"]["answered"] > 0


def test_a_bots_own_class_level_limiter_holds_across_the_threads_its_questions_run_on(tmp_path, monkeypatch):
    bot = tmp_path / "limited.py"
    bot.write_text(
        f"import asyncio, sys\nsys.path.insert(0, {str(BOT.parent)!r})\n"
        "from scripted_bot import ScriptedBot\n\n"
        "class LimitedBot(ScriptedBot):\n"
        "    _limiter = asyncio.Semaphore(2)  # at class level, as the template bots keep theirs\n\n"
        "    async def run_research(self, question):\n"
        "        async with self._limiter:\n"
        "            return await super().run_research(question)\n\n"
        "    async def _run_forecast_on_binary(self, question, research):\n"
        "        async with self._limiter:\n"
        "            return await super()._run_forecast_on_binary(question, research)\n"
    )
    with ScriptedServer(percent_rule(), latency=0.05) as srv:
        monkeypatch.setenv("BOT_BASE_URL", srv.base_url)
        res, run = evaluate("-f", f"ft:{bot}::LimitedBot", "-F", NO_SUMMARY, "--concurrency", "8")
        assert res.exit_code == 0, res.output
        assert 1 <= srv.max_in_flight <= 2
    summary = json.loads((run / "summary.json").read_text())
    assert summary["questions"]["failed"] == 0
