"""`cc correlate GT_DIR SCORED_DIR`: outputs paired with forecasters by name, left-outs listed with reasons,
ground-truth summaries accepted, differing check sets reported; `cc score` over many run directories."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from consistency.accuracy.inputs import ScoreInputError
from consistency.accuracy.pairing import pair_key
from consistency.accuracy.sources import find_sources
from consistency.cli import app
from consistency.datasets import sample_dir
from consistency.jsonl import iter_json_lines
from tests.accuracy.test_accuracy_cli import write_noisy_run
from tests.support.reference import FORECASTS, GROUND_TRUTH_RUN, needs_reference

NOISE = {"alpha": 0.02, "beta-1": 0.08, "gamma": 0.15, "delta": 0.25, "eps": 0.35}


def run(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def test_pair_key_normalises_the_papers_names():
    tuples = pair_key("BasicForecaster_gpt4o_mini_2024-07-18_tuples_scraped")
    assert tuples == pair_key("BasicForecaster_gpt4o-mini-2024-07-18_20240501_20240815")
    assert pair_key("CoT-GPT4o") == pair_key("cot_gpt4o") != pair_key("cot_gpt4o_mini")


@pytest.fixture(scope="module")
def paper(tmp_path_factory) -> Path:
    """The paper's flat layout: tuple directories and ground-truth directories named differently per forecaster."""
    root = tmp_path_factory.mktemp("paper")
    rng = np.random.default_rng(3)
    source = sample_dir() / "forecasts"
    questions = {}
    for path in source.glob("*.jsonl"):
        for _, obj in iter_json_lines(path):
            for entry in obj["line"].values():
                questions.setdefault(entry["question"]["id"], entry["question"])
    truth = {qid: rng.random() for qid in questions}
    outcome = {qid: bool(rng.random() < p) for qid, p in truth.items()}
    for name, noise in NOISE.items():
        tuples = root / "forecasts" / f"Basic_{name.replace('-', '_')}_tuples_scraped"
        write_noisy_run(tuples, noise, rng, skip=("NegChecker.jsonl",) if name == "eps" else ())  # eps lacks a check
        gt = root / "forecasts" / f"Basic_{name}_20240501_20240815"
        gt.mkdir()
        records = []
        for qid, q in questions.items():
            p = float(np.clip(truth[qid] + rng.normal(0, noise), 0.01, 0.99))
            records.append(json.dumps({"question": {**q, "resolution": outcome[qid]}, "forecast": {"prob": p}}))
        (gt / "ground_truth_results.jsonl").write_text("\n".join(records) + "\n")
    orphan = root / "forecasts" / "Basic_zeta_20240501_20240815"  # ground truth only: left out, with the reason
    shutil.copytree(root / "forecasts" / "Basic_gamma_20240501_20240815", orphan)
    return root


def test_score_many_directories_then_correlate_pairs_them(paper, tmp_path):
    scored = tmp_path / "scored"
    code, stdout, stderr = run("score", paper / "forecasts", "-o", scored)
    assert code == 0, stderr
    assert sorted(p.name for p in scored.iterdir()) == sorted(
        f"Basic_{n.replace('-', '_')}_tuples_scraped" for n in NOISE
    )
    assert "5 of 5 scored" in stderr
    code, stdout, stderr = run("correlate", paper / "forecasts", scored, "--max-brier", 1, "--bootstrap", 50, "--json")
    assert code == 0, stderr
    got = json.loads(stdout)
    assert set(got["pairs"]) == {f"Basic_{n}_20240501_20240815" for n in NOISE}
    assert got["left_out"] == {"Basic_zeta_20240501_20240815": "no consistency output matches this forecaster"}
    assert "left out Basic_zeta_20240501_20240815: no consistency output" in stderr
    # the forecaster without NEGATION: warned about, and the aggregate names the checks it used
    assert "Basic_eps_20240501_20240815 lacks NEGATION" in stderr and "--checks" in stderr
    assert got["pairs"]["Basic_eps_20240501_20240815"]["checks"] == sorted(set(got["aggregate_checks"]) - {"NEGATION"})
    # --checks fixes the set: the forecaster lacking one is left out with the reason
    code, stdout, stderr = run(
        "correlate", paper / "forecasts", scored, "--max-brier", 1, "--bootstrap", 50, "--json", "--checks", "neg,cond"
    )
    got = json.loads(stdout)
    assert got["aggregate_checks"] == ["NEGATION", "COND"]
    assert got["left_out"]["Basic_eps_20240501_20240815"] == "lacks check(s) NEGATION of --checks"
    assert "warning" not in stderr
    # --max-brier and --min-questions reasons; --pair overrides the automatic pairing
    code, stdout, stderr = run("correlate", paper / "forecasts", scored, "--max-brier", 0.0, "--json")
    assert code == 2 and "above --max-brier 0.0" in stderr and "need at least 3 paired forecasters" in stderr
    code, stdout, stderr = run("correlate", paper / "forecasts", scored, "--min-questions", 10_000)
    assert code == 2 and "too few resolved questions" in stderr
    override = f"Basic_zeta_20240501_20240815={scored / 'Basic_gamma_tuples_scraped'}"
    code, stdout, stderr = run(
        "correlate", paper / "forecasts", scored, "--max-brier", 1, "--bootstrap", 50, "--json", "--pair", override
    )
    got = json.loads(stdout)
    assert got["pairs"]["Basic_zeta_20240501_20240815"]["consistency"].endswith("Basic_gamma_tuples_scraped")
    assert "Basic_gamma_20240501_20240815" in got["left_out"]


