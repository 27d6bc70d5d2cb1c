"""The ``cc`` console script hands compiler invocations to the real C compiler.

These tests run the real installed console script with the virtualenv's bin directory first on PATH,
exactly as inside an activated virtualenv where our ``cc`` shadows the system compiler.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from consistency.__main__ import COMMANDS
from consistency._compiler import delegate_if_compiler

VENV_BIN = Path(sys.executable).parent
SCRIPT = VENV_BIN / "cc"
ORIGINAL_PATH = os.pathsep.join(
    d for d in os.environ.get("PATH", os.defpath).split(os.pathsep) if d and Path(d).resolve() != VENV_BIN.resolve()
)
SYSTEM_CC = shutil.which("cc", path=ORIGINAL_PATH)
TIMEOUT = 20

HELLO = '#include <stdio.h>\nint main(void) { printf("hello from cc\\n"); return 3; }\n'


@pytest.fixture
def script() -> Path:
    if not SCRIPT.exists():
        pytest.fail("the cc console script is not installed; run pip install -e '.[dev]'")
    return SCRIPT


def _env(path: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CONSISTENCY_CC_DELEGATED"}
    env["PATH"] = path
    return env


def run(cmd: list[str | Path], *, path: str | None = None, **kwargs) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` with the venv bin first on PATH (our ``cc`` shadows the system one)."""
    env = _env(path if path is not None else f"{VENV_BIN}{os.pathsep}{ORIGINAL_PATH}")
    return subprocess.run(
        [str(c) for c in cmd], env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False, **kwargs
    )


@pytest.fixture
def system_cc() -> str:
    if SYSTEM_CC is None:
        pytest.skip("no system C compiler named cc on PATH; nothing to delegate to")
    return SYSTEM_CC


# --- unit: cases where the CLI must run (no exec) ---------------------------------------------------------


@pytest.fixture
def no_exec(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object) -> None:
        raise AssertionError(f"unexpected exec of {args!r}")

    monkeypatch.setattr(os, "execv", fail)


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["score", "forecasts.jsonl", "-o", "out.json"],
        ["validate", "x.c"],
        ["--help"],
        ["-h"],
        ["--install-completion"],
        ["--show-completion"],
        ["scroe"],
        ["scroe", "forecasts.jsonl"],
        ["evalute", "--forecaster", "local"],  # a typo with flags: ours, to say "did you mean"
        ["evalute", "-f", "local", "-n", "1"],
        ["-V", "version"],  # global options before a command
        ["--verbose", "version"],
        ["-V", "--verbose", "evaluate", "-o", "out"],
        ["-V"],
        ["--verbose"],
        ["-V", "--help"],
        ["--forecaster", "local", "evaluate"],  # an option only we take
        ["-o", "x", "--json"],
        ["-c", "x.c", "--out=dir"],
    ],
)
def test_returns_normally_for_our_cli(no_exec: None, args: list[str]) -> None:
    assert delegate_if_compiler([str(SCRIPT), *args], COMMANDS) is None


@pytest.mark.parametrize(
    "args",
    [
        ["-c", "x.c", "-o", "x.o"],
        ["x.c", "-o", "x"],
        ["hello.cpp"],
        ["--version"],
        ["-v"],
        ["-dumpversion"],
        ["-E", "-x", "c", "-"],
        ["@args.rsp"],
        ["-V", "x.c"],  # our global option, then a source file: a compiler call after all
        ["-O2", "-Wall", "-I", "include", "main.o", "util.o", "-lm"],
    ],
)
def test_compiler_calls_are_handed_on(monkeypatch: pytest.MonkeyPatch, args: list[str]) -> None:
    execs: list[list[str]] = []

    def fake_exec(path: str, argv: list[str]) -> None:
        execs.append(argv)

    monkeypatch.setattr(os, "execv", fake_exec)
    monkeypatch.setenv("PATH", os.pathsep.join([str(VENV_BIN), ORIGINAL_PATH]))
    monkeypatch.delenv("CONSISTENCY_CC_DELEGATED", raising=False)
    if SYSTEM_CC is None:
        pytest.skip("no system C compiler named cc on PATH")
    delegate_if_compiler([str(SCRIPT), *args], COMMANDS)
    assert execs and execs[0][1:] == args


def test_our_own_options_are_options_of_our_commands() -> None:
    """The options that mark a call as ours exist in our CLI (the list does not rot)."""
    import typer.main

    from consistency._compiler import GLOBAL_OPTIONS, OWN_COMMAND_OPTIONS
    from consistency.cli import app
    from consistency.cli.lazy import Context

    root = typer.main.get_command(app)
    names: set[str] = set()

    def walk(command, ctx) -> None:
        for param in command.get_params(ctx):
            names.update(param.opts, param.secondary_opts)
        for name in getattr(command, "list_commands", lambda ctx: [])(ctx):
            sub = command.get_command(ctx, name)
            walk(sub, type(ctx)(sub, parent=ctx))

    walk(root, Context(root))  # a plain context loads each lazily registered command
    assert names >= OWN_COMMAND_OPTIONS
    assert names >= GLOBAL_OPTIONS


