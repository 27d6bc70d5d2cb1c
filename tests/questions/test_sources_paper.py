"""The paper's dataset by name or hf:// path: a local directory in its layout (CC_PAPER_DATA), the
Hugging Face cache read offline, and clear errors. The files here are the project's own bundled data
laid out like the paper's repository; the paper's data is never copied into the project."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from consistency.evaluation.benchmark import bundled_tuples
from consistency.models import ForecastingQuestion
from consistency.sources.paper import NAMES, DatasetRefError, dataset_path, parse_hf
from tests.generate.test_generate_cli import cc


def layout(root: Path) -> Path:
    tuples = root / NAMES["tuples_2028"]
    tuples.mkdir(parents=True)
    for path in bundled_tuples().glob("*.jsonl"):
        shutil.copy(path, tuples / path.name)
    questions = root / NAMES["scraped_resolved_2024"]
    questions.parent.mkdir(parents=True)
    questions.write_text("".join(
        ForecastingQuestion(id=f"q{i}", title=f"Will test event {i} happen?", body="Resolves YES if it happens.",
                            resolution_date="2024-07-01", resolution=i % 2 == 0).model_dump_json() + "\n"
        for i in range(6)
    ))  # fmt: skip
    return root


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("CC_PAPER_DATA", raising=False)
    # huggingface_hub reads those variables once, when imported: if an earlier test imported it (the minilm
    # embedder's sentence-transformers does), its constants must be pointed here as well
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:
        monkeypatch.setattr(constants, "HF_HOME", str(tmp_path / "hf"))
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


def test_local_directory_feeds_evaluate(tmp_path, monkeypatch):
    monkeypatch.setenv("CC_PAPER_DATA", str(layout(tmp_path / "ccflmf")))
    tuples = cc(tmp_path, "evaluate", "-t", "paper:tuples_2028", "--forecaster", "constant", "--checks", "neg",
                "-n", 2, "--out", "r1")  # fmt: skip
    assert tuples.returncode == 0, tuples.stderr
    assert (tmp_path / "r1" / "NegChecker.jsonl").exists()
    truth = cc(tmp_path, "evaluate", "--questions", "paper:scraped_resolved_2024", "--forecaster", "constant",
               "--out", "r2")  # fmt: skip
    assert truth.returncode == 0, truth.stderr
    assert "6 questions, 0 failed" in truth.stdout + truth.stderr
    bad = cc(tmp_path, "evaluate", "-t", "paper:tuples_2027", "--forecaster", "constant")
    assert bad.returncode == 2 and "unknown dataset 'tuples_2027'" in bad.stderr and "tuples_2028" in bad.stderr


def test_hub_cache_is_read_offline(tmp_path):
    with pytest.raises(DatasetRefError, match="not in the Hugging Face cache"):
        dataset_path("paper:tuples_2028")
    # what huggingface_hub leaves behind after one online download
    repo = tmp_path / "hf" / "hub" / "datasets--dpaleka--ccflmf"
    commit = "0123456789abcdef0123456789abcdef01234567"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    layout(repo / "snapshots" / commit)
    path = dataset_path("paper:tuples_2028")
    assert path == repo / "snapshots" / commit / "src/data/tuples/2028" and (path / "NegChecker.jsonl").exists()
    assert dataset_path("hf://datasets/dpaleka/ccflmf/src/data/tuples/2028") == path


def test_references_and_plain_paths():
    assert parse_hf("hf://datasets/dpaleka/ccflmf@v1/src/data/tuples/2028") == (
        "dpaleka/ccflmf", "v1", "src/data/tuples/2028")  # fmt: skip
    assert parse_hf(str(Path("hf://datasets/a/b/c.jsonl"))) == ("a/b", None, "c.jsonl")
    with pytest.raises(DatasetRefError, match="expected hf://datasets/"):
        parse_hf("hf://models/a/b/c")
    assert dataset_path("some/dir") == Path("some/dir") and dataset_path(None) is None
