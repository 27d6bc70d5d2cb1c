"""The one progress display of every command: rich bars on a terminal, plain lines in logs, and the
bundled model's download and start said while they happen. Also the sentence under a run's table."""

from __future__ import annotations

import ast
import io
import logging
import re
import time
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from consistency.cli import app
from consistency.cli.progress import HEARTBEAT, Progress, local_model_status
from consistency.evaluation.reading import BUNDLED, degenerate, uses_bundled_model
from consistency.fake_openai import ScriptedServer, probability_rule

ROOT = Path(__file__).resolve().parents[2]
LINE = re.compile(r"^work (\d+)/10 (.*) \d+:\d\d:\d\d$")


pytestmark = pytest.mark.usefixtures("in_tmp_dir")


def console(terminal: bool) -> Console:
    return Console(file=io.StringIO(), force_terminal=terminal, width=120, color_system=None)


def wait_for(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_the_mode_follows_the_console():
    assert Progress(console(terminal=False)).plain and not Progress(console(terminal=True)).plain


def test_plain_mode_prints_a_line_at_the_start_at_each_interval_while_it_changes_and_at_the_end():
    out = console(terminal=False)
    with Progress(out, interval=0.05) as progress:
        task = progress.task("work", total=10, info="starting")
        for i in range(1, 10):
            task.update(completed=i, info=f"step {i}")
            count = i  # each step waits for the line that shows it: a steady interval, however loaded the machine
            wait_for(lambda count=count: f"work {count}/10" in out.file.getvalue())
        task.update(completed=10, info="done")
        assert out.file.getvalue().splitlines()[-1].startswith("work 10/10 done")  # the end at once
    lines = out.file.getvalue().splitlines()
    assert all(LINE.match(line) for line in lines), lines
    counts = [int(LINE.match(line).group(1)) for line in lines]
    assert counts[0] == 0 and counts[-1] == 10 and counts == sorted(counts)
    assert len(counts) == len(set(counts)) == 11  # every change once, the final state not repeated at stop


def test_plain_mode_repeats_an_unchanged_line_only_as_a_heartbeat():
    class Stamped(io.StringIO):
        """Remembers when each line was written."""

        def __init__(self) -> None:
            super().__init__()
            self.times: list[float] = []

        def write(self, text: str) -> int:
            self.times.extend(time.monotonic() for _ in range(text.count("\n")))
            return super().write(text)

    out = Console(file=Stamped(), force_terminal=False, width=120)
    interval = 0.02
    with Progress(out, interval=interval) as progress:
        progress.task("work", total=10)
        wait_for(lambda: out.file.getvalue().count("work 0/10") >= 3, timeout=60)
    gaps = [b - a for a, b in zip(out.file.times, out.file.times[1:], strict=False)]
    assert min(gaps[:2]) >= HEARTBEAT * interval * 0.9  # not one line per interval: the line did not change


def test_terminal_mode_draws_rich_bars_and_shows_a_waiting_note_until_the_first_result():
    out = console(terminal=True)
    with Progress(out) as progress:
        task = progress.task("work", total=10, info="failed 0")
        progress.note("starting the local model server...")
        assert progress._rich.tasks[0].fields["info"] == "starting the local model server..."
        task.update(completed=1)
        assert progress._rich.tasks[0].fields["info"] == "failed 0"
        task.update(completed=10)
    text = out.file.getvalue()
    assert "work" in text and "10/10" in text and "━" in text


def test_the_local_models_messages_reach_the_display_whatever_the_logging_level(caplog):
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)

    root = logging.getLogger()
    keep = Keep()
    root.addHandler(keep)
    logger = logging.getLogger("consistency.llm.local.server")
    try:
        out = console(terminal=False)
        with Progress(out, interval=60) as progress:
            progress.task("work", total=2)
            logger.info("starting the local model server (%d slots)...", 4)
            logger.info("downloading: %d MB", 1)
            logger.info("downloading: %d MB", 2)  # the same kind within an interval: not another line
        assert "starting the local model server (4 slots)...\ndownloading: 1 MB\n" in out.file.getvalue()
        assert "downloading: 2 MB" not in out.file.getvalue()
        assert not records  # said once, on the display, not again by the root logger's handler
        logger.info("after the display")  # the logger is back as it was: INFO below the level, dropped
        assert not records and logging.getLogger("consistency.llm.local").propagate
    finally:
        root.removeHandler(keep)


