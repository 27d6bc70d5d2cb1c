"""``backend="polars"``: every frame as polars, the same columns, types and values as the pandas frame."""

from __future__ import annotations

import importlib.util
import os
import sys

import numpy as np
import pytest

if importlib.util.find_spec("pandas") is None or importlib.util.find_spec("polars") is None:  # dev has both
    if os.environ.get("CC_REQUIRE_EXTRAS") == "1":
        pytest.fail("CC_REQUIRE_EXTRAS=1 but pandas or polars is not installed (the dev extra has both)", pytrace=False)
    pytest.skip("pandas or polars is not installed (pip install -e '.[analysis-polars]')", allow_module_level=True)

import polars as pl

from consistency import analysis
from tests.support.analysis_results import AS_OF, make_results

POLARS = {
    "string": pl.String,
    "category": pl.Categorical,
    "int64": pl.Int64,
    "Int64": pl.Int64,
    "float64": pl.Float64,
    "Float64": pl.Float64,
    "bool": pl.Boolean,
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    os.environ.setdefault("CC_CACHE_DIR", str(root / "cache"))
    return make_results(root)


def _calls(r):
    fb = r["fb"]
    sets = sorted((fb / "forecasts").iterdir())
    return {
        "runs_df": lambda **b: analysis.runs_df([r["half"], r["gt_low"], r["repair"], r["attack"]], **b),
        "checks_df": lambda **b: analysis.checks_df([r["half"], r["high"]], **b),
        "tuples_df": lambda **b: analysis.tuples_df([r["half"], r["high"]], **b),
        "tuples_df(text=True)": lambda **b: analysis.tuples_df(r["half"], text=True, **b),
        "forecasts_df": lambda **b: analysis.forecasts_df(r["high"], **b),
        "ground_truth_df": lambda **b: analysis.ground_truth_df(r["truth"], **b),
        "diff_df": lambda **b: analysis.diff_df(r["half"], r["high"], resamples=100, **b),
        "leaderboard_df": lambda **b: analysis.leaderboard_df(r["truth"], **b),
        "forecastbench_df": lambda **b: analysis.forecastbench_df(
            fb / "datasets", sets, bootstrap=30, today=AS_OF, **b
        ),
        "repairs_df": lambda **b: analysis.repairs_df(r["repair"], **b),
        "attacks_df": lambda **b: analysis.attacks_df(r["attack"], **b),
    }


def test_every_frame_is_declared_and_called_here(results):
    assert set(_calls(results)) == set(analysis.FRAMES)


@pytest.mark.parametrize("name", list(analysis.FRAMES))
def test_the_polars_frame_equals_the_pandas_frame(results, name):
    call = _calls(results)[name]
    pd_frame, pl_frame = call(), call(backend="polars")
    assert isinstance(pl_frame, pl.DataFrame) and len(pl_frame) == len(pd_frame) > 0
    schema = analysis.FRAMES[name]
    assert pl_frame.columns == list(pd_frame.columns) == [c.name for c in schema]
    for column in schema:
        assert str(pd_frame[column.name].dtype) == analysis.DTYPES[column.dtype][0], column.name
        got = pl_frame[column.name]
        if column.dtype == "datetime":
            assert got.dtype == pl.Datetime("us", "UTC")
            expected = [None if v is None or v != v else v.to_pydatetime() for v in pd_frame[column.name]]
            assert got.to_list() == expected
            continue
        assert got.dtype == POLARS[column.dtype], column.name
        expected = pd_frame[column.name].astype(object).where(pd_frame[column.name].notna(), None).tolist()
        values = got.cast(pl.String).to_list() if column.dtype == "category" else got.to_list()
        if column.dtype in ("float64", "Float64"):
            np.testing.assert_array_equal(
                np.array([np.nan if v is None else v for v in values], dtype=float),
                np.array([np.nan if v is None else v for v in expected], dtype=float),
            )
        else:
            assert values == [str(v) if column.dtype == "category" and v is not None else v for v in expected]


def test_without_polars_one_sentence_names_the_extra(results, monkeypatch):
    monkeypatch.setitem(sys.modules, "polars", None)  # as if not installed: import polars raises ImportError
    with pytest.raises(analysis.AnalysisError, match=r'pip install "forecast-consistency\[analysis-polars\]"'):
        analysis.runs_df(results["half"], backend="polars")
    with pytest.raises(analysis.AnalysisError, match="unknown backend 'arrow'; choose pandas or polars"):
        analysis.runs_df(results["half"], backend="arrow")  # type: ignore[arg-type]
