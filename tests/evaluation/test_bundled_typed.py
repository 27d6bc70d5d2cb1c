"""The bundled multiple-choice and numeric benchmark is one name away: `cc evaluate -t bundled:typed` runs every
check of it over real HTTP (a coherent world: no violation on any), the run records the name (so a resume finds it
on any install), and an unknown name is one sentence listing the bundled sets."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from consistency.cli import app
from consistency.datasets import bundled_sets, tuples_source, typed_benchmark_dir
from consistency.fake_openai import ScriptedServer
from consistency.fake_openai.rules import coherent_rule
from consistency.jsonl import iter_json_lines

runner = CliRunner()
TYPED_FILES = {p.stem for p in (typed_benchmark_dir() / "tuples").glob("*.jsonl")}


pytestmark = pytest.mark.usefixtures("in_tmp_dir")


def test_bundled_typed_runs_every_check_of_the_typed_benchmark_and_a_coherent_world_violates_none(tmp_path):
    with ScriptedServer(coherent_rule()) as srv:
        res = runner.invoke(app, ["evaluate", "-f", f"basic:{srv.model_spec()}", "-t", "bundled:typed", "-o", "run"])
    assert res.exit_code == 0, res.output
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["benchmark"]["tuples"] == "bundled:typed"
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert (
        summary["failures"] == [] and {c["path"].split("/")[-1][:-6] for c in summary["checks"].values()} == TYPED_FILES
    )
    for stem in TYPED_FILES:
        lines = [obj for _, obj in iter_json_lines(tmp_path / "run" / f"{stem}.jsonl")]
        assert lines and max(x["violation_data"]["default"]["violation"] for x in lines) < 1e-9, stem


def test_an_unknown_bundled_set_is_one_sentence_naming_the_sets():
    res = runner.invoke(app, ["evaluate", "-f", "constant", "-t", "bundled:mc", "-o", "run"])
    assert res.exit_code == 2
    assert "bundled:mc: no such bundled tuple set; the bundled sets are bundled:default, bundled:typed" in res.output
    assert tuples_source("bundled:default") == bundled_sets()["default"] and tuples_source(None) is None