def test_python_dash_m_is_never_a_compiler(no_exec: None) -> None:
    assert delegate_if_compiler(["/x/consistency/__main__.py", "-c", "x.c"], COMMANDS) is None


def test_compiler_module_imports_nothing_heavy() -> None:
    code = (
        "import sys, consistency._compiler\n"
        "heavy = [m for m in ('numpy', 'scipy', 'pydantic', 'typer', 'rich', 'consistency.cli') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=TIMEOUT)


# --- the real console script ---------------------------------------------------------------------------


def test_real_compile_and_run(script: Path, system_cc: str, tmp_path: Path) -> None:
    src, exe = tmp_path / "hello.c", tmp_path / "hello"
    src.write_text(HELLO)
    result = run([script, "-o", exe, src])
    assert result.returncode == 0, result.stderr
    assert exe.exists()
    ran = subprocess.run([exe], capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert ran.stdout == "hello from cc\n"
    assert ran.returncode == 3


def test_version_is_the_system_compilers(script: Path, system_cc: str) -> None:
    ours = run([script, "--version"])
    theirs = run([system_cc, "--version"], path=ORIGINAL_PATH)
    assert ours.returncode == theirs.returncode == 0
    assert ours.stdout == theirs.stdout
    assert ours.stdout.strip()


def test_exit_code_propagates(script: Path, system_cc: str, tmp_path: Path) -> None:
    src = tmp_path / "broken.c"
    src.write_text("int main(void) { return 0 }\n")
    ours = run([script, "-c", src, "-o", tmp_path / "broken.o"])
    theirs = run([system_cc, "-c", src, "-o", tmp_path / "broken.o"], path=ORIGINAL_PATH)
    assert ours.returncode == theirs.returncode != 0
    assert "broken.c" in ours.stderr


def test_stdin_passthrough(script: Path, system_cc: str) -> None:
    source = "#define X 41\nint v = X+1;\n"
    result = run([script, "-E", "-x", "c", "-"], input=source)
    assert result.returncode == 0, result.stderr
    # GCC prints "41 +1" (a space after an expanded macro), hence the comparison without whitespace.
    assert any("41+1" in "".join(line.split()) for line in result.stdout.splitlines())
    assert result.stdout == run([system_cc, "-E", "-x", "c", "-"], input=source, path=ORIGINAL_PATH).stdout


def test_compile_to_object(script: Path, system_cc: str, tmp_path: Path) -> None:
    src, obj = tmp_path / "hello.c", tmp_path / "hello.o"
    src.write_text(HELLO)
    result = run([script, "-c", src, "-o", obj])
    assert result.returncode == 0, result.stderr
    assert obj.stat().st_size > 0


def test_our_cli_still_answers_help(script: Path) -> None:
    result = run([script, "--help"])
    assert result.returncode == 0, result.stderr
    assert "Usage: gcc" not in result.stdout
    assert "--help={" not in result.stdout
    assert "score" in result.stdout


def test_a_mistyped_command_gets_our_did_you_mean_not_the_compiler(script: Path, tmp_path: Path) -> None:
    result = run([script, "evalute", "--forecaster", "local"], cwd=tmp_path)
    assert result.returncode == 2
    assert "No such command 'evalute'" in result.stderr and "Did you mean 'evaluate'" in result.stderr
    assert "unrecognized command-line option" not in result.stderr


@pytest.mark.parametrize("flag", ["-V", "--verbose"])
def test_global_options_before_a_command_reach_our_cli(script: Path, tmp_path: Path, flag: str) -> None:
    result = run([script, flag, "version"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("consistency ")
    assert not (tmp_path / "a.out").exists()


def test_no_recursion_without_a_compiler_after_us(script: Path, tmp_path: Path) -> None:
    result = run([script, "-c", "x.c"], path=str(VENV_BIN), cwd=tmp_path)
    assert result.returncode == 127
    assert "no C compiler" in result.stderr
    assert str(VENV_BIN) in result.stderr


def test_other_copies_of_our_script_are_skipped(script: Path, system_cc: str, tmp_path: Path) -> None:
    """Another virtualenv's ``cc`` later on PATH (even listed twice) is not a compiler: no ping-pong."""
    other = tmp_path / "other-venv-bin"
    other.mkdir()
    shutil.copy2(script, other / "cc")
    alone = run([script, "-c", "x.c"], path=os.pathsep.join([str(VENV_BIN), str(other), str(VENV_BIN)]), cwd=tmp_path)
    assert alone.returncode == 127, alone.stderr
    assert "no C compiler" in alone.stderr

    src, obj = tmp_path / "hello.c", tmp_path / "hello.o"
    src.write_text(HELLO)
    path = os.pathsep.join([str(other), str(VENV_BIN), str(other), ORIGINAL_PATH])
    result = run([other / "cc", "-c", src, "-o", obj], path=path)
    assert result.returncode == 0, result.stderr
    assert obj.exists()
