"""`consistency.analysis`: DataFrames of runs agree with the files and with `cc score`, across runs and kinds."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

if importlib.util.find_spec("pandas") is None:  # the analysis extra; dev has it, so CI must run these
    if os.environ.get("CC_REQUIRE_EXTRAS") == "1":
        pytest.fail("CC_REQUIRE_EXTRAS=1 but pandas is not installed (the dev extra has it)", pytrace=False)
    pytest.skip("pandas is not installed (pip install -e '.[analysis]')", allow_module_level=True)

import consistency
from consistency import analysis
from consistency.datasets import benchmark_dir
from consistency.evaluation import evaluate
from consistency.evaluation.ground_truth import evaluate_questions
from consistency.evaluation.scoring import score_path
from consistency.forecasters.simple import ConstantForecaster

TABLES = Path(consistency.__file__).parent / "datasets" / "tables" / "runs"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("analysis")
    out = {
        "half": evaluate(ConstantForecaster(0.5), checks=["neg", "and"], limit=6, out=root / "runs" / "half").run_dir,
        "high": evaluate(ConstantForecaster(0.9), checks=["neg", "and"], limit=6, out=root / "runs" / "high").run_dir,
    }
    questions = root / "resolved.jsonl"
    with questions.open("w") as fh:
        for i, line in enumerate((benchmark_dir() / "questions.jsonl").read_text().splitlines()[:12]):
            fh.write(json.dumps({**json.loads(line), "resolution": i % 3 == 0}) + "\n")
    out["gt"] = evaluate_questions(ConstantForecaster(0.8), questions, out=root / "gt").run_dir
    out["root"] = root / "runs"
    return out


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_runs_df_has_one_typed_row_per_run_with_its_record(runs):
    df = analysis.runs_df(runs["root"])  # a folder of runs
    assert list(df["run"]) == ["half", "high"]
    assert set(df["kind"]) == {"consistency"} and set(df["status"]) == {"complete"}
    assert str(df["started"].dtype).startswith("datetime64") and df["started"].notna().all()
    assert str(df["questions"].dtype) == "Int64" and str(df["cost"].dtype) == "Float64"
    meta = json.loads((runs["half"] / "run.json").read_text())
    assert df.loc[0, "questions"] == meta["questions"] and df.loc[0, "forecaster"] == meta["forecaster"]["name"]
    assert df.loc[0, "checks"] == 2


def test_tuples_df_has_every_line_with_the_scores_written_on_it(runs):
    df = analysis.tuples_df([runs["half"], runs["high"]], text=True)
    for run in ("half", "high"):
        for check, name in (("NEGATION", "NegChecker"), ("AND", "AndChecker")):
            lines = _lines(runs[run] / f"{name}.jsonl")
            rows = df[(df["run"] == run) & (df["check"] == check)]
            assert len(rows) == len(lines) > 0
            for (_, row), line in zip(rows.iterrows(), lines, strict=True):
                data = line["violation_data"]
                assert row["arbitrage"] == data["default"]["violation"]
                assert row["frequentist"] == data["frequentist"]["violation"]
                assert row["arbitrage_violated"] == (not data["default"]["check"])
                first = next(iter(line["line"].values()))["question"]
                assert row["title"] == first["title"]
                assert row["tuple"] == "|".join(e["question"]["id"] for e in line["line"].values())
    assert df["check"].dtype == "category" and df["arbitrage_violated"].dtype == bool


def test_checks_df_equals_cc_scores_statistics_on_unscored_files():
    """The bundled table runs carry no scores: the frame scores them, and must match `cc score`'s summary."""
    frame = analysis.checks_df(TABLES)
    assert len(frame) == 6 * 4
    for scored in (f for run in sorted(TABLES.iterdir()) for f in score_path(run).files):
        run = Path(scored.path).parent.name
        row = frame[(frame["run"] == run) & (frame["check"] == scored.check.name)].iloc[0]
        for metric, column in analysis.METRIC_COLUMNS.items():
            stats = scored.stats()[metric]
            assert row[f"{column}_mean"] == pytest.approx(stats.avg_violation, rel=1e-9, abs=1e-12)
            assert row[f"{column}_violated"] == pytest.approx(stats.fraction_violated, rel=1e-9)
        assert row["tuples"] == scored.stats()["default"].num_samples


