"""Every numeric option of every command declares its range, so a negative count, a zero timeout or a NaN is
refused at the option with its name (exit 2) before any work: ``cc evaluate -n -3`` once printed numpy's
"negative dimensions are not allowed", and ``--timeout nan`` was taken."""

from __future__ import annotations

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from consistency.cli import app


def _numeric_options() -> list[tuple[tuple[str, ...], str, object]]:
    """(command path, option flag, the parameter) for every int and float option of ``cc``."""
    found = []

    def walk(command, path: tuple[str, ...]) -> None:
        if hasattr(command, "commands"):
            for name in list(getattr(command, "lazy", {})):
                command.load(name)
            for name, sub in command.commands.items():
                walk(sub, (*path, name))
            return
        for param in command.params:
            if param.param_type_name == "option" and param.bare_type() in ("int", "float"):
                found.append((path, max(param.opts, key=len), param))

    walk(get_command(app), ())
    return found


OPTIONS = _numeric_options()


def test_the_walk_finds_the_options_of_every_command():
    commands = {path[0] for path, _, _ in OPTIONS}
    assert {"evaluate", "generate", "score", "attack", "questions", "diff", "ask"} <= commands
    assert len(OPTIONS) > 80


@pytest.mark.parametrize(("path", "flag", "param"), OPTIONS, ids=[f"{' '.join(p)} {f}" for p, f, _ in OPTIONS])
def test_every_numeric_option_has_a_range(path, flag, param):
    assert param.min is not None or param.max is not None, f"cc {' '.join(path)} {flag} declares no range"


def _bad_values(param) -> list[str]:
    """Values no option of its kind accepts: below its minimum, above its maximum, and NaN for a float."""
    values = []
    if param.min is not None:
        values.append(str(int(param.min) - 3 if param.bare_type() == "int" else param.min - 3.5))
    if param.max is not None:
        values.append(str(param.max + 2))
    if param.bare_type() == "float":
        values.append("nan")
    return values


@pytest.mark.parametrize(("path", "flag", "param"), OPTIONS, ids=[f"{' '.join(p)} {f}" for p, f, _ in OPTIONS])
def test_a_value_out_of_range_is_refused_at_the_option(path, flag, param, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may be written, but if something were, not into the checkout
    runner = CliRunner()
    for value in _bad_values(param):
        result = runner.invoke(app, [*path, f"{flag}={value}"], env={"COLUMNS": "400", "NO_COLOR": "1"})
        assert result.exit_code == 2, (flag, value, result.output)
        assert "Invalid value for" in result.output and flag in result.output, (flag, value, result.output)
        assert "Traceback" not in result.output
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["evaluate", "-n", "-3"], "'--limit' / '-n'"),
        (["evaluate", "-n", "0"], "'--limit' / '-n'"),
        (["evaluate", "--forecast-timeout", "0"], "must be more than 0"),
        (["evaluate", "--timeout", "nan"], "'--timeout'"),
        (["evaluate", "--concurrency", "0"], "'--concurrency'"),
        (["diff", "a", "b", "--level", "1"], "strictly between 0 and 1"),
    ],
)
def test_the_reported_cases(args, said, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, args, env={"COLUMNS": "400", "NO_COLOR": "1"})
    assert result.exit_code == 2, result.output
    assert said in result.output
    assert "negative dimensions" not in result.output


def test_the_library_refuses_a_negative_limit_and_seed_in_one_sentence():
    from consistency.evaluation import evaluate, load_benchmark

    with pytest.raises(ValueError, match=r"limit must be a whole number of at least 1.*got -3"):
        evaluate("constant", limit=-3)
    with pytest.raises(ValueError, match=r"seed must be a whole number of 0 or more, got -1"):
        load_benchmark(limit=2, seed=-1)
    assert all(len(ts.tuples) == 1 for ts in load_benchmark(limit=1))
