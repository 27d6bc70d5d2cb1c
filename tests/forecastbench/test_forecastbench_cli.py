"""The round trip through the command line: import → evaluate on the scripted server (real HTTP) → export →
re-import the forecasts → score; and the export's refusals. Runs on the bundled ForecastBench-format sample."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from consistency.fake_openai import ScriptedServer, probability_rule
from consistency.forecastbench import validate_forecast_set
from consistency.forecastbench.export import question_sets
from consistency.forecastbench.keys import key_of
from consistency.forecastbench.requests import BoardRequest
from consistency.forecastbench.synthetic import sample_dir
from consistency.models import ForecastingQuestion
from tests.cli.test_cli import cc
from tests.support.numbers import same_numbers

ROUND = "2026-03-01"


def _questions(path: Path) -> list[ForecastingQuestion]:
    return [ForecastingQuestion.model_validate_json(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def trip(tmp_path_factory):
    """The sample's older round imported, forecast by the scripted server, exported."""
    tmp = tmp_path_factory.mktemp("trip")
    with ScriptedServer(probability_rule()) as srv:
        spec = srv.model_spec()
        imported = cc("questions", "import", "forecastbench", f"fb:{ROUND}", "--datasets", sample_dir(),
                      "-o", "past.jsonl", "--tuples", "tuples", cwd=tmp)  # fmt: skip
        evaluated = cc("evaluate", "--questions", "past.jsonl", "-f", spec, "-o", "run", cwd=tmp)
        combos = cc("evaluate", "--tuples", "tuples", "-f", spec, "-o", "combo-run", cwd=tmp)
        partial = cc("evaluate", "--questions", "past.jsonl", "-f", spec, "-o", "partial", "--limit", "30", cwd=tmp)
    exported = cc("export", "forecastbench", "run", "--organization", "Test Lab", "--model", "Scripted Bot",
                  "--reasoning", "-o", "sub", cwd=tmp)  # fmt: skip
    return tmp, {"import": imported, "evaluate": evaluated, "combos": combos, "partial": partial, "export": exported}


def test_import_prints_the_counts_per_source(trip):
    tmp, runs = trip
    r = runs["import"]
    assert r.returncode == 0, r.stderr
    questions = _questions(tmp / "past.jsonl")
    assert len(questions) == 50 and "50 questions written to past.jsonl" in r.stdout
    assert "4 COMBINATION tuple(s) in tuples/CombinationChecker.jsonl" in r.stdout
    assert f"{ROUND}-llm.json (due {ROUND}): outcomes from {ROUND}_resolution_set.json" in r.stdout
    for line in r.stdout.splitlines():
        if line.startswith("│ ") and "total" not in line and "source" not in line:
            source, n, _ = (cell.strip() for cell in line.strip("│").split("│"))
            assert int(n) == sum(q.metadata["forecastbench"]["source"] == source for q in questions)


def test_the_export_is_what_forecastbench_accepts_and_holds_the_run_forecasts(trip):
    tmp, runs = trip
    assert runs["evaluate"].returncode == 0, runs["evaluate"].stderr
    r = runs["export"]
    assert r.returncode == 0, r.stderr
    path = tmp / "sub" / f"{ROUND}.Test Lab.scripted-bot.json"
    assert f"{path.relative_to(tmp)}: 50 forecasts (34 of 34 rows), passes ForecastBench's checks" in r.stdout
    doc = json.loads(path.read_text())
    assert (doc["organization"], doc["model"], doc["model_organization"]) == ("Test Lab", "Scripted Bot", "Test Lab")
    assert doc["question_set"] == f"{ROUND}-llm.json"
    keys = question_sets(_questions(tmp / "past.jsonl"))[ROUND].keys
    verdict = validate_forecast_set(doc, set(keys))
    assert verdict.ok, verdict.findings
    journal = {json.loads(line)["question_id"]: json.loads(line)["forecast"]
               for line in (tmp / "run" / "forecasts.jsonl").read_text().splitlines()}  # fmt: skip
    assert {k: v for k, v in verdict.rows.items()} == {key_of(q): f["prob"] for q, f in journal.items()}
    combos = [row for row in doc["forecasts"] if isinstance(row["id"], list)]
    assert len(combos) == 16 and {tuple(row["direction"]) for row in combos} == {(1, 1), (1, -1), (-1, 1), (-1, -1)}
    assert all(row["reasoning"] for row in doc["forecasts"])
    assert all(row["resolution_date"] is None for row in doc["forecasts"] if row["source"] == "manifold")