def test_forecasts_df_has_one_row_per_question_of_each_tuple(runs):
    tuples = analysis.tuples_df(runs["half"])
    df = analysis.forecasts_df(runs["half"])
    fields = {"NEGATION": 2, "AND": 3}
    assert len(df) == sum(fields[c] * n for c, n in tuples["check"].value_counts().items())
    assert (df["prob"] == 0.5).all()
    neg = df[(df["check"] == "NEGATION") & (df["line"] == 1)]
    assert list(neg["field"]) == ["P", "not_P"]
    line = _lines(runs["half"] / "NegChecker.jsonl")[0]
    assert list(neg["question_id"]) == [line["line"][f]["question"]["id"] for f in ("P", "not_P")]


def test_ground_truth_df_reads_the_scored_questions(runs):
    df = analysis.ground_truth_df([runs["gt"], runs["half"]])  # the tuple run holds none: skipped
    lines = _lines(runs["gt"] / "ground_truth_results.jsonl")
    assert len(df) == len(lines) == 12
    assert (df["prob"] == 0.8).all()
    expected = [(0.8 - 1.0) ** 2 if i % 3 == 0 else 0.8**2 for i in range(12)]
    by_id = {line["question"]["id"]: line for line in lines}
    for _, row in df.iterrows():
        assert row["resolution"] == float(by_id[row["question_id"]]["resolution"])
    assert sorted(df["brier"]) == pytest.approx(sorted(expected))
    with pytest.raises(analysis.AnalysisError, match="no ground-truth results"):
        analysis.ground_truth_df(runs["half"])


def test_a_bad_line_is_named_in_the_frame_not_dropped_silently(tmp_path, caplog):
    run = tmp_path / "fair"
    shutil.copytree(TABLES / "fair", run)
    with (run / "NegChecker.jsonl").open("a") as fh:
        fh.write('{"line": {"P": {"question": {"title": "no id"}, "forecast": {"prob": 0.5}}}}\n')
    df = analysis.tuples_df(run)
    assert len(df) == 12
    assert len(df.attrs["errors"]) == 1 and "NegChecker.jsonl:4" in df.attrs["errors"][0]
    assert "NegChecker.jsonl:4" in caplog.text
    assert analysis.checks_df(run).set_index("check").loc["NEGATION", "unreadable"] == 1


def test_a_path_without_results_is_one_clear_error(tmp_path):
    with pytest.raises(analysis.AnalysisError, match="neither a result nor a folder of results"):
        analysis.tuples_df(tmp_path)
    with pytest.raises(analysis.AnalysisError, match="no such file"):
        analysis.runs_df(tmp_path / "missing")
    with pytest.raises(analysis.AnalysisError, match="no paths given"):
        analysis.runs_df([])


def test_tuple_frame_of_nothing_has_the_documented_columns():
    df = analysis.tuple_frame([])
    assert list(df.columns)[:5] == ["run", "forecaster", "check", "line", "tuple"]
    assert {"arbitrage", "arbitrage_violated", "frequentist_violated"} <= set(df.columns)
    assert len(df) == 0 and not math.isnan(len(df.columns))
    assert np.issubdtype(df["line"].dtype, np.integer)


def test_diff_df_has_cc_diffs_figures_per_check_and_overall(runs):
    from consistency.evaluation.diff import diff_runs

    df = analysis.diff_df(runs["half"], runs["high"], resamples=200)
    result = diff_runs(runs["half"], runs["high"], resamples=200)
    assert list(df["group"]) == [*result.groups, "overall"]
    overall = df.set_index("group").loc["overall"]
    assert overall["n"] == result.overall.n and overall["diff"] == result.overall.diff
    assert set(df.loc[df["significantly_worse"], "group"]) == set(result.worse())
