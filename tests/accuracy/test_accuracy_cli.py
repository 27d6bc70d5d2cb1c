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
from consistency.evaluation.scoring import score_path, write_report
from consistency.jsonl import iter_json_lines
from tests.support.numbers import same_numbers

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


def test_the_python_api_takes_the_commands_settings_and_gives_what_they_print(forecasts):
    """`cc leaderboard` and `cc compare` are options -> one library call -> print: the settings objects their
    options are declared on give a Python caller the same JSON."""
    from consistency.accuracy.ranking import rank_paths
    from consistency.accuracy.settings import Board, Comparing

    board = cc("leaderboard", forecasts, "--method", "peer", "--json")
    assert board.returncode == 0, board.stderr
    ranked = rank_paths([forecasts], Board(method="peer")).as_dict()
    same_numbers(json.loads(json.dumps(ranked)), json.loads(board.stdout))
    h2h = cc("compare", "good", "bad", forecasts, "--resamples", "500", "--seed", "3", "--json")
    assert h2h.returncode == 0, h2h.stderr
    c = compare(load_table([forecasts]), "good", "bad", Comparing(resamples=500, seed=3))
    same_numbers(json.loads(json.dumps(c.as_dict())), json.loads(h2h.stdout))


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


def with_bad_rows(forecasts: Path, target: Path) -> tuple[Path, list[str]]:
    """The table with four bad rows slipped in (prob 1.7, unknown resolution, a ragged row, no question id);
    returns the ``file:line: reason`` each should be reported as."""
    lines = forecasts.read_text().splitlines()
    bad = ["good,q9001,1.7,1,0.5", "bad,q9002,0.5,maybe,0.5", "ok,q9003,0.5", "meh,,0.5,1,0.5"]
    at = [5, 50, 300, 900]
    for i, row in zip(at, bad, strict=True):
        lines.insert(i, row)
    target.write_text("\n".join(lines) + "\n")
    return target, [
        f"{target}:{i + 1}: {why}"
        for i, why in zip(
            at,
            [
                "prob must be a probability in [0, 1]",
                "resolution 'maybe' is not yes/no, true/false or 1/0",
                "3 field(s) where the header has 5",
                "missing question_id",
            ],
            strict=True,
        )
    ]


def test_bad_rows_are_skipped_and_listed_by_leaderboard_compare_and_correlate(tmp_path, forecasts):
    """Each bad row: one line naming file, line and reason, then the count; the result is the clean table's."""
    dirty, expected = with_bad_rows(forecasts, tmp_path / "dirty.csv")
    runs = []
    for command in (
        ("leaderboard", "--json"),
        ("compare", "good", "bad", "--resamples", "500", "--json"),
    ):
        clean = cc(*command[:1], *command[1:], forecasts)
        result = cc(*command[:1], *command[1:], dirty)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == json.loads(clean.stdout)
        runs.append(result)
    rng = np.random.default_rng(1)
    args = []
    for name, noise in NOISE.items():
        write_noisy_run(tmp_path / f"in_{name}", noise, rng)
        write_report(score_path(tmp_path / f"in_{name}"), tmp_path / f"scores_{name}")
        args += ["--pair", f"{name}=" + str(tmp_path / f"scores_{name}")]
    correlated = cc("correlate", dirty, *args, "--max-brier", "1", "--bootstrap", "100", "--json")
    assert correlated.returncode == 0, correlated.stderr
    assert json.loads(correlated.stdout)["default"]["aggregate"]["n"] == 4
    for result in (*runs, correlated):
        listed = [line.strip().removeprefix("skipped ") for line in result.stderr.splitlines() if "skipped " in line]
        assert listed == expected
        assert "4 bad row(s) skipped" in result.stderr.splitlines()[len(expected)]


def test_bad_lines_of_jsonl_ground_truth_and_run_directories_are_skipped(tmp_path):
    table = tmp_path / "t.jsonl"
    table.write_text(
        '{"forecaster": "a", "question_id": "q1", "prob": 0.8, "resolution": 1}\n'
        '{"forecaster": "a", "question_id": "q2", "prob": 0.3, "resolution": 0\n'
        '{"forecaster": "b", "question_id": "q1", "prob": 0.6, "resolution": 1}\n'
        "[1, 2]\n"
        '{"forecaster": "b", "question_id": "q2", "prob": 0.4, "resolution": 0}\n'
    )
    run = tmp_path / "run"
    write_noisy_run(run, 0.0, np.random.default_rng(0))
    neg = run / "NegChecker.jsonl"
    lines = neg.read_text().splitlines()
    neg.write_text("\n".join([lines[0], '{"line": {"P": {}}}', *lines[1:]]) + "\n")
    result = cc("leaderboard", table, run, "--method", "proxy-mean")
    assert result.returncode == 0, result.stderr
    assert f"skipped {table}:2: invalid JSON" in result.stderr
    assert f"skipped {table}:4: expected a JSON object, got list" in result.stderr
    assert f"skipped {neg}:2: line.P.question: " in result.stderr
    assert "3 bad row(s) skipped" in result.stderr


def test_nothing_usable_left_is_one_sentence_and_exit_2(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("forecaster,question_id,prob\nx,q1,2\nx,q2,abc\n")
    for args in (("leaderboard",), ("compare", "x", "y")):
        result = cc(*args, path)
        assert result.returncode == 2
        assert result.stderr.splitlines() == [
            f"  skipped {path}:2: prob must be a probability in [0, 1]",
            f"  skipped {path}:3: prob must be a probability in [0, 1]",
            "2 bad row(s) skipped",
            f"error no usable forecasts in {path}: all 2 row(s) are bad",
        ]
