"""Leaderboards, head-to-head comparisons and consistency-vs-accuracy, as library calls and commands."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from consistency.accuracy.inputs import ScoreInputError
from consistency.accuracy.ranking import METHODS, compare, leaderboard
from consistency.accuracy.table import load_table
from consistency.datasets import sample_dir
from consistency.jsonl import iter_json_lines
from consistency.metrics.forecast_files import score_path, write_report

CC = Path(sys.executable).parent / "cc"
NOISE = {"good": 0.05, "ok": 0.15, "meh": 0.25, "bad": 0.35}


@pytest.fixture(scope="module")
def forecasts(tmp_path_factory) -> Path:
    rng = np.random.default_rng(0)
    truth = rng.random(400)
    y = (rng.random(400) < truth).astype(int)
    rows = ["forecaster,question_id,prob,resolution,market_prob"]
    for name, noise in NOISE.items():
        for q in range(400):
            if rng.random() < 0.85:
                p = float(np.clip(truth[q] + rng.normal(0, noise), 0.01, 0.99))
                rows.append(f"{name},q{q},{p:.3f},{y[q]},{truth[q]:.3f}")
    path = tmp_path_factory.mktemp("lb") / "forecasts.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def write_noisy_run(target: Path, noise: float, rng: np.random.Generator, skip: tuple[str, ...] = ()) -> None:
    """The bundled sample forecasts with Gaussian noise of sd ``noise`` added, as a run directory."""
    target.mkdir(parents=True)
    for path in (sample_dir() / "forecasts").glob("*.jsonl"):
        if path.name in skip:
            continue
        lines = []
        for _, obj in iter_json_lines(path):
            for entry in obj["line"].values():
                p = entry["forecast"]["prob"]
                entry["forecast"]["prob"] = float(np.clip(p + rng.normal(0, noise), 0.01, 0.99))
            lines.append(json.dumps(obj))
        (target / path.name).write_text("\n".join(lines) + "\n")


def cc(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(CC), *map(str, args)], capture_output=True, text=True, env={"COLUMNS": "200"}, timeout=120
    )


@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_ranks_the_less_noisy_forecaster_first(forecasts, method):
    standings = leaderboard(load_table([forecasts]), method)
    assert [s.forecaster for s in standings] == list(NOISE)


def test_compare_finds_the_difference_and_agrees_with_itself(forecasts):
    table = load_table([forecasts])
    c = compare(table, "good", "bad")
    assert c.mean > 0 and c.t_test.ci_low > 0 and c.bootstrap.ci_low > 0
    reverse = compare(table, "bad", "good")
    assert reverse.mean == pytest.approx(-c.mean)
    with pytest.raises(ScoreInputError, match="no resolved forecasts by 'nobody'"):
        compare(table, "good", "nobody")


def test_leaderboard_and_compare_commands(forecasts):
    result = cc("leaderboard", forecasts, "--method", "difficulty", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert [s["forecaster"] for s in data["standings"]] == list(NOISE)
    table = cc("leaderboard", forecasts)
    assert table.returncode == 0 and "good" in table.stdout and "95% interval" in table.stdout
    h2h = cc("compare", "good", "bad", forecasts, "--resamples", "2000", "--json")
    assert h2h.returncode == 0, h2h.stderr
    assert json.loads(h2h.stdout)["t_test"]["ci95"][0] > 0
    assert cc("leaderboard", forecasts, "--method", "nope").returncode == 2


def test_duplicate_rows_are_refused_by_the_commands(tmp_path, forecasts):
    path = tmp_path / "dup.csv"
    lines = forecasts.read_text().splitlines()
    path.write_text("\n".join([*lines, lines[1]]) + "\n")
    result = cc("leaderboard", path)
    assert result.returncode == 2 and "second forecast on question" in result.stderr


def test_correlate_command(tmp_path, forecasts):
    """Each forecaster's consistency comes from a `cc score` run; worse forecasters are made less consistent."""
    rng = np.random.default_rng(1)
    args = []
    for name, noise in NOISE.items():
        run = tmp_path / f"in_{name}"
        write_noisy_run(run, noise, rng)
        write_report(score_path(run), tmp_path / f"scores_{name}")
        args += ["--scores", f"{name}=" + str(tmp_path / f"scores_{name}")]
    result = cc("correlate", forecasts, *args, "--max-brier", "1", "--bootstrap", "200", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert {"default", "frequentist", "pairs", "left_out", "aggregate_checks"} <= set(data)
    assert data["default"]["aggregate"]["n"] == 4
    assert data["frequentist"]["aggregate"]["r"] > 0  # noisier forecasters: worse Brier and more violations
    bad = cc("correlate", forecasts, "--scores", "nonsense")
    assert bad.returncode == 2 and "expected NAME=DIR" in bad.stderr


def test_early_closers_are_held_back_until_their_scheduled_date(tmp_path):
    """q1 resolved early (March, scheduled for June): left out as of April, counted as of July."""
    path = tmp_path / "t.csv"
    path.write_text(
        "forecaster,question_id,prob,resolution,resolved_at,scheduled_resolution\n"
        "a,q1,0.9,yes,2025-03-01,2025-06-01\n"
        "b,q1,0.1,yes,2025-03-01,2025-06-01\n"
        "a,q2,0.4,no,2025-01-15,2025-01-15\n"
        "b,q2,0.5,no,,2025-01-15\n"
        "a,q3,0.5,,,2026-01-01\n"
    )
    april = leaderboard(load_table([path]), "brier", as_of=datetime(2025, 4, 1))
    july = leaderboard(load_table([path]), "brier", as_of=datetime(2025, 7, 1))
    assert {s.forecaster: s.n_questions for s in april} == {"a": 1, "b": 1}
    assert {s.forecaster: s.n_questions for s in july} == {"a": 2, "b": 2}
    result = cc("leaderboard", path, "--as-of", "2025-04-01")
    assert result.returncode == 0 and "1 early-closing question(s) held back" in result.stderr
