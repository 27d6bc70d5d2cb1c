"""`cc leaderboard` and `cc report` give one Brier interval for one run: the percentile bootstrap of the mean
(metrics.stats.bootstrap_mean_ci), which stays inside the score's range where a t-interval went below 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import consistency
from consistency.accuracy.ranking import leaderboard
from consistency.accuracy.table import ForecastTable
from consistency.metrics import bootstrap_mean_ci
from consistency.report.gather import read_run

CC = Path(sys.executable).parent / "cc"
QUESTIONS = Path(consistency.__file__).parent / "datasets" / "benchmark" / "questions.jsonl"


def cc(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"NO_COLOR": "1", "COLUMNS": "300"}
    return subprocess.run([str(CC), *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_a_skewed_brier_sample_gets_an_interval_inside_zero_one():
    # mostly near-perfect forecasts and two bad misses: a t-interval around the mean reaches below 0
    losses = np.array([0.0001] * 10 + [0.81, 0.9])
    n = len(losses)
    table = ForecastTable(
        forecaster=np.array(["f"] * n),
        question_id=np.array([f"q{i}" for i in range(n)]),
        prob=np.sqrt(losses),
        resolution=np.zeros(n),
        weight=np.ones(n),
        batch=np.array([""] * n),
        market_prob=np.full(n, np.nan),
        resolved_at=np.full(n, np.datetime64("NaT", "s")),
        scheduled_resolution=np.full(n, np.datetime64("NaT", "s")),
    )
    (standing,) = leaderboard(table, "brier")
    assert 0.0 <= standing.low <= standing.score <= standing.high <= 1.0
    assert (standing.low, standing.high) == bootstrap_mean_ci(table.prob**2)
    assert standing.n_questions == n


def test_leaderboard_and_report_show_the_same_interval_for_a_ground_truth_run(tmp_path):
    lines = [json.loads(line) for line in QUESTIONS.read_text().splitlines()[:12]]
    for i, q in enumerate(lines):
        q["resolution"] = i % 3 == 0
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(q) + "\n" for q in lines))
    done = cc("evaluate", "--questions", "q.jsonl", "-f", "uniform", "-F", "seed=3", "-o", "gt", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    board = json.loads(cc("leaderboard", "gt", "--json", cwd=tmp_path).stdout)
    (row,) = board["standings"]
    report = read_run(tmp_path / "gt").accuracy
    assert report is not None and report.brier_ci is not None
    assert (row["low"], row["high"]) == report.brier_ci
    assert 0.0 <= row["low"] <= row["score"] <= row["high"] <= 1.0
    # summaries alone (no per-question results) show the interval the run stored, the same one
    (tmp_path / "gt" / "ground_truth_results.jsonl").unlink()
    board = json.loads(cc("leaderboard", "gt/ground_truth_summary.json", "--json", cwd=tmp_path).stdout)
    (row,) = board["standings"]
    assert (row["low"], row["high"]) == report.brier_ci
