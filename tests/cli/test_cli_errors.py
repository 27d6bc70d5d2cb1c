"""How every ``cc`` command ends on an error: one decorator maps the error tree to exit codes, a bug is a bug.

Before the one mapping, each command caught its own tuple of exceptions; several listed ``KeyError`` and
``ValueError``, so a programming error came out as "bad input" with exit 2 and no traceback.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import consistency
from consistency.cli import COMMANDS
from consistency.cli.errors import BUG, handle_errors
from consistency.cli.exits import ExitCode
from consistency.errors import InputError, Interrupted, RunFailed

CLI = Path(consistency.__file__).parent / "cli"


def _run(exc: BaseException) -> tuple[int, str]:
    app = typer.Typer()

    @app.command()
    @handle_errors(after="the journal keeps what finished")
    def boom() -> None:
        raise exc

    result = CliRunner().invoke(app, [])
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("exc", "code", "said"),
    [
        (InputError("q.jsonl:3: title: empty"), ExitCode.USAGE, "error q.jsonl:3: title: empty"),
        (RunFailed("the key was refused"), ExitCode.FAILED, "error the key was refused"),
        (KeyboardInterrupt(), ExitCode.INTERRUPTED, "interrupted: the journal keeps what finished"),
        (Interrupted("stopped"), ExitCode.INTERRUPTED, "interrupted"),
        (FileNotFoundError(2, "No such file or directory", "x.jsonl"), ExitCode.USAGE, "x.jsonl"),
    ],
)
def test_the_tree_maps_to_exit_codes(exc, code, said):
    exit_code, output = _run(exc)
    assert exit_code == code
    assert said in " ".join(output.split())
    assert "Traceback" not in output


@pytest.mark.parametrize("exc", [KeyError("model"), ValueError("bad shape"), AttributeError("x"), ZeroDivisionError()])
def test_a_bug_is_a_traceback_and_a_request_for_a_report_never_bad_input(exc):
    exit_code, output = _run(exc)
    assert exit_code == ExitCode.FAILED  # not USAGE: the input was not the problem
    assert "Traceback" in output and type(exc).__name__ in output
    assert BUG in " ".join(output.split())


def test_typer_exits_pass_through():
    assert _run(typer.Exit(ExitCode.SPENDING_CAP))[0] == ExitCode.SPENDING_CAP


def test_every_command_is_wrapped_by_the_lazy_table():
    from consistency.cli import app

    def callbacks(command, path):
        if command.callback is not None and not getattr(command, "commands", None):
            yield path, command.callback
        for sub, child in getattr(command, "commands", {}).items():
            yield from callbacks(child, f"{path} {sub}")

    group = typer.main.get_command(app)
    seen = []
    for name in (n for n in COMMANDS if " " not in n):
        for path, callback in callbacks(group.load(name), name):
            seen.append(path)
            assert getattr(callback, "handles_errors", False), f"cc {path} is not wrapped"
    assert {"cc export forecastbench", "cc questions import forecastbench", "cc questions synth"} <= {
        f"cc {p}" for p in seen
    }


def test_no_raw_exit_numbers():
    """``typer.Exit`` takes an :class:`ExitCode`, never a bare number, anywhere in the package."""
    raw = re.compile(r"\bExit\(\s*(code\s*=\s*)?\d")
    found = [
        f"{path.relative_to(CLI.parent)}:{number}: {line.strip()}"
        for path in sorted(CLI.parent.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if raw.search(line) and not line.lstrip().startswith("#")
    ]
    assert found == []


def test_no_cli_module_imports_a_command_module():
    """A command is options, one library call and printing: what two commands share lives in the library or in
    the CLI's shared modules (console, errors, progress...), not in another command."""
    commands = {p.stem for p in CLI.glob("*_cmd.py")} | {t.partition(":")[0] for t in COMMANDS.values()}
    commands.discard("main")  # the application: the table's own module (and ``cc version``)
    found = []
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                names = [node.module] if node.module else [a.name for a in node.names]
                found += [f"{path.name} imports {n}" for n in names if n in commands and n != path.stem]
    assert found == []
