"""Findings of the second reliability audit (issue 24), files and input part: concurrent appends (1), write
errors of every kind (2), deeply nested JSON (3), one-sentence errors (5), an unwritable cache (6). The LLM and
sources part is in test_reliability_llm.py."""

from __future__ import annotations

import errno
import json
import os
import resource
import subprocess
import sys
import time
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


# ------------------------------------------------------------------ 1. one writer per appended file


def cc_process(tmp_path: Path, *args: object) -> subprocess.Popen[str]:
    env = {**os.environ, "CC_CACHE_DIR": str(tmp_path / "cache"), "NO_COLOR": "1", "COLUMNS": "400"}
    argv = [sys.executable, "-m", "consistency", *map(str, args)]
    return subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_scrapes_into_one_file_at_once_never_duplicate(tmp_path):
    from consistency.fake_openai.web import WebFixture, bulk_data

    args = (
        "questions",
        "scrape",
        "manifold",
        "--out",
        "s.jsonl",
        "--status",
        "all",
        "--rpm",
        "0",
        "--concurrency",
        "1",
    )
    with WebFixture(bulk_data(60), page_cap=10, latency=0.3) as srv:
        first = cc_process(tmp_path, *args, "--base-url", srv.url_for("manifold"))
        while not srv.hits and first.poll() is None:  # its first page is asked for: it owns s.jsonl by now
            time.sleep(0.02)
        second = cc_process(tmp_path, *args, "--base-url", srv.url_for("manifold"))
        out2, err2 = second.communicate(timeout=120)
        _, err1 = first.communicate(timeout=120)
    assert first.returncode == 0, err1
    assert second.returncode == 2, out2 + err2
    assert "s.jsonl is being written by process" in one_line(err2) and str(first.pid) in err2
    ids = [json.loads(line)["id"] for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert ids and len(ids) == len(set(ids))


def test_an_append_log_in_use_elsewhere_is_refused_naming_the_owner(tmp_path):
    from consistency.jsonl import AppendLog
    from consistency.locking import InUseError

    path = tmp_path / "tuples.jsonl"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from consistency.jsonl import AppendLog\n"
         f"log = AppendLog({str(path)!r}); print('held', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(InUseError, match=f"process {holder.pid}"):
            AppendLog(path)
    finally:
        holder.communicate("", timeout=30)
    with AppendLog(path) as log:  # free again once the owner ended
        log.append({"id": 1})
    assert len(list(iter_json_lines(path))) == 1


# ------------------------------------------------------------------ 5. the last tracebacks are one sentence


@pytest.mark.parametrize("code", [errno.EROFS, errno.ENOSPC])
def test_scrape_on_an_unwritable_out_is_one_sentence(tmp_path, monkeypatch, code):
    from consistency.fake_openai.web import WebFixture
    from consistency.jsonl import AppendLog

    real = AppendLog.extend

    def extend(self, items):
        items = list(items)
        if items:
            raise OSError(code, os.strerror(code), str(self.path))
        real(self, items)

    monkeypatch.setattr(AppendLog, "extend", extend)
    with WebFixture(page_cap=3) as srv:
        done = runner.invoke(app, ["questions", "scrape", "manifold", "--base-url", srv.url_for("manifold"),
                                   "--out", "q.jsonl", "--rpm", "0", "--status", "all"])  # fmt: skip
    assert done.exit_code == 2 and "Traceback" not in done.output, done.output
    text = one_line(done.output)
    assert f"cannot write q.jsonl: {os.strerror(code)}" in text and "--resume" in text


def test_generate_into_a_file_another_command_writes_is_refused(tmp_path):
    out = tmp_path / "out"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from consistency.jsonl import AppendLog\n"
         f"log = AppendLog({str(out / 'NegChecker.jsonl')!r}); print('held', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps({"title": f"Will event {i} happen by 2030?"}) + "\n" for i in range(4)))
    try:
        assert holder.stdout.readline().strip() == "held"
        done = runner.invoke(app, ["generate", "-c", "neg", "-q", str(questions), "-n", "2", "--out", str(out)])
    finally:
        holder.communicate("", timeout=30)
    assert done.exit_code == 2 and "Traceback" not in done.output, done.output
    assert f"NegChecker.jsonl is being written by process {holder.pid}" in one_line(done.output)


def test_ask_and_evaluate_with_an_unusable_cache_directory_warn_once_and_run(tmp_path, monkeypatch, caplog):
    """6 (and 5's ``cc ask``): the cache only saves time, so one it cannot create is a warning, not a stop."""
    from consistency.fake_openai import ScriptedServer, probability_rule

    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "a-file" / "cache"))  # mkdir fails: ENOTDIR
    with ScriptedServer(probability_rule()) as srv:
        asked = runner.invoke(app, ["ask", "Will X happen by 2030?", "-m", srv.model_spec()])
        caplog.clear()
        done = runner.invoke(app, ["evaluate", "-f", srv.model_spec(), "-c", "neg", "-n", "3", "-o", "run"])
    assert asked.exit_code == 0 and "Traceback" not in asked.output, asked.output
    assert done.exit_code == 0, done.output
    assert json.loads((tmp_path / "run" / "run.json").read_text())["status"] == "complete"
    warnings = [r for r in caplog.records if "cannot open the response cache" in r.getMessage()]
    assert len(warnings) == 1