def test_ground_truth_summaries_suffice_for_correlate(paper, tmp_path):
    """Only per-forecaster Brier scores (the published NewsAPI set has no per-question files)."""
    scored = tmp_path / "scored"
    assert run("score", paper / "forecasts", "-o", scored)[0] == 0
    code, stdout, _ = run("correlate", paper / "forecasts", scored, "--max-brier", 1, "--bootstrap", 20, "--json")
    full = json.loads(stdout)
    summaries = tmp_path / "summaries"
    for name, pair in full["pairs"].items():
        (summaries / name).mkdir(parents=True)
        (summaries / name / "ground_truth_summary.json").write_text(
            json.dumps({"total_questions": 30, "avg_brier_score": pair["brier"]}, indent=4)  # pretty-printed
        )
    code, stdout, stderr = run("correlate", summaries, scored, "--max-brier", 1, "--bootstrap", 20, "--json")
    assert code == 0, stderr
    got = json.loads(stdout)
    assert got["default"]["aggregate"]["r"] == pytest.approx(full["default"]["aggregate"]["r"], abs=1e-12)
    code, _, stderr = run("leaderboard", summaries, "--method", "peer")
    assert code == 2 and "ground-truth summary" in stderr and "not per-question forecasts" in stderr
    code, stdout, stderr = run("leaderboard", summaries, "--json")  # the Brier ranking needs only the means
    standings = json.loads(stdout)["standings"]
    assert code == 0 and [s["forecaster"] for s in standings] == sorted(
        full["pairs"], key=lambda n: full["pairs"][n]["brier"]
    )
    assert standings[0]["low"] is None and "ranked by the mean Brier score of their ground-truth summary" in stderr


@needs_reference
def test_published_directories_pair_by_normalised_name(tmp_path):
    scored = tmp_path / "scored"
    tuples = FORECASTS.parent.parent / "tuples_2028"
    assert run("score", FORECASTS, tuples, "-o", scored)[0] != 0  # tuples, not forecasts
    code, _, stderr = run("score", FORECASTS, "-o", scored / FORECASTS.name)
    assert code == 0, stderr
    code, _, stderr = run("correlate", GROUND_TRUTH_RUN, scored, "--json")
    assert code == 2 and "need at least 3 paired forecasters" in stderr  # one published forecaster: paired, too few
    assert "left out" not in stderr


def test_one_failing_run_directory_does_not_stop_the_others(tmp_path):
    good, bad = tmp_path / "good", tmp_path / "bad"
    shutil.copytree(sample_dir() / "forecasts", good)
    shutil.copytree(sample_dir() / "tuples", bad)  # tuples, not forecasts
    code, stdout, stderr = run("score", good, bad, "-o", tmp_path / "out", "--json")
    assert code == 1 and "1 of 2 scored" in stderr and "not forecast lines" in stderr
    assert list(json.loads(stdout)) == ["good"] and (tmp_path / "out" / "good" / "summary.json").is_file()


def test_runs_are_named_and_paired_by_the_forecaster_their_run_json_records(paper, tmp_path):
    """`cc evaluate` directories are time-stamped; the recorded forecaster name is what pairs them."""
    gt, scored = tmp_path / "gt", tmp_path / "scored"
    for i, name in enumerate(("alpha", "gamma", "delta")):
        target = gt / f"2026-11-2{i}T10-00-00_run"
        shutil.copytree(paper / "forecasts" / f"Basic_{name}_20240501_20240815", target)
        (target / "run.json").write_text(json.dumps({"forecaster": {"name": f"basic_{name}"}}))
        run_dir = tmp_path / "tuples" / f"2026-11-2{i}T11-00-00_run"
        shutil.copytree(paper / "forecasts" / f"Basic_{name}_tuples_scraped", run_dir)
        (run_dir / "run.json").write_text(json.dumps({"forecaster": {"name": f"basic_{name}"}}))
        assert run("score", run_dir, "-o", scored / run_dir.name)[0] == 0
    code, stdout, stderr = run("correlate", gt, scored, "--max-brier", 1, "--bootstrap", 20, "--json")
    assert code == 0, stderr
    assert set(json.loads(stdout)["pairs"]) == {"basic_alpha", "basic_gamma", "basic_delta"}
    code, stdout, _ = run("leaderboard", gt, "--json")
    assert {s["forecaster"] for s in json.loads(stdout)["standings"]} == {"basic_alpha", "basic_gamma", "basic_delta"}


