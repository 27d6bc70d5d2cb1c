"""The paper's Table 1 in two commands on a same-shaped fixture of the published download (support/paper_download.py):
`cc score DOWNLOAD/src/data/forecasts -o scored`, then `cc correlate DOWNLOAD/src/data/forecasts scored`, with no
--pair although every forecaster has ground-truth runs on two question sets; Git LFS pointers are named as such."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paper_download import LFS_RUN, MODELS, SPLITS, build, truth_name, tuples_name

CC = Path(sys.executable).parent / "cc"


def cc(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run([str(CC), *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("paper")
    build(root / "cf" / "src" / "data" / "forecasts")
    done = cc("score", "cf/src/data/forecasts", "-o", "scored", cwd=root)
    assert done.returncode == 0, done.stderr
    assert f"skipped cf/src/data/forecasts/{LFS_RUN}/NegChecker.jsonl: a Git LFS pointer, not the data" in done.stderr
    assert "git lfs pull" in done.stderr and "column 1" not in done.stderr
    assert f"({2 * len(MODELS)} of {2 * len(MODELS) + 1} scored, 1 skipped)" in done.stderr
    return root


def test_correlate_pairs_each_tuple_run_with_the_split_its_questions_come_from(scored):
    done = cc("correlate", "cf/src/data/forecasts", "scored", "--bootstrap", "200", cwd=scored)
    assert done.returncode == 0, done.stderr
    for model in MODELS:
        for split in SPLITS:
            assert f"paired {truth_name(model, split)} with scored/{tuples_name(model, split)}\n" in done.stderr
    assert "left out" not in done.stderr and "--pair" not in done.stderr
    header = done.stdout.splitlines()[2]
    assert header.index("scraped arbitrage") < header.index("newsapi arbitrage")  # the paper's column order
    assert "forecasters paired: 5 on scraped, 5 on newsapi, 0 left out" in " ".join(done.stdout.split())
    print(done.stdout)  # the example output of the documentation


def test_correlate_json_has_one_correlation_per_question_set(scored):
    done = cc("correlate", "cf/src/data/forecasts", "scored", "--bootstrap", "200", "--json", cwd=scored)
    result = json.loads(done.stdout)
    assert list(result["splits"]) == ["scraped", "newsapi"]
    for split, summary in result["splits"].items():
        assert set(summary["pairs"]) == {truth_name(m, split) for m in MODELS}
        assert summary["default"]["aggregate"]["n"] == len(MODELS)
        assert summary["default"]["aggregate"]["r"] > 0  # the fixture's worse forecasters are less consistent


def test_an_explicit_split_overrides_the_questions(scored):
    swapped = ["--split", "scraped=20240701_20240831", "--split", "tuples_newsapi=20240501_20240815"]
    done = cc("correlate", "cf/src/data/forecasts", "scored", "--bootstrap", "50", *swapped, cwd=scored)
    assert done.returncode == 0, done.stderr
    model = MODELS[0]
    assert f"paired {truth_name(model, 'newsapi')} with scored/{tuples_name(model, 'scraped')}\n" in done.stderr
    bad = cc("correlate", "cf/src/data/forecasts", "scored", "--split", "scraped", cwd=scored)
    assert bad.returncode == 2 and "expected TUPLES=SPLIT" in bad.stderr


def test_without_question_overlap_the_error_names_split_and_pair(scored, tmp_path):
    # ground truth given as summaries only: no questions to compare, so the two splits stay a tie
    for model in MODELS:
        for split in SPLITS:
            target = tmp_path / truth_name(model, split)
            target.mkdir()
            summary = scored / "cf/src/data/forecasts" / truth_name(model, split) / "ground_truth_summary.json"
            (target / "ground_truth_summary.json").write_text(summary.read_text())
    done = cc("correlate", str(tmp_path), "scored", cwd=scored)
    assert done.returncode == 2
    assert "use --split TUPLES=SPLIT (e.g. --split scraped=20240501_20240815) or --pair" in done.stderr
    fixed = cc("correlate", str(tmp_path), "scored", "--split", "scraped=20240501_20240815",
               "--split", "newsapi=20240701_20240831", "--bootstrap", "50", cwd=scored)  # fmt: skip
    assert fixed.returncode == 0, fixed.stderr


def test_the_tutorial_shows_this_output(tmp_path):
    """docs/tutorials/paper-tables.md shows the two commands' output on this fixture: it must stay what they print."""
    from tests.support.docs_examples import DOCS, normalised

    page = (DOCS / "tutorials" / "paper-tables.md").read_text(encoding="utf-8")
    shown = page.split("<!-- output of tests/reference/test_paper_table1.py -->\n```text\n", 1)[1].split("\n```", 1)[0]
    build(tmp_path / "cf" / "src" / "data" / "forecasts")
    printed = []
    for argv in (["score", "cf/src/data/forecasts", "-o", "scored"], ["correlate", "cf/src/data/forecasts", "scored"]):
        env = os.environ | {"NO_COLOR": "1", "COLUMNS": "200"}
        done = subprocess.run([str(CC), *argv], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert done.returncode == 0, done.stdout
        printed.append(f"$ cc {' '.join(argv)}\n{done.stdout.decode()}".rstrip("\n"))
    assert normalised("\n".join(printed)) == normalised(shown)
