"""Findings of the second reliability audit (issue 24), one section per numbered finding: concurrent
appends, write errors of every kind, deeply nested JSON, batch per-line retries, one-sentence errors,
an unwritable cache, status and exit codes, scrapers, and billing before answering."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import consistency
from consistency.cli import app
from consistency.jsonl import LineError, iter_json_lines, read_json_object

SAMPLE = Path(consistency.__file__).parent / "datasets" / "sample"
DEEP = "[" * 1500 + "]" * 1500  # deeper than json's recursion limit: RecursionError, not JSONDecodeError
runner = CliRunner()


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CC_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)


def one_line(output: str) -> str:
    return " ".join(output.split())


# ------------------------------------------------------------------ 3. deeply nested JSON is a bad line


def _with_deep_line(tmp_path: Path, kind: str, name: str) -> Path:
    lines = (SAMPLE / kind / name).read_text(encoding="utf-8").splitlines(keepends=True)
    target = tmp_path / kind / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(lines[0] + DEEP + "\n" + "".join(lines[1:]), encoding="utf-8")
    return target


def test_a_deeply_nested_line_is_a_bad_line_with_its_reason(tmp_path):
    path = _with_deep_line(tmp_path, "forecasts", "NegChecker.jsonl")
    got = list(iter_json_lines(path))
    bad = [obj for _, obj in got if isinstance(obj, LineError)]
    assert len(got) == 4 and len(bad) == 1 and bad[0].line == 2 and "nested too deeply" in bad[0].message
    (tmp_path / "deep.json").write_text(DEEP)
    assert read_json_object(tmp_path / "deep.json") is None


@pytest.mark.parametrize("command", ["validate", "score"])
def test_cli_skips_a_deeply_nested_line(tmp_path, command):
    path = _with_deep_line(tmp_path, "forecasts", "NegChecker.jsonl")
    args = [command, str(path)] + (["--out", str(tmp_path / "scores")] if command == "score" else [])
    done = runner.invoke(app, args)
    assert not isinstance(done.exception, RecursionError) and "Traceback" not in done.output
    assert f"{path}:2" in one_line(done.output) and "nested too deeply" in one_line(done.output)
    if command == "score":
        assert done.exit_code == 0, done.output


def test_evaluate_tuples_with_a_deeply_nested_line_skips_it(tmp_path):
    path = _with_deep_line(tmp_path, "tuples", "NegChecker.jsonl")
    done = runner.invoke(app, ["evaluate", "-f", "constant", "-t", str(path.parent), "-o", str(tmp_path / "run")])
    assert not isinstance(done.exception, RecursionError), done.output
    assert "nested too deeply" in one_line(done.output)


def test_resume_of_a_deeply_nested_run_json_is_one_sentence(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(DEEP)
    done = runner.invoke(app, ["evaluate", "--resume", str(run)])
    assert done.exit_code != 0 and not isinstance(done.exception, RecursionError)
    assert "run.json" in one_line(done.output)