def test_report_and_correlate_pair_a_mixed_set_identically(paper, tmp_path):
    """One rule (consistency.accuracy.pairing): published names, recorded names, recorded configurations
    (equal under different names; different under one name), a second output and an orphan."""
    from consistency.accuracy.sources import find_sources, pair
    from consistency.report.compare import compare
    from consistency.report.gather import gather

    forecasts, gt, scored = paper / "forecasts", tmp_path / "gt", tmp_path / "scored"
    shutil.copytree(forecasts, gt, ignore=shutil.ignore_patterns("*_tuples_scraped"))
    tuples = sorted(forecasts.glob("*_tuples_scraped"))
    shutil.copytree(tuples[0], tmp_path / "tuples" / "Basic_alpha_tuples_rerun")  # a second output for alpha
    recorded = {  # tuple run's name, ground-truth run's name, configurations equal?
        "delta": ("label_one", "label_two", True),
        "gamma": ("shared", "shared", False),
    }
    for name, (tuple_name, gt_name, same) in recorded.items():
        run_dir = tmp_path / "tuples" / f"2026-11-23T10-00-00_{name}"
        shutil.copytree(forecasts / f"Basic_{name}_tuples_scraped", run_dir)
        config = {"forecaster_class": "Noisy", "full_forecaster_config": {"sd": name}}
        (run_dir / "run.json").write_text(json.dumps({"forecaster": {"name": tuple_name, **config}}))
        truth_dir = gt / f"Basic_{name}_20240501_20240815"
        other = config if same else {**config, "full_forecaster_config": {"sd": "other"}}
        meta = {"kind": "ground_truth", "forecaster": {"name": gt_name, **other}}
        (truth_dir / "run.json").write_text(json.dumps(meta))
    for run_dir in [*tuples, *(tmp_path / "tuples").iterdir()]:
        if ("delta" in run_dir.name and "2026" not in run_dir.name) or (
            "gamma" in run_dir.name and "2026" not in run_dir.name
        ):
            continue  # their recorded runs stand for them
        assert run("score", run_dir, "-o", scored / run_dir.name)[0] == 0

    found = find_sources([gt, scored])
    pairing = pair(found.runs, found.truth, max_brier=None)
    by_correlate = {(str(r.path), str(found.truth[n].path)) for n, r in pairing.pairs.items()}
    left_by_correlate = {str(found.truth[k].path) if k in found.truth else k for k in pairing.left_out}

    runs = gather([str(p) for p in sorted(scored.iterdir())] + [str(p) for p in sorted(gt.iterdir())])
    comparison = compare(runs)
    by_report = {
        (str(e.consistency.path), str(e.accuracy.path)) for e in comparison.entries if e.consistency and e.accuracy
    }

    assert by_correlate == by_report
    assert left_by_correlate == set(comparison.unpaired)
    paired = {(Path(c).name, Path(g).name) for c, g in by_report}
    assert ("2026-11-23T10-00-00_delta", "Basic_delta_20240501_20240815") in paired  # same configuration
    assert {g for _, g in paired} == {f"Basic_{n}_20240501_20240815" for n in ("alpha", "beta-1", "delta", "eps")}
    reasons = dict(comparison.unpaired)
    assert "another class or configuration" in reasons[str(scored / "2026-11-23T10-00-00_gamma")]
    assert reasons[str(gt / "Basic_zeta_20240501_20240815")] == "no consistency output matches this forecaster"
    second = [why for path, why in reasons.items() if "alpha" in path]
    assert len(second) == 1 and second[0].startswith("a second consistency output")


def test_a_damaged_summary_inside_a_directory_is_skipped_and_named_not_fatal(paper, tmp_path):
    """Like a bad row: the file and the reason on stderr, the count, and the rest of the directory used."""
    forecasts = tmp_path / "forecasts"
    shutil.copytree(paper / "forecasts", forecasts)
    scored = tmp_path / "scored"
    assert run("score", forecasts, "-o", scored)[0] == 0
    broken_truth = forecasts / "Basic_omega_20240501_20240815" / "ground_truth_summary.json"
    broken_truth.parent.mkdir()
    broken_truth.write_text('{"forecaster": "omega", "avg_brier')  # cut off mid-write
    broken_run = scored / "Basic_alpha_tuples_scraped" / "summary.json"
    summary = json.loads(broken_run.read_text())
    for check in summary["checks"].values():
        del check["frequentist"]
    broken_run.write_text(json.dumps(summary))
    code, stdout, stderr = run("correlate", forecasts, scored, "--max-brier", 1, "--bootstrap", 20, "--json")
    assert code == 0, stderr
    flat = " ".join(stderr.split())
    assert f"skipped {broken_truth}:1: not a ground-truth summary (no avg_brier_score)" in flat
    assert f"skipped {broken_run}:1: not a `cc score` summary (missing 'frequentist')" in flat
    assert "2 bad row(s) skipped" in flat
    assert "Basic_alpha_20240501_20240815" not in json.loads(stdout)["pairs"]  # its output was the damaged one
    with pytest.raises(ScoreInputError, match="no avg_brier_score"):  # named on its own, it is still an error
        find_sources([broken_truth])
