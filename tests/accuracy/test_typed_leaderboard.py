"""`cc leaderboard` and `cc report` on multiple-choice, numeric and date questions: the bundled typed set, resolved
here, asked over real HTTP of a coherent and an incoherent scripted forecaster with `cc evaluate -q`; each type's
board equals the mean scores computed by hand from the results files, ordered best first, with the intervals the
run summaries hold; the proxy board equals the distance between the two forecasters' distributions."""

from __future__ import annotations

import html
import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from consistency import distributions as dist
from consistency.cli import app
from consistency.datasets import bundled_sets
from consistency.fake_openai import ScriptedServer
from consistency.fake_openai.rules import coherent_rule, incoherent_rule
from consistency.jsonl import iter_json_lines
from consistency.models import ForecastingQuestion
from consistency.store import layout

runner = CliRunner()
PRIMARY = {"multiple_choice": "brier_score", "numeric": "crps_score", "date": "crps_score"}


def resolved_bundled() -> list[ForecastingQuestion]:
    """The bundled typed questions with outcomes: options in turn, values across each range (one beyond an open
    upper bound), dates as ISO days."""
    out = []
    for i, (_, obj) in enumerate(iter_json_lines(bundled_sets()["typed"].parent / layout.BENCHMARK_QUESTIONS)):
        q = ForecastingQuestion.model_validate(obj)
        if q.question_type == "multiple_choice":
            outcome: object = q.options[i % len(q.options)]  # type: ignore[index]
        elif q.id == "cc-typed-num-02":
            outcome = "above_upper_bound"
        else:
            value = float(q.range.value(0.15 + 0.04 * i))  # type: ignore[union-attr]
            outcome = str(np.datetime64(round(value), "s"))[:10] if q.question_type == "date" else value
        out.append(ForecastingQuestion.model_validate({**q.model_dump(mode="json"), "resolution": outcome}))
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("typed_leaderboard")
    questions = resolved_bundled()
    path = root / "resolved.jsonl"
    path.write_text("".join(json.dumps(q.model_dump(mode="json")) + "\n" for q in questions))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CC_CACHE_DIR", str(root / "cache"))
        for name, rule in (("coherent", coherent_rule(questions)), ("incoherent", incoherent_rule(questions))):
            with ScriptedServer(rule) as srv:
                spec = f"basic:{srv.model_spec(name)}"
                res = runner.invoke(app, ["evaluate", "-f", spec, "-q", str(path), "-o", str(root / name)])
            assert res.exit_code == 0, res.output
    return root


def typed_lines(run: Path) -> list[dict]:
    return [obj for _, obj in iter_json_lines(run / layout.GROUND_TRUTH_TYPED)]


def by_hand(line: dict) -> dict[str, float]:
    """A line's scores from its forecast and resolution: multi-class Brier and log (bits) by their definitions; CRPS
    by a fine midpoint rule of ∫ (F - [x ≥ t])² over the range (the outcome beyond a bound sits at the bound)."""
    q = ForecastingQuestion.model_validate(line["question"])
    if q.question_type == "multiple_choice":
        p = np.array(line["forecast"]["probs"])
        hit = q.options.index(q.resolution)  # type: ignore[union-attr]
        return {"brier_score": float(((p - np.eye(len(p))[hit]) ** 2).sum()), "log_score_bits": -math.log2(p[hit])}
    cdf = np.array(line["forecast"]["cdf"])
    t = float(np.clip(q.outcome_location(), 0.0, 1.0))
    x = (np.arange(400_000) + 0.5) / 400_000
    return {"crps_score": float(np.mean((np.interp(x, dist.locations(), cdf) - (x >= t)) ** 2))}


def board_json(runs: Path, *extra: str) -> dict:
    res = runner.invoke(app, ["leaderboard", str(runs / "coherent"), str(runs / "incoherent"), "--json", *extra])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_each_type_is_ranked_by_its_proper_scores_as_computed_by_hand(runs):
    doc = board_json(runs)
    assert doc["standings"] == []  # no yes/no question among them: no yes/no board, and no "no forecasts found"
    boards = {b["question_type"]: b for b in doc["by_type"]}
    assert list(boards) == ["multiple_choice", "numeric", "date"]
    assert boards["multiple_choice"]["scores"] == ["brier", "log"] and boards["numeric"]["scores"] == ["crps", "log"]
    names = {"coherent": "basic_coherent", "incoherent": "basic_incoherent"}
    for kind, board in boards.items():
        expected = {}
        for run, name in names.items():
            mine = [line for line in typed_lines(runs / run) if line["question"]["question_type"] == kind]
            for line in mine:  # the stored scores are the scores of the stored forecasts
                for key, value in by_hand(line).items():
                    assert line[key] == pytest.approx(value, abs=1e-6 if key == "crps_score" else 1e-12)
            summary = json.loads((runs / run / layout.GROUND_TRUTH_SUMMARY).read_text())["by_type"][kind]
            fields = ("brier_score", "crps_score", "log_score_bits")
            expected[name] = (len(mine), {f: [line[f] for line in mine if f in line] for f in fields}, summary)
        got = {s["forecaster"]: s for s in board["standings"]}
        assert set(got) == set(expected)
        for name, (n, values, summary) in expected.items():
            assert got[name]["n_questions"] == n == summary["scored"]
            for score, field in (("brier", "brier_score"), ("crps", "crps_score"), ("log", "log_score_bits")):
                assert (score in board["scores"]) == bool(values[field])
                if not values[field]:
                    continue
                shown = got[name]["scores"][score]
                assert shown["mean"] == pytest.approx(np.mean(values[field]), abs=1e-12)
                # the interval is the one the run's summary holds (one bootstrap everywhere); none for one question
                stored = summary[field]["ci95"]
                assert (shown["low"], shown["high"]) == (tuple(stored) if stored else (None, None))
        order = [s["forecaster"] for s in board["standings"]]
        first = PRIMARY[kind]
        assert order == sorted(expected, key=lambda f: (np.mean(expected[f][1][first]), f))
    # the incoherent rule moves every numeric distribution up a tenth of its range: its scores differ from the
    # coherent rule's there, and its multiple-choice forecasts (coherent) score the same
    numeric = {s["forecaster"]: s["scores"]["crps"]["mean"] for s in boards["numeric"]["standings"]}
    assert numeric["basic_coherent"] != pytest.approx(numeric["basic_incoherent"], abs=1e-6)
    mc = {s["forecaster"]: s["scores"]["brier"]["mean"] for s in boards["multiple_choice"]["standings"]}
    assert mc["basic_coherent"] == pytest.approx(mc["basic_incoherent"], abs=1e-12)


