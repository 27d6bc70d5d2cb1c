"""Findings of the second reliability audit (issue 24), one section per numbered finding: concurrent
appends, write errors of every kind, deeply nested JSON, batch per-line retries, one-sentence errors,
an unwritable cache, status and exit codes, scrapers, and billing before answering."""

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
    from consistency.testing.web import WebFixture, bulk_data

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
    from consistency.jsonl import AppendLog
    from consistency.testing.web import WebFixture

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
    from consistency.testing import ScriptedServer, probability_rule

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
    questions.write_text("".join(json.dumps({"title": f"Will event {i} happen by 2030?"}) + "\n" for i in range(3)))
    done = runner.invoke(app, ["evaluate", "-f", "constant", "-q", str(questions), "-o", "run"])
    assert done.exit_code == 0, done.output
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    (tmp_path / "run" / "run.json").write_text(json.dumps({**meta, "limit": "abc"}))
    again = runner.invoke(app, ["evaluate", "--resume", "run"])
    assert again.exit_code != 0 and isinstance(again.exception, SystemExit), again.output
    assert "limit" in one_line(again.output) and "cannot be resumed" in one_line(again.output)


# ------------------------------------------------------------------ 2. any error writing the run's files stops it


def _limited(kib: int):
    """A ``preexec_fn`` setting the file-size limit (``ulimit -f``): writes past it fail with EFBIG
    (Python ignores SIGXFSZ)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (kib * 1024, kib * 1024))

    return limit


def test_a_file_size_limit_stops_the_run_resumably_and_nothing_is_paid_twice(tmp_path):
    from consistency.testing import ScriptedServer, probability_rule

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
    from consistency.testing import ScriptedServer, probability_rule

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


# ------------------------------------------------------------------ 9. an answer is billed before it is sent


def test_an_answer_is_billed_before_the_client_can_read_it(monkeypatch):
    """The client reads the counters the moment its answer arrives; the server may still be finishing the send."""
    import asyncio

    from openai import OpenAI

    from consistency.testing import ScriptedServer

    real_send = ScriptedServer._send

    async def slow_send(self, conn, writer, response):
        await real_send(self, conn, writer, response)
        await asyncio.sleep(0.5)  # the answer is out; the server has not returned from sending it yet

    monkeypatch.setattr(ScriptedServer, "_send", slow_send)
    with ScriptedServer() as srv:
        client = OpenAI(base_url=srv.base_url, api_key="x", max_retries=0)
        answer = client.chat.completions.create(model="scripted", messages=[{"role": "user", "content": "Will X?"}])
        billed = srv.billed
        client.close()
    assert billed == {"prompt_tokens": answer.usage.prompt_tokens, "completion_tokens": answer.usage.completion_tokens}


# ------------------------------------------------------------------ 7. status and exit codes


def test_an_endpoint_answering_only_5xx_stops_the_run_early_as_failed(tmp_path):
    from consistency.testing import Fault, ScriptedServer

    with ScriptedServer(lambda request: Fault.server_error(500)) as srv:
        args = ["evaluate", "-f", srv.model_spec(), "-c", "neg", "-n", "24", "-o", "run", "--concurrency", "4"]
        done = runner.invoke(app, args)
        sent = srv.count
    assert done.exit_code == 1, done.output
    assert "HTTP 500" in one_line(done.output) and "check the server" in one_line(done.output)
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["status"] == "failed"
    assert sent < 8 + 4 * 6  # the breaker's count plus what was in flight: not every question times its attempts


def test_a_server_with_some_5xx_after_good_answers_is_retried_not_stopped():
    import asyncio

    from consistency.llm import LLM, LLMSettings
    from consistency.testing import Fault, ScriptedServer, probability_rule

    rule = probability_rule()
    state = {"n": 0}

    def flaky(request):
        state["n"] += 1
        return Fault.server_error(503) if 3 <= state["n"] < 15 else rule(request)  # 12 in a row, after answers

    async def go(spec):
        async with LLM(LLMSettings(max_backoff=0.01, max_attempts=20, cache=False)) as llm:
            return [await llm.text(spec, [{"role": "user", "content": f"Will {i} happen?"}]) for i in range(4)]

    with ScriptedServer(flaky) as srv:
        results = asyncio.run(go(srv.model_spec()))
    assert all(r.ok for r in results) and state["n"] == 16


def test_a_run_where_every_question_failed_is_failed(tmp_path):
    from consistency.testing import Reply, ScriptedServer

    with ScriptedServer(lambda request: Reply.json({"reasoning": "?", "prob": "likely"})) as srv:
        done = runner.invoke(app, ["evaluate", "-f", srv.model_spec(), "-c", "neg", "-n", "2", "-o", "run"])
    assert done.exit_code == 1, done.output
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["status"] == "failed" and meta["failure"] == "every question failed"


def test_a_repeated_question_id_is_warned_about_and_the_first_kept(tmp_path):
    questions = tmp_path / "q.jsonl"
    rows = [{"id": "same", "title": "Will A happen by 2030?"}, {"id": "same", "title": "Will B happen by 2030?"}]
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = runner.invoke(app, ["evaluate", "-f", "constant", "-q", str(questions), "-o", "run"])
    text = one_line(done.output)
    assert f"{questions}:2: id: repeats the id of line 1" in text and "the first is kept" in text
    assert json.loads((tmp_path / "run" / "run.json").read_text())["questions"] == 1
    made = runner.invoke(app, ["generate", "-c", "neg", "-q", str(questions), "-n", "1", "--out", str(tmp_path / "g")])
    assert f"{questions}:2: id same repeats line 1; the first is kept" in one_line(made.output), made.output


# ------------------------------------------------------------------ 4. batch lines failed by the server are retried


@pytest.mark.parametrize("fallback", ["batch", "direct"])
@pytest.mark.parametrize("fault", ["malformed", "drop", "hang"])
def test_batch_lines_the_server_failed_are_retried_within_the_budget(tmp_path, fault, fallback):
    from consistency.evaluation import RunOptions, evaluate
    from consistency.llm import LLMSettings
    from consistency.testing import Fault, ScriptedServer, faults_then, probability_rule

    make = {"malformed": Fault.malformed, "drop": Fault.drop, "hang": lambda: Fault.hang(30)}[fault]
    rule = faults_then(probability_rule(), make())  # each request fails once, then succeeds
    settings = LLMSettings(batch=True, batch_idle=0.05, batch_poll=0.02, batch_poll_max=0.1, max_backoff=0.05,
                           timeout=10, batch_fallback=fallback, cache_path=tmp_path / "c" / "r.sqlite")  # fmt: skip
    with ScriptedServer(rule) as srv:
        result = evaluate(
            srv.model_spec(), checks=["neg"], limit=4, out=tmp_path / "b", options=RunOptions(llm=settings)
        )
        billed = srv.billed
    assert not result.failures, result.failures
    totals = result.meta["totals"]
    assert totals["retries"] == result.meta["questions"]  # every line retried once
    assert (totals["prompt_tokens"], totals["completion_tokens"]) == (
        billed["prompt_tokens"],
        billed["completion_tokens"],
    )


# ------------------------------------------------------------------ 8. scrapers


def _scrape(source, srv, out, opts=None, **kw):
    import asyncio

    from consistency.sources import SOURCES, HttpSettings, ScrapeOptions, scrape

    http = HttpSettings(max_backoff=0.05, timeout=5, requests_per_minute=None)
    return asyncio.run(scrape(SOURCES[source](), out, opts or ScrapeOptions(status="all"), base_url=srv.url_for(source),
                              http=http, cache_root=out.parent / "pages", **kw))  # fmt: skip


def test_a_polymarket_scrape_stopped_at_an_unusable_cursor_page_saves_its_position(tmp_path):
    from consistency.sources.scraper import state_path_for
    from consistency.testing.web import WebFixture

    out = tmp_path / "p.jsonl"
    with WebFixture(page_cap=2, broken={("polymarket", 2)}) as srv:  # the second cursor page is cut in half
        report = _scrape("polymarket", srv, out)
    assert not report.finished and report.bad_pages
    state = json.loads(state_path_for(out).read_text())
    assert state["bad_pages"] and state["bad_pages"][0]["position"] == [0, "c2"] and not state["finished"]


def test_a_manifold_market_whose_detail_page_is_gone_is_a_skipped_item(tmp_path):
    from consistency.testing.web import WebFixture

    out = tmp_path / "m.jsonl"
    with WebFixture(faults={("manifold-market", "m2"): ["404"] * 5}) as srv:
        report = _scrape("manifold", srv, out)
    assert report.finished and report.skipped["detail page not found (HTTP 404)"] == 1
    titles = [json.loads(line)["title"] for line in out.read_text().splitlines()]
    assert "Will J happen by June 2024?" in titles and "Will K happen by July 2024?" not in titles


def test_resuming_a_finished_scrape_says_it_is_finished(tmp_path):
    from consistency.testing.web import WebFixture

    with WebFixture(page_cap=3) as srv:
        args = ["questions", "scrape", "manifold", "--base-url", srv.url_for("manifold"), "--out", "q.jsonl",
                "--rpm", "0", "--status", "all"]  # fmt: skip
        first = runner.invoke(app, args)
        again = runner.invoke(app, [*args, "--resume"])
    assert first.exit_code == 0 and again.exit_code == 0, again.output
    assert "more remain" not in first.output and "more remain" not in again.output, again.output


def test_polymarket_markets_settled_at_uncollapsed_prices_are_resolved(tmp_path):
    from datetime import timedelta

    from consistency.testing.web import T0, FixtureData, WebFixture, polymarket_market

    d = timedelta(days=1)
    data = FixtureData(polymarket=[
        polymarket_market(601, "Will U happen by June 30?", prices=("0.99999958", "0.00000041"), closed=True,
                          end=T0 + 60 * d, created=T0 - 30 * d),
        polymarket_market(602, "Will V happen by June 30?", prices=("0.0000012", "0.9999988"), closed=True,
                          end=T0 + 60 * d, created=T0 - 30 * d),
        polymarket_market(603, "Will W happen by June 30?", prices=("0.97", "0.03"), closed=True,
                          end=T0 + 60 * d, created=T0 - 30 * d),
    ])  # fmt: skip
    out = tmp_path / "p.jsonl"
    with WebFixture(data) as srv:
        report = _scrape("polymarket", srv, out)
    got = [(q["title"], q["resolution"]) for q in map(json.loads, out.read_text().splitlines())]
    assert got == [("Will U happen by June 30?", True), ("Will V happen by June 30?", False)]
    assert report.skipped["closed without a 0/1 settlement"] == 1  # 0.97 is a price, not a settlement