def test_without_a_display_the_messages_are_lines(capsys):
    with local_model_status():
        logging.getLogger("consistency.llm.local.weights").info("downloaded %d MB", 93)
    assert "downloaded 93 MB" in capsys.readouterr().err


def test_cc_evaluate_prints_plain_progress_lines_when_stderr_is_not_a_terminal():
    with ScriptedServer(probability_rule()) as srv:
        res = CliRunner().invoke(app, ["evaluate", "-f", srv.model_spec(), "-c", "neg", "-n", "2", "-o", "run"])
    assert res.exit_code == 0, res.output
    lines = [line for line in res.stderr.splitlines() if line.startswith("forecasting ")]
    assert re.fullmatch(r"forecasting 0/(\d+) failed 0  cached 0  \$0\.0000 \d+:\d\d:\d\d", lines[0]), lines
    total = lines[0].split()[1].split("/")[1]
    assert lines[-1].startswith(f"forecasting {total}/{total} failed 0")


def test_every_command_uses_the_one_progress_helper():
    """No command module builds a rich progress bar or status of its own (three copies did)."""
    for path in sorted((ROOT / "consistency" / "cli").glob("*.py")):
        if path.name == "progress.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert "rich.progress" not in imported, path.name
        assert ".status(" not in path.read_text(encoding="utf-8"), path.name


# ---------------------------------------------------------------------------- how to read a run


def test_a_degenerate_run_is_said_to_be_one():
    assert degenerate([0.999999] * 30 + [0.9999] * 3).startswith("33 of 33 forecasts are 1.00")
    assert degenerate([0.5] * 9 + [0.2]) is not None
    assert degenerate([0.1 * i for i in range(10)]) is None
    assert degenerate([1.0] * 4) is None  # too few to say


def test_the_bundled_model_gets_its_sentence_unless_another_gguf_is_served(monkeypatch):
    monkeypatch.delenv("CC_LOCAL_MODEL", raising=False)
    meta = {"forecaster": {"full_forecaster_config": {"model": "local"}}}
    assert uses_bundled_model(meta)
    assert not uses_bundled_model({"forecaster": {"full_forecaster_config": {"model": "gpt-4o-mini"}}})
    assert not uses_bundled_model({"forecaster": {"full_forecaster_config": {"p": 0.5}}})
    monkeypatch.setenv("CC_LOCAL_MODEL", "/models/qwen.gguf")
    assert not uses_bundled_model(meta)


def test_cc_evaluate_says_how_to_read_a_degenerate_table_and_nothing_for_a_varied_one():
    constant = CliRunner().invoke(app, ["evaluate", "-f", "constant", "-F", "p=0.99", "-c", "neg,and", "-o", "c"])
    assert constant.exit_code == 0, constant.output
    assert "forecasts are 0.99: answering nearly the same to every question passes some checks" in constant.stdout
    with ScriptedServer(probability_rule()) as srv:
        varied = CliRunner().invoke(app, ["evaluate", "-f", srv.model_spec(), "-c", "neg,and", "-o", "v"])
    assert varied.exit_code == 0, varied.output
    assert "forecasts are" not in varied.stdout and BUNDLED not in varied.stdout


def test_the_documentations_harness_recognises_plain_progress_lines():
    """The docs' examples run without a terminal: their plain progress lines are dropped as noise there."""
    from tests.support.docs_examples import _progress

    out = console(terminal=False)
    with Progress(out) as progress:
        progress.task("scraping metaculus", total=None, info="1 pages, 6 skipped")
        progress.task("forecasting", total=33, info="failed 0  cached 0  $0.0000")
    lines = out.file.getvalue().splitlines()
    assert len(lines) == 2 and all(_progress(line) for line in lines), lines
    assert not _progress("11 of 11 forecasts are 0.50: answering nearly the same to every question passes some checks")


def test_only_the_task_under_way_keeps_a_heartbeat():
    out = console(terminal=False)
    with Progress(out, interval=0.01) as progress:
        first = progress.task("first", total=10)
        first.update(completed=4)  # left unfinished, as a check that could not make all its tuples
        progress.task("second", total=10)
        wait_for(lambda: out.file.getvalue().count("second 0/10") >= 3, timeout=60)
    assert out.file.getvalue().count("first 4/10") == 1