def test_the_log_method_orders_by_the_log_score_and_difficulty_says_it_is_unadjusted(runs):
    plain = board_json(runs)["by_type"]
    by_log = board_json(runs, "--method", "log")["by_type"]
    for board in by_log:
        assert board["scores"][0] == "log"
        means = [s["scores"]["log"]["mean"] for s in board["standings"]]
        assert means == sorted(means)
    for method in ("difficulty", "peer"):
        adjusted = board_json(runs, "--method", method)["by_type"]
        for before, after in zip(plain, adjusted, strict=True):
            assert after["standings"] == before["standings"]
            assert after["note"] == f"unadjusted: the {method} method is defined on yes/no Brier scores only"


def test_proxy_scores_are_distances_to_the_other_forecasters_distribution(runs):
    boards = {b["question_type"]: b for b in board_json(runs, "--method", "proxy-mean")["by_type"]}
    lines = {
        run: {line["question"]["id"]: line for line in typed_lines(runs / run)} for run in ("coherent", "incoherent")
    }
    x = (np.arange(400_000) + 0.5) / 400_000
    for kind, board in boards.items():
        ids = [q for q, line in lines["coherent"].items() if line["question"]["question_type"] == kind]
        distances = []
        for q in ids:
            a, b = lines["coherent"][q]["forecast"], lines["incoherent"][q]["forecast"]
            if kind == "multiple_choice":
                distances.append(float(((np.array(a["probs"]) - np.array(b["probs"])) ** 2).sum()))
            else:
                fa, fb = (np.interp(x, dist.locations(), f["cdf"]) for f in (a, b))
                distances.append(float(np.mean((fa - fb) ** 2)))
        # two forecasters: each one's leave-one-out pool is the other's forecast, so both score the same distance
        for standing in board["standings"]:
            assert standing["n_questions"] == len(ids)
            assert standing["scores"]["proxy"]["mean"] == pytest.approx(np.mean(distances), abs=1e-7)
    assert boards["numeric"]["standings"][0]["scores"]["proxy"]["mean"] > 1e-3  # the incoherent shift shows
    assert boards["multiple_choice"]["standings"][0]["scores"]["proxy"]["mean"] == pytest.approx(0.0, abs=1e-12)


def test_the_console_tables_and_the_report(runs, tmp_path):
    res = runner.invoke(app, ["leaderboard", str(runs / "coherent"), str(runs / "incoherent")])
    assert res.exit_code == 0, res.output
    for title in ("multiple choice questions", "numeric questions", "date questions"):
        assert title in res.output
    assert "no forecasts found" not in res.output
    # the results file named on its own is read as what it is, not as a long table of bad rows
    res = runner.invoke(app, ["leaderboard", str(runs / "coherent" / layout.GROUND_TRUTH_TYPED), "--json"])
    assert res.exit_code == 0 and "skipped" not in res.output, res.output
    assert [b["standings"][0]["forecaster"] for b in json.loads(res.stdout)["by_type"]] == ["basic_coherent"] * 3
    out = tmp_path / "report.html"
    res = runner.invoke(app, ["report", str(runs / "coherent"), str(runs / "incoherent"), "--out", str(out)])
    assert res.exit_code == 0, res.output
    page = html.unescape(re.sub(r"<[^>]+>", " ", out.read_text()))
    accuracy = page[page.index("3. Accuracy") :]
    assert "Multiple choice questions" in accuracy and "Numeric questions" in accuracy
    board = {b["question_type"]: b for b in board_json(runs)["by_type"]}
    for s in board["numeric"]["standings"]:  # the report shows the leaderboard's numbers
        assert f"{s['scores']['crps']['mean']:.4f}" in accuracy and f"{s['scores']['log']['mean']:.4f}" in accuracy


def test_a_bad_typed_line_is_named_and_skipped_and_a_repeat_is_an_error(runs, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(runs / "coherent", broken)
    path = broken / layout.GROUND_TRUTH_TYPED
    path.write_text(path.read_text() + '{"question": {"id": "x"}}\n')
    res = runner.invoke(app, ["leaderboard", str(broken), "--json"])
    assert res.exit_code == 0, res.output  # the bad line is left out, named with its reason; the rest is ranked
    n = len(path.read_text().splitlines())
    assert f"{path}:{n}" in res.stderr and "question_type" in res.stderr and "1 bad row(s) skipped" in res.stderr
    assert json.loads(res.stdout)["by_type"][0]["standings"][0]["n_questions"] == 8
    res = runner.invoke(app, ["leaderboard", str(runs / "coherent"), str(runs / "coherent")])
    assert res.exit_code != 0 and "choose --duplicates first or last" in res.output