def test_the_reimported_forecasts_score_as_the_run(trip):
    tmp, _ = trip
    path = tmp / "sub" / f"{ROUND}.Test Lab.scripted-bot.json"
    r = cc("leaderboard", "--forecastbench", "past.jsonl", "run", path, "--all-rounds", "--bootstrap", "200", "--json",
           cwd=tmp)  # fmt: skip
    assert r.returncode == 0, r.stderr
    request = BoardRequest(str(tmp / "past.jsonl"), bootstrap=200, all_rounds=True)  # the same, as a library call
    same_numbers(json.loads(json.dumps(request.board([tmp / "run", path]).as_dict(200))), json.loads(r.stdout))
    rows = {row["Model"]: row for row in json.loads(r.stdout)["standings"]}
    run, file = rows["basic_scripted"], rows["Test Lab Scripted Bot"]
    assert {k: v for k, v in run.items() if k != "Model"} == {k: v for k, v in file.items() if k != "Model"}
    assert rows["Always 0.5"]["Overall"] == 50.0 and rows["Always 0.5"]["Brier Overall"] == 0.25
    resolved = [key_of(q.id) for q in _questions(tmp / "past.jsonl") if q.resolution is not None]
    singles = [k for k in resolved if not k.combination]
    assert run["N market"] == sum(k.market for k in singles) > 0
    assert run["N dataset"] == sum(not k.market for k in singles) == 12
    table = cc("leaderboard", "--forecastbench", "past.jsonl", "run", "--all-rounds", "--bootstrap", "50", cwd=tmp)
    header = next(line for line in table.stdout.splitlines() if "Rank" in line)
    assert [c.strip() for c in header.strip("┃").split("┃")] == [
        "Rank", "Model", "Dataset", "N", "95% CI", "Market", "N", "95% CI", "Overall", "N", "95% CI",
        "Brier D", "Brier M", "Brier O",
    ]  # fmt: skip
    assert "basic_scripted" in table.stdout and "rounds 2026-03-01" in table.stdout
    waits = cc("leaderboard", "--forecastbench", "past.jsonl", "run", "--bootstrap", "0", cwd=tmp)
    assert waits.returncode == 2 and "resolved market rows (ForecastBench needs 50)" in waits.stderr


def test_an_incomplete_run_is_refused_with_the_reason_unless_forced(trip):
    tmp, runs = trip
    assert runs["partial"].returncode == 0, runs["partial"].stderr
    r = cc("export", "forecastbench", "partial", "--organization", "Lab", "--model", "Bot", "-o", "out", cwd=tmp)
    assert r.returncode == 1
    assert "have no forecast; ForecastBench imputes 0.5 for them (more than 5% imputed: off the" in r.stderr
    assert f"refused {ROUND}.Lab.bot.json" in r.stderr and not (tmp / "out").exists()
    forced = cc("export", "forecastbench", "partial", "--organization", "Lab", "--model", "Bot", "-o", "out", "--force",
                cwd=tmp)  # fmt: skip
    assert forced.returncode == 0 and "written anyway" in forced.stdout
    assert (tmp / "out" / f"{ROUND}.Lab.bot.json").is_file()


def test_combination_rows_of_a_forecast_set_become_an_outcome_free_signal(trip):
    tmp, runs = trip
    assert runs["combos"].returncode == 0, runs["combos"].stderr
    path = tmp / "sub" / f"{ROUND}.Test Lab.scripted-bot.json"
    r = cc("questions", "import", "forecastbench", f"fb:{ROUND}", path, "--datasets", sample_dir(), "-o", "again.jsonl",
           "--runs", "signal", cwd=tmp)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "Test Lab Scripted Bot: 4 COMBINATION forecast line(s) in signal/" in r.stdout
    scored = cc("score", f"signal/{path.stem}", "-o", "scored", "--json", cwd=tmp)
    assert scored.returncode == 0, scored.stderr
    from_file = json.loads(scored.stdout)["checks"]["CombinationChecker"]
    from_run = json.loads((tmp / "combo-run" / "summary.json").read_text())["checks"]["CombinationChecker"]
    # The same questions forecast by the same deterministic server: the same violations, with no outcome used.
    for metric in ("default", "frequentist"):
        assert from_file[metric]["avg_violation"] == pytest.approx(from_run[metric]["avg_violation"], abs=1e-12)
        assert from_file[metric]["num_samples"] == 4


def test_tuples_of_any_check_from_forecastbench_questions_by_a_model(trip):
    from consistency.fake_openai.rules import RULES

    tmp, _ = trip
    with ScriptedServer(RULES["demo"]()) as srv:
        made = cc("generate", "--questions", "past.jsonl", "--check", "neg,combo", "-n", "2", "--model",
                  srv.model_spec(), "--instantiator", "llm", "--out", "llm-tuples", cwd=tmp)  # fmt: skip
    assert made.returncode == 0, made.stderr
    for name in ("NegChecker", "CombinationChecker"):
        lines = [json.loads(line) for line in (tmp / "llm-tuples" / f"{name}.jsonl").read_text().splitlines()]
        assert len(lines) == 2
        # The base questions keep their ForecastBench ids, so forecasts on them map back to ForecastBench.
        assert all(key_of(line["P"]["id"]) is not None for line in lines)