def _dir_with_bad_link(tmp_path: Path, kind: str) -> Path:
    root = tmp_path / "forecasts"
    root.mkdir()
    (root / "NegChecker.jsonl").write_bytes((SAMPLE / "forecasts" / "NegChecker.jsonl").read_bytes())
    link = root / "AndChecker.jsonl"
    os.symlink("AndChecker.jsonl" if kind == "loop" else "missing.jsonl", link)
    return root


@pytest.mark.parametrize("kind", ["dangling", "loop"])
@pytest.mark.parametrize("command", ["report", "leaderboard", "score"])
def test_a_broken_checker_symlink_is_one_sentence(tmp_path, kind, command):
    root = _dir_with_bad_link(tmp_path, kind)
    extra = {"report": ["-o", str(tmp_path / "r.html")], "score": ["--out", str(tmp_path / "s")]}.get(command, [])
    done = runner.invoke(app, [command, str(root), *extra])
    assert done.exit_code == 2 and isinstance(done.exception, SystemExit), done.output
    text = one_line(done.output)
    assert "AndChecker.jsonl" in text and "symbolic link that leads to no file" in text


@pytest.mark.parametrize("damage", ["[1, 2]", "limit", "seed"])
def test_resume_of_a_damaged_run_json_is_one_sentence(tmp_path, damage):
    done = runner.invoke(app, ["evaluate", "-f", "constant", "-c", "neg", "-n", "2", "-o", "run"])
    assert done.exit_code == 0, done.output
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    if damage == "[1, 2]":
        (tmp_path / "run" / "run.json").write_text(damage)
    else:
        meta["benchmark"][damage] = "abc"
        (tmp_path / "run" / "run.json").write_text(json.dumps(meta))
    again = runner.invoke(app, ["evaluate", "--resume", "run"])
    assert again.exit_code != 0 and isinstance(again.exception, SystemExit), again.output
    text = one_line(again.output)
    assert "run.json" in text and ("not a run record" in text or f"benchmark.{damage}" in text)


def test_resume_of_a_questions_run_with_a_damaged_limit_is_one_sentence(tmp_path):
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        "".join(
            json.dumps({"title": f"Will event {i} happen by 2030?", "resolution": i % 2 == 0}) + "\n" for i in range(3)
        )
    )
    done = runner.invoke(app, ["evaluate", "-f", "constant", "-q", str(questions), "-o", "run"])
    assert done.exit_code == 0, done.output
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    (tmp_path / "run" / "run.json").write_text(json.dumps({**meta, "limit": "abc"}))
    again = runner.invoke(app, ["evaluate", "--resume", "run"])
    assert again.exit_code != 0 and isinstance(again.exception, SystemExit), again.output
    text = one_line(again.output)
    assert "run.json: limit:" in text and ("cannot be resumed" in text or "the run record is damaged" in text)


