"""The errors a newcomer met in the first hour, each in one sentence that says what to do (issue 32, item 6):
a ``def forecast`` (not ``async``), ``Forecast(prob=70)``, ``-f file.py`` without its class, and ``-o`` on a
run that is already complete."""

from __future__ import annotations

import asyncio
import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from consistency.evaluation import RunDirError, evaluate
from consistency.forecasters import Forecaster, ForecasterSpecError, load_forecaster
from consistency.models import Forecast, ForecastingQuestion

CC = Path(sys.executable).parent / "cc"

USER_FILE = """
import functools
from consistency.forecasters import Forecaster
from consistency.models import Forecast

LOADED = []  # a side effect: the file must not be run just to word an error


class Blocking(Forecaster):
    def forecast(self, question):
        return Forecast(prob=0.5)


class Percent(Forecaster):
    async def forecast(self, question):
        return Forecast(prob=70)


def logged(method):
    @functools.wraps(method)
    def wrapper(self, question):  # a plain def returning the coroutine of an async method
        return method(self, question)
    return wrapper


class Decorated(Forecaster):
    @logged
    async def forecast(self, question):
        return Forecast(prob=0.25)


class _Helper:
    pass


class NotOne:
    pass

LOADED.append(1)
raise SystemExit("this file must not be executed to list its classes")
"""


def cc(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"COLUMNS", "FORCE_COLOR"}}
    env.update(NO_COLOR="1", COLUMNS="400", PYTHONIOENCODING="utf-8")
    return subprocess.run(
        [str(CC), *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture
def user_file(tmp_path: Path) -> Path:
    path = tmp_path / "mine.py"
    path.write_text(USER_FILE, encoding="utf-8")
    runnable = tmp_path / "runnable.py"
    runnable.write_text(USER_FILE.split("LOADED.append(1)")[0], encoding="utf-8")
    return path


# ------------------------------------------------------------------ a plain `def forecast`


def test_a_plain_def_forecast_is_refused_by_name_before_any_run_directory(user_file, tmp_path):
    done = cc("evaluate", "-f", "runnable.py::Blocking", "-n", "1", "-o", "run", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Blocking.forecast is a plain function (def)" in done.stderr
    assert "async def forecast(self, question)" in done.stderr
    assert "asyncio.Future" not in done.stderr
    assert not (tmp_path / "run").exists()


def test_the_library_refuses_it_too_and_forecast_sync_says_why():
    class Blocking(Forecaster):
        def forecast(self, question):  # type: ignore[override]
            return Forecast(prob=0.5)

    with pytest.raises(ForecasterSpecError, match=r"Blocking\.forecast is a plain function"):
        load_forecaster(Blocking())
    with pytest.raises(Exception, match=r"Blocking\.forecast is a plain function") as caught:
        Blocking().forecast_sync("Will it rain?")
    assert "asyncio.Future" not in str(caught.value)


def _logged(method):
    @functools.wraps(method)
    def wrapper(self, question):  # a plain def handing back the coroutine of the async method it wraps
        return method(self, question)

    return wrapper


def test_a_decorated_async_forecast_is_accepted():
    class Wrapped(Forecaster):
        @_logged
        async def forecast(self, question):
            return Forecast(prob=0.25)

    assert load_forecaster(Wrapped()).forecast_sync("Will it?").prob == 0.25


# ------------------------------------------------------------------ Forecast(prob=70)


def test_an_out_of_range_forecast_names_the_field_and_the_reason():
    class Percent(Forecaster):
        async def forecast(self, question):
            return Forecast(prob=70)

    outcome = asyncio.run(Percent().forecast_safely(ForecastingQuestion(title="Will it?")))
    assert outcome.error is not None
    assert "1 validation error" not in outcome.error
    assert "Forecast.prob: probability must be within [0, 1], got 70" in outcome.error
    assert "if that is a percentage, give 0.7" in outcome.error


def test_the_run_stops_with_that_sentence(user_file, tmp_path):
    done = cc("evaluate", "-f", "runnable.py::Percent", "-n", "1", "-o", "run", cwd=tmp_path)
    assert done.returncode == 1
    assert "Forecast.prob: probability must be within [0, 1], got 70" in done.stderr
    assert "1 validation error for Forecast)" not in done.stderr


def test_a_returned_number_or_mapping_out_of_range_is_said_the_same_way():
    for value in (1.5, {"prob": 70}):

        class Returns(Forecaster):
            def __init__(self, answer: object) -> None:
                self.answer = answer

            async def forecast(self, question):
                return self.answer

        outcome = asyncio.run(Returns(value).forecast_safely(ForecastingQuestion(title="Will it?")))
        assert "probability must be within [0, 1]" in (outcome.error or ""), outcome.error


# ------------------------------------------------------------------ -f file.py


def test_a_file_without_its_class_lists_the_forecasters_in_it_without_running_it(user_file, tmp_path):
    from consistency.forecasters.loading import forecaster_classes_in

    assert forecaster_classes_in(user_file) == ["Blocking", "Percent", "Decorated"]
    for spec in ("mine.py", "mine.py::"):
        done = cc("evaluate", "-f", spec, "-n", "1", cwd=tmp_path)
        assert done.returncode == 2
        assert "mine.py is a Python file: name the forecaster class in it, mine.py::Blocking" in done.stderr
        assert "it defines Blocking, Percent, Decorated" in done.stderr
        assert "openai/" not in done.stderr
        assert "must not be executed" not in done.stderr


def test_a_missing_file_and_a_missing_class_are_said(user_file, tmp_path):
    done = cc("evaluate", "-f", "nope.py", "-n", "1", cwd=tmp_path)
    assert done.returncode == 2
    assert "nope.py: no such file (a forecaster class in a file is named nope.py::ClassName)" in done.stderr
    done = cc("evaluate", "-f", "runnable.py::Nope", "-n", "1", cwd=tmp_path)
    assert done.returncode == 2
    assert "defines no 'Nope'; its forecaster classes: Blocking, Percent, Decorated" in done.stderr


# ------------------------------------------------------------------ -o on a complete run


def test_out_on_a_complete_run_says_it_is_complete(tmp_path):
    evaluate("constant", checks=["neg"], limit=1, out=tmp_path / "run")
    with pytest.raises(RunDirError) as caught:
        evaluate("constant", checks=["neg"], limit=1, out=tmp_path / "run")
    said = str(caught.value)
    assert "already holds a complete run" in said
    assert "--resume" not in said
    assert f"cc score {tmp_path / 'run'}" in said and "another --out" in said
    done = cc("evaluate", "-f", "constant", "-c", "neg", "-n", "1", "-o", "run", cwd=tmp_path)
    assert done.returncode == 2
    assert "already holds a complete run" in done.stderr and "--resume" not in done.stderr


def test_out_on_an_unfinished_run_still_points_to_resume(tmp_path):
    evaluate("constant", checks=["neg"], limit=1, out=tmp_path / "run")
    run_json = tmp_path / "run" / "run.json"
    run_json.write_text(run_json.read_text().replace('"status": "complete"', '"status": "interrupted"'))
    with pytest.raises(RunDirError, match=r"already holds a run \(interrupted\); finish it with --resume"):
        evaluate("constant", checks=["neg"], limit=1, out=tmp_path / "run")
