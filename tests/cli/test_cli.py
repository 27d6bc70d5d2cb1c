"""The ``cc`` command line on the packaged sample: checks, score, help and version; and the library's score_path.

The CLI runs as a subprocess (the installed ``cc`` script) in ``tmp_path``. Unless a test is about output to a
pipe at the default width, ``COLUMNS`` is set wide so that rich never wraps or truncates a cell.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import consistency
from consistency.evaluation.scoring import ScoreReport, score_path

CC = Path(sys.executable).parent / "cc"
SAMPLE = Path(consistency.__file__).parent / "datasets" / "sample"
FORECASTS = SAMPLE / "forecasts"
WIDE = 400

CHECKS = {
    "NEGATION": "NegChecker",
    "PARAPHRASE": "ParaphraseChecker",
    "CONSEQUENCE": "ConsequenceChecker",
    "AND": "AndChecker",
    "OR": "OrChecker",
    "ANDOR": "AndOrChecker",
    "BUT": "ButChecker",
    "COND": "CondChecker",
    "CONDCOND": "CondCondChecker",
    "EXPEVIDENCE": "ExpectedEvidenceChecker",
}
METRICS = ("default", "default_scaled", "frequentist")
STAT_KEYS = {"num_samples", "num_violations", "avg_violation", "median_violation", "fraction_violated", "ci95"}


def _env(columns: int | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"COLUMNS", "LINES", "FORCE_COLOR", "TTY_COMPATIBLE"}}
    env["NO_COLOR"] = "1"
    env["PYTHONIOENCODING"] = "utf-8"
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return env


def run(argv: list[str], cwd: Path, columns: int | None = WIDE) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        cwd=cwd,
        env=_env(columns),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        check=False,
    )


def cc(*args: object, cwd: Path, columns: int | None = WIDE) -> subprocess.CompletedProcess[str]:
    """Run the installed ``cc`` script; ``columns=None`` leaves rich at its width for pipes."""
    return run([str(CC), *map(str, args)], cwd, columns)


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def jsonable(value: object) -> object:
    """What a value looks like after a JSON round trip (tuples become lists)."""
    return json.loads(json.dumps(value))


# --- cc checks -------------------------------------------------------------------------------------------


def test_checks_table_lists_all_ten(tmp_path: Path) -> None:
    result = cc("checks", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for name, class_name in CHECKS.items():
        assert name in result.stdout
        assert class_name in result.stdout


def test_checks_table_not_truncated_in_pipes(tmp_path: Path) -> None:
    """Piped at the default width, the names users must type are still printed in full (no '…')."""
    result = cc("checks", cwd=tmp_path, columns=None)
    assert result.returncode == 0, result.stderr
    missing = [c for c in CHECKS.values() if c not in result.stdout]
    assert missing == [], result.stdout


def test_checks_json(tmp_path: Path) -> None:
    result = cc("checks", "--json", cwd=tmp_path, columns=None)
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert len(rows) == 11  # the paper's ten (the bundled sample's) and MONOTONE
    by_name = {row["name"]: row for row in rows}
    assert set(by_name) == {*CHECKS, "MONOTONE"}
    assert {row["class_name"] for row in rows} == {*CHECKS.values(), "MonotoneChecker"}
    assert by_name["ANDOR"]["worlds"] == 4
    cond = by_name["COND"]
    assert list(cond["fields"]) == ["P", "Q_given_P", "P_and_Q"]
    assert cond["question_types"]["Q_given_P"] == "conditional_binary"
    assert cond["question_types"]["P"] == "binary"
    assert cond["question_types"]["P_and_Q"] == "binary"


# --- cc score on the sample directory (run once for the module) --------------------------------------------


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    cwd = tmp_path_factory.mktemp("score_sample")
    result = cc("score", FORECASTS, "--out", "out", cwd=cwd)
    return cwd / "out", result


def test_score_sample_dir_writes_outputs(sample_run: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    out, result = sample_run
    assert result.returncode == 0, result.stderr
    names = {p.name for p in out.iterdir()}
    assert names == {f"{c}.jsonl" for c in CHECKS.values()} | {f"stats_{c}.json" for c in CHECKS.values()} | {
        "summary.json"
    }
    for class_name in CHECKS.values():
        lines = (out / f"{class_name}.jsonl").read_text(encoding="utf-8").splitlines()
        assert len(lines) == 3
        for text in lines:
            assert set(json.loads(text)["violation_data"]) == set(METRICS)
        stats = load(out / f"stats_{class_name}.json")
        assert set(stats["overall"]) == set(METRICS)
        for metric in METRICS:
            data = stats["overall"][metric]
            assert set(data) >= STAT_KEYS, (class_name, metric)
            assert data["num_samples"] == 3
            assert data["num_violations"] <= data["num_samples"]
            lo, hi = data["ci95"]
            assert lo <= data["avg_violation"] <= hi


def test_score_sample_dir_summary(sample_run: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    out, _ = sample_run
    summary = load(out / "summary.json")
    assert summary["parameters"]["epsilon"] == 0.001
    assert set(summary["checks"]) == set(CHECKS.values())
    assert set(summary["aggregate"]) == set(METRICS)
    for metric in METRICS:
        assert summary["aggregate"][metric]["num_checks"] == 10
        assert summary["aggregate"][metric]["num_samples"] == 30
    assert summary["errors"] == []
    for class_name, check in summary["checks"].items():
        stats = load(out / f"stats_{class_name}.json")
        for metric in METRICS:
            assert check[metric] == stats["overall"][metric]


def test_score_sample_dir_prints_table(sample_run: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    _, result = sample_run
    rows = [[cell.strip() for cell in re.split(r"[│┃|]", line)] for line in result.stdout.splitlines()]
    first_cells = [row[1] for row in rows if len(row) > 2]
    for name in CHECKS:
        assert first_cells.count(name) == 1, (name, result.stdout)
    aggregate = [row for row in rows if len(row) > 2 and row[1] == "aggregate"]
    assert len(aggregate) == 1
    assert aggregate[0][2] == "30"
    assert "results written to" in result.stderr


def test_score_json_matches_summary(tmp_path: Path) -> None:
    result = cc("score", FORECASTS, "--out", "out", "--json", cwd=tmp_path, columns=None)
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    summary = load(tmp_path / "out" / "summary.json")
    assert printed["checks"] == summary["checks"]
    assert printed["aggregate"] == summary["aggregate"]
    assert printed["parameters"] == summary["parameters"]
    assert printed["errors"] == summary["errors"] == []


def test_score_without_out_writes_under_runs(tmp_path: Path) -> None:
    first = cc("score", FORECASTS, cwd=tmp_path)
    second = cc("score", FORECASTS, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    runs = sorted(p for p in (tmp_path / "runs").iterdir() if p.is_dir())
    assert len(runs) == 2
    for run_dir in runs:
        assert (run_dir / "summary.json").is_file()
        assert len(list(run_dir.glob("stats_*.json"))) == 10
    assert [p for p in tmp_path.iterdir()] == [tmp_path / "runs"]


# --- cc score on single files ------------------------------------------------------------------------------


def test_score_single_file(tmp_path: Path) -> None:
    shutil.copy(FORECASTS / "NegChecker.jsonl", tmp_path / "NegChecker.jsonl")
    result = cc("score", "NegChecker.jsonl", "--out", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "NEGATION" in result.stdout
    assert {p.name for p in (tmp_path / "out").iterdir()} == {
        "NegChecker.jsonl",
        "stats_NegChecker.json",
        "summary.json",
    }
    assert load(tmp_path / "out" / "stats_NegChecker.json")["overall"]["default"]["num_samples"] == 3


def test_score_file_with_other_name_and_check_option(tmp_path: Path) -> None:
    shutil.copy(FORECASTS / "NegChecker.jsonl", tmp_path / "mine.jsonl")
    result = cc("score", "mine.jsonl", "--check", "neg", "--out", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = load(tmp_path / "out" / "summary.json")
    assert list(summary["checks"]) == ["NegChecker"]
    assert summary["checks"]["NegChecker"]["scored"] == 3
    assert (tmp_path / "out" / "NegChecker.jsonl").is_file()


def test_score_nonexistent_path(tmp_path: Path) -> None:
    result = cc("score", "nope.jsonl", "--out", "out", cwd=tmp_path)
    assert result.returncode == 2
    assert "nope.jsonl" in result.stderr
    assert "no such file" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


# --- help and version --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [[sys.executable, "-m", "consistency", "--help"], [str(CC), "--help"]],
    ids=["python-m", "cc"],
)
def test_help(argv: list[str], tmp_path: Path) -> None:
    result = run(argv, tmp_path)
    assert result.returncode == 0, result.stderr
    for command in ("score", "validate", "checks"):
        assert command in result.stdout


def test_version(tmp_path: Path) -> None:
    result = cc("version", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert consistency.__version__ in result.stdout
    assert result.stdout.strip() == f"consistency {consistency.__version__}"


# --- library API -------------------------------------------------------------------------------------------


def test_score_path_matches_cli(sample_run: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    out, result = sample_run
    assert result.returncode == 0, result.stderr
    report = score_path(FORECASTS)
    assert isinstance(report, ScoreReport)
    assert [f.check.class_name for f in report.files] == list(CHECKS.values())
    assert report.errors == []
    for scored in report.files:
        written = load(out / f"stats_{scored.check.class_name}.json")["overall"]
        ours = {metric: stats.model_dump() for metric, stats in scored.stats().items()}
        assert jsonable(ours) == written, scored.check.class_name
    assert jsonable(report.aggregate()) == load(out / "summary.json")["aggregate"]