# ------------------------------------------------------------------ 2. any error writing the run's files stops it


def _limited(kib: int):
    """A ``preexec_fn`` setting the file-size limit (``ulimit -f``): writes past it fail with EFBIG
    (Python ignores SIGXFSZ)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (kib * 1024, kib * 1024))

    return limit


def test_a_file_size_limit_stops_the_run_resumably_and_nothing_is_paid_twice(tmp_path):
    from consistency.fake_openai import ScriptedServer, probability_rule

    env = {**os.environ, "CC_CACHE_DIR": str(tmp_path / "cache"), "NO_COLOR": "1", "COLUMNS": "400"}
    with ScriptedServer(probability_rule()) as srv:
        argv = [sys.executable, "-m", "consistency", "evaluate", "-f", srv.model_spec(), "-c", "neg,cond", "-n", "24"]
        first = subprocess.run([*argv, "-o", "run"], cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=300, preexec_fn=_limited(100))  # fmt: skip
        sent_first = srv.count
        again = [sys.executable, "-m", "consistency", "evaluate", "--resume", "run"]
        resumed = subprocess.run(again, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        billed, sent = srv.billed, srv.count
    text = one_line(first.stderr)
    assert first.returncode == 2, first.stdout + first.stderr
    assert "llm_calls.jsonl: File too large" in text and "--resume run" in text and "ulimit -f" in text
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["status"] == "complete" and [s["status"] for s in meta["sessions"]] == ["interrupted", "complete"]
    assert 0 < sent_first < meta["questions"]
    assert sent == meta["questions"]  # every question asked once: the answers of the first session were kept
    assert meta["totals"]["prompt_tokens"] == billed["prompt_tokens"]
    assert meta["totals"]["completion_tokens"] == billed["completion_tokens"]
    calls = list(iter_json_lines(tmp_path / "run" / "llm_calls.jsonl"))
    assert not [obj for _, obj in calls if isinstance(obj, LineError)]  # the torn line was cut on resume


@pytest.mark.parametrize("code", [errno.EIO, errno.EROFS, errno.EDQUOT, errno.EFBIG])
def test_any_error_writing_the_transcript_takes_the_full_disk_path(tmp_path, monkeypatch, code):
    from consistency.fake_openai import ScriptedServer, probability_rule

    real_open, opened = Path.open, []

    class Refusing:  # the transcript's file handle once the disk refuses: write() fails as the OS would
        def __init__(self, fh):
            self.fh = fh

        def write(self, text):
            raise OSError(code, os.strerror(code))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

    def open_(self, *args, **kw):
        fh = real_open(self, *args, **kw)
        if self.name == "llm_calls.jsonl" and args[:1] == ("a",):
            opened.append(self)
            return Refusing(fh) if len(opened) > 3 else fh
        return fh

    monkeypatch.setattr(Path, "open", open_)
    with ScriptedServer(probability_rule()) as srv:
        args = ["evaluate", "-f", srv.model_spec(), "-c", "neg", "-n", "6", "-o", "run", "--concurrency", "1"]
        done = runner.invoke(app, args)
        sent = srv.count
        monkeypatch.setattr(Path, "open", real_open)
        resumed = runner.invoke(app, ["evaluate", "--resume", "run"])
        total = srv.count
    assert done.exit_code == 2, done.output
    text = one_line(done.output)
    assert f"llm_calls.jsonl: {os.strerror(code)}" in text and "--resume run" in text
    sessions = json.loads((tmp_path / "run" / "run.json").read_text())["sessions"]
    assert [s["status"] for s in sessions] == ["interrupted", "complete"]
    assert sent == 4  # three transcribed, the fourth answered but not transcribed: nothing sent after it
    assert resumed.exit_code == 0, resumed.output
    assert total == 12  # 12 distinct questions, each asked once over both sessions
