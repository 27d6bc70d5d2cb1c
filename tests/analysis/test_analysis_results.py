"""DataFrames of leaderboards, repairs and attacks: each row what the command's library call returns."""

from __future__ import annotations

import importlib.util
import json
import math
import os

import pytest

if importlib.util.find_spec("pandas") is None:  # the analysis extra; dev has it, so CI must run these
    if os.environ.get("CC_REQUIRE_EXTRAS") == "1":
        pytest.fail("CC_REQUIRE_EXTRAS=1 but pandas is not installed (the dev extra has it)", pytrace=False)
    pytest.skip("pandas is not installed (pip install -e '.[analysis]')", allow_module_level=True)

from consistency import analysis
from consistency.accuracy.ranking import leaderboard
from consistency.accuracy.table import load_table
from consistency.forecastbench import load
from consistency.forecastbench.forecasts import read_forecasts
from consistency.forecastbench.leaderboard import leaderboard as fb_leaderboard
from consistency.jsonl import iter_json_lines
from tests.support.analysis_results import AS_OF, make_results


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    os.environ.setdefault("CC_CACHE_DIR", str(root / "cache"))
    return make_results(root)


def _declared(df, name: str) -> None:
    assert list(df.columns) == [c.name for c in analysis.FRAMES[name]]


@pytest.mark.parametrize("method", ["brier", "log", "peer"])
def test_leaderboard_df_is_cc_leaderboards_standings(results, method):
    df = analysis.leaderboard_df(results["truth"], method)
    _declared(df, "leaderboard_df")
    expected = leaderboard(load_table([results["truth"]]), method)
    assert list(df["forecaster"]) == [s.forecaster for s in expected] and list(df["rank"]) == [1, 2]
    for row, s in zip(df.itertuples(), expected, strict=True):
        assert row.score == s.score and row.questions == s.n_questions
        assert math.isnan(row.low) if s.low is None else row.low == s.low
    assert set(df["method"]) == {method} and df["lower_is_better"].iloc[0] == (method != "peer")
    if method == "brier":  # 0.3 beats 0.8 on questions a third of which resolved yes
        assert list(df["forecaster"]) == ["constant_0.3", "constant_0.8"]
        assert list(df["score"]) == pytest.approx([(4 * 0.7**2 + 8 * 0.3**2) / 12, (4 * 0.2**2 + 8 * 0.8**2) / 12])


def test_forecastbench_df_has_forecastbenchs_columns_unrounded(results):
    fb = results["fb"]
    sets = sorted((fb / "forecasts").iterdir())
    df = analysis.forecastbench_df(fb / "datasets", sets, bootstrap=50, today=AS_OF)
    _declared(df, "forecastbench_df")
    questions = load([str(fb / "datasets")]).imported.questions
    board = fb_leaderboard(questions, [read_forecasts(p) for p in sets], bootstrap=50, today=AS_OF)
    assert list(df["forecaster"]) == [s.forecaster for s in board.standings]
    assert df.attrs["rounds"] == board.rounds == ["2025-03-02", "2025-03-16"]
    for row, s in zip(df.itertuples(), board.standings, strict=True):
        assert (row.rank, row.baseline) == (s.rank, s.baseline)
        for part in ("dataset", "market", "overall"):
            score = getattr(s, part)
            assert getattr(row, part) == score.index and getattr(row, f"{part}_brier") == score.brier
            assert getattr(row, f"{part}_n") == score.n and getattr(row, f"{part}_low") == score.low
    baselines = df[df["baseline"]].set_index("forecaster")
    assert baselines.loc["Always 0.5", "overall"] == pytest.approx(50.0)
    assert df["forecaster"].iloc[0] == "Lab sharp"


def test_repairs_df_has_each_check_and_the_total_of_repair_json(results):
    df = analysis.repairs_df([results["repair"], results["half"]])  # the run that is not a repair: skipped
    _declared(df, "repairs_df")
    report = json.loads((results["repair"] / "repair.json").read_text())
    assert list(df["check"]) == [c["check"] for c in report["checks"]] + [analysis.TOTAL]
    for row, part in zip(df.itertuples(), [*report["checks"], report["total"]], strict=True):
        assert (row.tuples, row.moved, row.guaranteed) == (part["tuples"], part["moved"], part["guaranteed"])
        assert row.violation_before == part["violation_before"] and row.resolved == part["realized"]["n"]
    assert set(df["score"]) == {"brier"} and df["joint"].all()
    assert str(df["source"].iloc[0]) == report["source"]
    with pytest.raises(analysis.AnalysisError, match="no repair results"):
        analysis.repairs_df(results["half"])


def test_attacks_df_is_the_search_log_row_for_row(results):
    df = analysis.attacks_df(results["attack"])
    _declared(df, "attacks_df")
    log = [obj for _, obj in iter_json_lines(results["attack"] / "search_log.jsonl")]
    summary = json.loads((results["attack"] / "attack.json").read_text())["summary"]
    assert len(df) == len(log) > 0
    for row, line in zip(df.itertuples(), log, strict=True):
        assert (row.tuple, row.sampler, row.check, row.returned) == (line["key"], line["sampler"], line["check"],
                                                                     line["returned"])  # fmt: skip
        assert row.titles == " | ".join(line["titles"]) and row.cost == line["cost"]
        if line["violation"] is None:
            assert math.isnan(row.arbitrage) and not row.violated
        else:
            assert row.violated == (line["violation"] > summary["threshold"])
    assert (df["sampler"] == "search").sum() == summary["tuples_evaluated"]
    assert df["returned"].sum() == sum(c["found"]["n"] for c in summary["per_check"].values())
    with pytest.raises(analysis.AnalysisError, match="no attack results"):
        analysis.attacks_df(results["half"])


def test_an_unfinished_attack_is_named_not_dropped(results, tmp_path):
    import shutil

    copy = tmp_path / "running"
    shutil.copytree(results["attack"], copy)
    (copy / "search_log.jsonl").unlink()
    df = analysis.attacks_df([copy, results["attack"]])
    assert set(df["run"]) == {"attack"}
    assert df.attrs["errors"] == [f"{copy}: no search log yet (the attack has not finished)"]


def test_runs_df_tells_every_kind_apart(results):
    df = analysis.runs_df([results["half"], results["gt_low"], results["repair"], results["attack"]])
    assert list(df["kind"]) == ["consistency", "ground_truth", "repair", "attack"]
    assert df.set_index("kind").loc["attack", "status"] == "complete"


def test_every_frame_keeps_its_declared_columns_and_types_when_empty():
    df = analysis.tuple_frame([])
    _declared(df, "tuples_df")
    for column in analysis.TUPLE_COLUMNS:
        assert str(df[column.name].dtype) == analysis.DTYPES[column.dtype][0], column.name


def test_the_reference_page_lists_every_frames_columns_from_their_declarations():
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("dataframes_hook", root / "docs" / "hooks" / "dataframes.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    page = (root / "docs" / "reference" / "dataframes.md").read_text(encoding="utf-8")
    assert hook.MARKER in page
    rendered = hook.on_page_markdown(page)
    for name, columns in analysis.FRAMES.items():
        assert f"### `{name}`" in rendered
        for c in columns:
            pandas, polars = analysis.DTYPES[c.dtype]
            assert f"| `{c.name}` | `{pandas}` | `{polars}` |" in rendered, (name, c.name)
