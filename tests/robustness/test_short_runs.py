"""Runs that produce nothing, or fewer items than asked, say so in one line; nothing usable is a non-zero exit
from the one table of exit codes (consistency.cli.exits), which `cc --help` shows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import consistency
from consistency.cli.exits import ExitCode

CC = Path(sys.executable).parent / "cc"
QUESTIONS = Path(consistency.__file__).parent / "datasets" / "benchmark" / "questions.jsonl"


def cc(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")} | {"NO_COLOR": "1", "COLUMNS": "400"}
    return subprocess.run([str(CC), *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def questions(tmp_path: Path, name: str, n: int, **changes) -> Path:
    first = [json.loads(line) for line in QUESTIONS.read_text().splitlines()[:n]]
    path = tmp_path / name
    path.write_text("".join(json.dumps(q | changes) + "\n" for q in first))
    return path


def test_a_questions_file_with_no_valid_line_is_refused_in_one_line(tmp_path):
    questions(tmp_path, "bad.jsonl", 3, resolution_date="not a date")
    done = cc("evaluate", "--questions", "bad.jsonl", "-f", "constant", cwd=tmp_path)
    assert done.returncode == ExitCode.USAGE
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "no usable question, all 3 line(s) are invalid" in lines[0]
    assert "bad.jsonl:1: resolution_date" in lines[0]
    assert not (tmp_path / "runs").exists()


def test_a_tuples_file_with_no_valid_line_is_refused(tmp_path):
    tuples = tmp_path / "tuples"
    tuples.mkdir()
    good = json.loads(QUESTIONS.read_text().splitlines()[0])
    (tuples / "NegChecker.jsonl").write_text(json.dumps({"P": good, "not_P": good | {"resolution_date": "x"}}) + "\n")
    done = cc("evaluate", "-t", "tuples", "-f", "constant", cwd=tmp_path)
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert "no usable tuple, all 1 line(s) are invalid" in done.stderr
    assert not (tmp_path / "runs").exists()


def test_only_unresolved_questions_say_why_nothing_scored(tmp_path):
    questions(tmp_path, "open.jsonl", 3, resolution=None)
    done = cc("evaluate", "--questions", "open.jsonl", "-f", "constant", cwd=tmp_path)
    assert done.returncode == ExitCode.FAILED
    assert "nothing scored: none of the 3 answered question(s) has a resolution" in done.stderr
    (run,) = (tmp_path / "runs").iterdir()  # the forecasts are kept
    assert len((run / "forecasts.jsonl").read_text().splitlines()) == 3


def test_some_unresolved_questions_are_counted(tmp_path):
    path = questions(tmp_path, "mixed.jsonl", 4, resolution=None)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[0]["resolution"] = True
    path.write_text("".join(json.dumps(q) + "\n" for q in lines))
    done = cc("evaluate", "--questions", "mixed.jsonl", "-f", "constant", cwd=tmp_path)
    assert done.returncode == ExitCode.OK, done.stderr
    assert "3 answered question(s) have no resolution: forecast, not scored" in done.stderr


def test_generate_says_in_one_line_why_it_made_fewer_tuples_than_asked(tmp_path):
    done = cc("generate", "-c", "cond", "-n", "3", "-q", str(QUESTIONS), "-o", "out", "--prefilter", "2", cwd=tmp_path)
    assert done.returncode == ExitCode.OK, done.stderr  # two tuples are usable
    assert "COND: 2 of the 3 tuples asked for; the candidates ran out: the relevance prefilter kept 2" in done.stderr
    two = questions(tmp_path, "two.jsonl", 2)
    done = cc("generate", "-c", "cond", "-n", "3", "-q", str(two), "-o", "out2", cwd=tmp_path)
    assert done.returncode == ExitCode.OK
    assert "only 2 candidate base assignment(s) from 2 question(s)" in done.stderr
    assert len((tmp_path / "out2" / "CondChecker.jsonl").read_text().splitlines()) == 2


def test_generate_that_makes_nothing_exits_failed(tmp_path):
    two = questions(tmp_path, "two.jsonl", 2)
    done = cc("generate", "-c", "cond", "-n", "3", "-q", str(two), "-o", "out", "--prefilter", "0", cwd=tmp_path)
    assert done.returncode == ExitCode.FAILED
    assert "COND: 0 of the 3 tuples asked for" in done.stderr
    done = cc("generate", "-c", "condcond", "-n", "3", "-q", str(two), "-o", "out", cwd=tmp_path)
    assert done.returncode == ExitCode.USAGE  # a check needing more base questions than given: no traceback
    assert "need at least 3 base questions, got 2" in done.stderr and "Traceback" not in done.stderr


def test_cc_help_shows_the_exit_code_table(tmp_path):
    text = " ".join(cc("--help", cwd=tmp_path).stdout.replace("│", " ").split())
    for code in ExitCode:
        assert f"{int(code)} {' '.join(code.meaning.split())}" in text
