"""`cc attack` / `consistency.attack`: the adversarial search against scripted forecasters with known weaknesses."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from consistency.attack import Candidate, SearchOptions, attack
from consistency.attack.mutations import DETAIL_MARK as ATTACK_MARK
from consistency.attack.run import load_seeds
from consistency.checks import get_check
from consistency.cli import app
from consistency.fake_openai import ScriptedServer
from consistency.fake_openai.rules import RULES, in_planted_region
from consistency.fake_openai.worlds import DETAIL_MARK as WORLDS_MARK
from consistency.jsonl import iter_json_lines
from consistency.llm import LLMSettings

FAST = LLMSettings(timeout=5, max_backoff=0.05)
THRESHOLD = 0.01
runner = CliRunner()
_QUESTION = re.compile(r"^Question: (.*)$", re.M)


pytestmark = pytest.mark.usefixtures("in_tmp_dir")


def lines(path: Path) -> list[dict]:
    return [obj for _, obj in iter_json_lines(path)]


def asked_titles(srv: ScriptedServer, start: int = 0) -> list[str]:
    """Titles of the forecasts the server was asked for (one per forecast request)."""
    return [m.group(1) for r in srv.requests[start:] if (m := _QUESTION.search(r.last_user_text))]


def in_region(e) -> bool:
    return any(in_planted_region(e.tuple[f]["title"]) for f in e.check.field_names)


def test_against_a_planted_weakness_the_search_beats_uniform_sampling_and_finds_the_region(tmp_path):
    with ScriptedServer(RULES["planted"]()) as srv:
        result = attack(srv.model_spec(), budget=150, out=tmp_path / "a", llm=FAST)
        forecasts = asked_titles(srv)
    s = result.summary
    assert s["forecasts"]["search"] == 150 and s["forecasts"]["baseline"] <= 150
    assert len(forecasts) == len(set(forecasts))  # never a question twice, search and baseline together
    assert s["attack_mean_violation"] >= 3 * s["random_mean_violation"] and s["attack_mean_violation"] > THRESHOLD
    assert len(result.found) == 20 and sum(map(in_region, result.found)) / len(result.found) > 0.5
    log = lines(tmp_path / "a" / "search_log.jsonl")
    uniform = [e for e in log if e["sampler"] == "baseline"]
    assert sum(any(in_planted_region(t) for t in e["titles"]) for e in uniform) < len(uniform) / 4
    # lineage: a returned tuple made by a mutation names its weak question and the mutation
    mutated = [e for e in result.found if e.family.startswith("mutate:")]
    assert mutated and all(e.lineage["weak_question"]["id"] and e.lineage["mutation"] for e in mutated)
    assert s["families"][mutated[0].family]["returned"] >= 1
    assert "Most violated tuples" in (tmp_path / "a" / "report.md").read_text()


def test_against_constant_half_the_search_moves_to_the_checks_where_half_is_incoherent(tmp_path):
    incoherent = {"BUT", "COND", "CONDCOND"}  # 0.5 everywhere passes NEGATION, PARAPHRASE, AND, OR, EXPEVIDENCE...
    with ScriptedServer(RULES["constant"]()) as srv:
        result = attack(srv.model_spec(), budget=120, out=tmp_path / "c", llm=FAST)
    s = result.summary
    violated = [e for e in result.found if e.violation > THRESHOLD]
    assert violated and {e.check.name for e in violated} <= incoherent
    log = lines(tmp_path / "c" / "search_log.jsonl")
    share = {
        sampler: sum(e["check"] in incoherent for e in rows) / len(rows)
        for sampler in ("search", "baseline")
        if (rows := [e for e in log if e["sampler"] == sampler])
    }
    assert share["search"] > 0.6 > share["baseline"]
    for name in incoherent & {e.check.name for e in violated}:
        assert s["per_check"][name]["found"]["above_threshold"] >= 1
    assert all(s["per_check"][c]["found"]["above_threshold"] == 0 for c in ("NEGATION", "PARAPHRASE", "EXPEVIDENCE"))


def test_against_a_coherent_forecaster_it_finds_nothing_and_says_so(tmp_path):
    with ScriptedServer(RULES["coherent"]()) as srv:
        res = runner.invoke(app, ["attack", "-f", srv.model_spec(), "-b", "80", "-o", "coh", "--no-baseline"])
    assert res.exit_code == 0, res.output
    assert "Nothing found above the threshold (0.01)" in res.output
    summary = json.loads((tmp_path / "coh" / "attack.json").read_text())["summary"]
    assert summary["found_above_threshold"] == 0 and summary["attack_mean_violation"] == 0.0
    assert summary["forecasts"]["baseline"] is None


def test_the_returned_benchmark_re_evaluates_from_the_response_cache_with_no_new_call(tmp_path):
    with ScriptedServer(RULES["planted"]()) as srv:
        spec = srv.model_spec()
        res = runner.invoke(app, ["attack", "-f", spec, "-b", "60", "-k", "6", "-o", "att", "--no-baseline"])
        assert res.exit_code == 0, res.output
        before = len(srv.requests)
        ev = runner.invoke(app, ["evaluate", "-f", spec, "-t", "att/tuples", "-o", "ev", "--json"])
        assert ev.exit_code == 0, ev.output
        assert len(srv.requests) == before  # every forecast came from the response cache
    found = {e["key"]: e for e in lines(tmp_path / "att" / "search_log.jsonl") if e["returned"]}
    expected = sorted(e["violation"] for e in found.values())
    got = sorted(
        line["violation_data"]["default"]["violation"]
        for path in (tmp_path / "ev").glob("*Checker.jsonl")
        for line in lines(path)
    )
    assert got == pytest.approx(expected) and len(got) == 6
    sc = runner.invoke(app, ["score", "att/forecasts", "-o", "scored", "--json"])
    assert sc.exit_code == 0, sc.output
    for path in (tmp_path / "att" / "tuples").glob("*.jsonl"):
        for tup in lines(path):  # lineage travels with the tuple
            assert {"violation", "family", "lineage"} <= set(tup["metadata"]["attack"])


def test_the_budget_is_a_hard_cap_through_retries_and_resumes(tmp_path):
    from consistency.fake_openai import Fault, every_nth

    rule = every_nth(RULES["planted"](), 3, Fault.server_error(500))  # a third of the requests fail and are retried
    with ScriptedServer(rule) as srv:
        first = attack(srv.model_spec(), budget=7, out=tmp_path / "b", options=SearchOptions(width=8), llm=FAST)
        assert first.summary["forecasts"]["search"] <= 7
        titles = asked_titles(srv)
        assert len(set(titles)) <= 7 + first.summary["forecasts"]["baseline"]
        srv.reset()
        again = attack(srv.model_spec(), budget=7, out=tmp_path / "b", resume=True, llm=FAST)
        assert asked_titles(srv) == []  # nothing new to spend
        more = attack(srv.model_spec(), budget=12, out=tmp_path / "b", resume=True, llm=FAST, baseline=False)
        new = asked_titles(srv)
    assert again.summary["forecasts"]["search"] <= 7
    assert more.summary["forecasts"]["search"] <= 12 and len(set(new)) <= 5 + 0
    assert not set(new) & set(titles)


def _spawn(spec: str, out: Path, cache: Path, *extra: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "consistency", "attack", "-f", spec, "-b", "90", "-o", str(out), "--no-baseline"]
    env = os.environ | {"CC_CACHE_DIR": str(cache)}
    return subprocess.Popen(
        [*cmd, "--concurrency", "4", *extra], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def test_a_search_killed_with_sigkill_resumes_without_forecasting_again(tmp_path):
    with ScriptedServer(RULES["planted"](), latency=0.03) as srv:
        whole = _spawn(srv.model_spec(), tmp_path / "whole", tmp_path / "cache-whole")
        assert whole.wait(120) == 0, whole.stderr.read().decode()
        srv.reset()
        killed = _spawn(srv.model_spec(), tmp_path / "killed", tmp_path / "cache-killed")
        journal = tmp_path / "killed" / "journal.jsonl"
        deadline = time.time() + 60
        while time.time() < deadline and (not journal.exists() or journal.read_text().count('"kind": "forecast"') < 30):
            time.sleep(0.01)
        killed.send_signal(signal.SIGKILL)
        killed.wait(10)
        answered = {r["title"] for r in lines(journal) if r["kind"] == "forecast"}
        start = len(srv.requests)
        resumed = _spawn(srv.model_spec(), tmp_path / "killed", tmp_path / "cache-killed", "--resume")
        assert resumed.wait(120) == 0, resumed.stderr.read().decode()
        after = asked_titles(srv, start)
    assert 30 <= len(answered) < 90
    assert not set(after) & answered  # what was answered before the kill is not asked again
    charged = {k for r in lines(journal) if r["kind"] == "charge" for k in r["keys"]}
    assert len(charged) == 90
    same = [e["key"] for e in lines(tmp_path / "whole" / "search_log.jsonl") if e["returned"]]
    assert same == [e["key"] for e in lines(tmp_path / "killed" / "search_log.jsonl") if e["returned"]]


class OnlyNegations:
    """A researcher's proposal function: NEGATION over the weak tuples' longest-titled base questions."""

    name = "mine:long-negations"

    def propose(self, state):
        from consistency.attack import template_tuple
        from consistency.attack.families import bases_of

        check = get_check("NEGATION")
        bases = [q for weak in state.weak() for q in bases_of(weak.tuple).values()]
        for q in sorted(bases + state.pool, key=lambda q: -len(q.title)):
            yield Candidate(check, template_tuple(check, {"P": q}), self.name, {"weak_question": {"id": q.id}})


def test_a_plugged_in_family_is_searched_and_credited(tmp_path):
    with ScriptedServer(RULES["planted"]()) as srv:
        result = attack(srv.model_spec(), budget=30, out=tmp_path / "p", families=[OnlyNegations()], baseline=False)
    assert {e.family for e in result.found} == {"mine:long-negations"}
    assert result.summary["found_above_threshold"] >= 5 and all(map(in_region, result.found[:5]))


def test_a_generator_model_writes_variants_that_are_verified_before_any_forecast(tmp_path):
    with ScriptedServer(RULES["planted"]()) as srv:
        result = attack(
            srv.model_spec(), budget=40, out=tmp_path / "g", generator=srv.model_spec(), baseline=False, llm=FAST,
            checks=["neg", "para"],
        )  # fmt: skip
        forecast_titles = set(asked_titles(srv))
    journal = lines(tmp_path / "g" / "journal.jsonl")
    verdicts = [r for r in journal if r["kind"] == "verdict"]
    assert [r for r in journal if r["kind"] == "variant"] and verdicts
    rejected = [e for e in lines(tmp_path / "g" / "search_log.jsonl") if (e["error"] or "").startswith("verification")]
    assert len(rejected) == sum(not v["verdict"]["passed"] for v in verdicts)
    assert not any(e["titles"][1] in forecast_titles for e in rejected)  # a rejected tuple costs no forecast
    assert result.summary["generator_llm"]["calls"] >= len(verdicts)


def test_seeds_keep_their_base_questions_and_the_rules_are_selectable():
    seeds = load_seeds(None, [get_check("cond")])
    assert len(seeds["COND"]) == 24 and set(seeds["COND"][0]["metadata"]["base_sentences"]) == {"P", "Q"}
    assert {"default", "coherent", "constant", "planted"} <= set(RULES)
    assert ATTACK_MARK == WORLDS_MARK  # the coherent scripted forecaster reads the detail mutation
    out = subprocess.run(
        [sys.executable, "-m", "consistency.fake_openai", "--rule", "nope"], capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 2 and "planted" in out.stderr


def test_bad_settings_stop_with_one_sentence(tmp_path):
    res = runner.invoke(app, ["attack", "-f", "constant", "-b", "0", "-o", "x"])
    said = " ".join(res.output.replace("│", " ").split())  # the error box wraps at the runner's 80 columns
    assert (
        res.exit_code == 2 and "Invalid value for '--budget' / '-b': Input should be greater than or equal to 1" in said
    )
    res = runner.invoke(app, ["attack", "-f", "constant", "-b", "5", "--batch", "-o", "x"])
    assert res.exit_code == 2 and "--batch does not fit" in res.output
    res = runner.invoke(app, ["attack", "-f", "constant", "-b", "5", "-c", "nosuch", "-o", "x"])
    assert res.exit_code == 2 and "unknown check" in res.output
    first = runner.invoke(app, ["attack", "-f", "constant", "-b", "5", "-o", "y", "--no-baseline"])
    assert first.exit_code == 0, first.output
    again = runner.invoke(app, ["attack", "-f", "constant", "-b", "5", "-o", "y"])
    assert again.exit_code == 2 and "--resume" in again.output
    other = runner.invoke(app, ["attack", "-f", "uniform", "-b", "5", "-o", "y", "--resume", "--no-baseline"])
    assert other.exit_code == 2 and "another target" in other.output
    changed = runner.invoke(app, ["attack", "-f", "constant", "-b", "5", "-o", "y", "--resume", "--width", "3"])
    assert changed.exit_code == 2 and "options differs" in changed.output


def test_cc_report_shows_the_search_next_to_uniform_sampling(tmp_path):
    with ScriptedServer(RULES["planted"]()) as srv:
        attack(srv.model_spec(), budget=40, out=tmp_path / "att", llm=FAST)
    res = runner.invoke(app, ["report", "att", "-o", "r.html"])
    assert res.exit_code == 0, res.output
    page = (tmp_path / "r.html").read_text()
    section = page[page.index('<section id="attack"') :]
    assert "Adversarial search" in section and "returned vs uniform sampling" in section
    assert "Families: what paid off" in section and "mutate:" in section
    assert '<a href="#attack">' in page and "cc attack (the most violated tuples found)" in page


def test_the_coherent_rule_is_coherent_on_every_bundled_check_and_the_planted_one_only_slips_on_long_negations():
    from consistency.checks import all_checks
    from consistency.fake_openai.rules import coherent_probability, planted_probability
    from consistency.metrics.scoring import score_forecasts
    from consistency.models import ForecastingQuestion
    from consistency.prompts import question_block

    seeds = load_seeds(None, all_checks())
    for check in all_checks():
        asked = [
            [question_block(ForecastingQuestion.model_validate(t[f])) for f in check.field_names]
            for t in seeds[check.name]
        ]
        coherent = score_forecasts(check, [[coherent_probability(x) for x in row] for row in asked]).values("default")
        planted = score_forecasts(check, [[planted_probability(x) for x in row] for row in asked]).values("default")
        assert coherent.max() < 1e-9, check.name
        slips = [any(in_planted_region(t[f]["title"]) for f in check.field_names) for t in seeds[check.name]]
        assert [bool(v > THRESHOLD) for v in planted] == [
            s and v > THRESHOLD for s, v in zip(slips, planted, strict=True)
        ]
        assert (planted > THRESHOLD).any() == (check.name == "NEGATION"), check.name


def test_seeds_from_questions_or_from_an_earlier_attack(tmp_path):
    from consistency.datasets import benchmark_dir

    pool = (benchmark_dir() / "questions.jsonl").read_text().splitlines()[:8]
    (tmp_path / "q.jsonl").write_text("\n".join(pool) + "\n")
    first = attack("constant", budget=30, out=tmp_path / "q", questions=tmp_path / "q.jsonl", checks=["cond", "neg"])
    assert first.summary["found_above_threshold"] >= 1
    assert {e.check.name for e in first.found if e.violation > THRESHOLD} == {"COND"}
    # the found benchmark seeds a second attack (its tuples keep their base questions)
    again = attack("constant", budget=20, out=tmp_path / "t", tuples=tmp_path / "q" / "tuples", checks=["cond"])
    assert again.summary["found_above_threshold"] >= 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"title": "ok?"}\n{"title": 3}\n')
    res = runner.invoke(app, ["attack", "-f", "constant", "-q", str(bad), "-o", "z"])
    assert res.exit_code == 2 and "bad.jsonl:2: title" in res.output
