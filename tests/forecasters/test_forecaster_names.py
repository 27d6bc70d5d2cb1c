"""Mistyped names are refused up front: an unknown forecaster or model exits 2 with a suggestion and leaves no run
directory behind; a mistyped check is suggested too; `cc score` passes over a run directory that holds nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import consistency
from consistency.forecasters import ForecasterSpecError, load_forecaster
from consistency.forecasters.loading import hosted_model

CC = Path(sys.executable).parent / "cc"
SAMPLE = Path(consistency.__file__).parent / "datasets" / "sample" / "forecasts"


def cc(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    base.update(NO_COLOR="1", COLUMNS="400", **(env or {}))
    return subprocess.run([str(CC), *argv], cwd=cwd, env=base, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("spec", "suggested"),
    [("lcoal", "local"), ("basci", "basic"), ("gpt-4o-mnii", "gpt-4o-mini"), ("cot:lcoal", "local")],
)
def test_an_unknown_name_is_refused_with_a_suggestion_and_how_to_force_it(spec, suggested):
    with pytest.raises(ForecasterSpecError) as info:
        load_forecaster(spec)
    message = str(info.value)
    assert f"did you mean {suggested!r}" in message
    name = spec.rpartition(":")[2]
    assert f"openai/{name}" in message and f"::{name}" in message  # how to use an unlisted model anyway


@pytest.mark.parametrize("spec", ["local", "gpt-4o", "openai/gpt-5", "openrouter/meta/x", "http://h:1/v1::any"])
def test_known_models_and_explicit_providers_are_models(spec):
    assert hosted_model(spec) == spec


def test_a_bare_name_from_the_users_price_file_is_known(tmp_path, monkeypatch):
    from consistency.llm.accounting import price_table

    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"my-model": {"input": 1, "output": 2}}))
    monkeypatch.setenv("CC_PRICES", str(prices))
    price_table.cache_clear()
    try:
        assert load_forecaster("my-model").config()["model"] == "my-model"
    finally:
        price_table.cache_clear()


def test_model_options_are_held_to_the_same_rule():
    with pytest.raises(ForecasterSpecError, match="did you mean 'gpt-4o'"):
        load_forecaster("basic", ["model=gpt-4p"])
    with pytest.raises(ForecasterSpecError, match="did you mean 'local'"):
        load_forecaster("arbitrage:lcoal")  # arbitrage:SPEC's SPEC is a forecaster spec, checked as one


def test_cc_evaluate_refuses_a_typo_with_exit_2_and_no_run_directory(tmp_path):
    done = cc("evaluate", "--forecaster", "lcoal", "-n", "1", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "did you mean 'local'" in done.stderr
    assert "OPENAI_API_KEY" not in done.stderr
    assert not (tmp_path / "runs").exists()


def test_cc_evaluate_help_lists_every_kind_of_forecaster(tmp_path):
    text = " ".join(cc("evaluate", "--help", cwd=tmp_path).stdout.split())
    for kind in ("basic", "cot", "constant", "uniform", "crowd", "replay", "arbitrage:", "file.py::Class", "URL::"):
        assert kind in text


def test_a_mistyped_check_gets_a_suggestion(tmp_path):
    done = cc("evaluate", "-c", "negg", "-f", "constant", cwd=tmp_path)
    assert done.returncode == 2
    assert "unknown check 'negg'; did you mean 'neg'?" in done.stderr
    assert not (tmp_path / "runs").exists()


def test_cc_score_skips_a_run_directory_with_nothing_in_it(tmp_path):
    runs = tmp_path / "runs"
    failed = runs / "2026_basic_gpt-4o_bundled"
    failed.mkdir(parents=True)
    for name in ("NegChecker", "CondChecker"):
        (failed / f"{name}.jsonl").write_text("")
    (failed / "run.json").write_text(json.dumps({"status": "failed", "failure": "OPENAI_API_KEY is not set"}))
    good = runs / "good"
    good.mkdir()
    for path in SAMPLE.glob("*.jsonl"):
        (good / path.name).write_bytes(path.read_bytes())
    done = cc("score", "runs", "-o", "x", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "skipped" in done.stderr and "every <Checker>.jsonl is empty" in done.stderr
    assert "OPENAI_API_KEY is not set" in done.stderr  # why the run is empty, from its run.json
    assert "(1 of 2 scored, 1 skipped)" in done.stderr
    assert (tmp_path / "x" / "good" / "summary.json").is_file()
    alone = cc("score", str(failed), "-o", "y", cwd=tmp_path)
    assert alone.returncode == 1 and "no line could be scored" in alone.stderr


def test_a_missing_key_stops_before_a_run_directory_exists(tmp_path):
    done = cc("evaluate", "-f", "cot:gpt-4o-mini", "-n", "1", cwd=tmp_path)  # cc() drops every *_API_KEY
    assert done.returncode == 1
    assert "OPENAI_API_KEY is not set" in done.stderr and "--resume" not in done.stderr
    assert not (tmp_path / "runs").exists()
