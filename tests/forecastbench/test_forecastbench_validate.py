"""The validator written from ForecastBench's rules, case by case, and the file names it expects."""

from __future__ import annotations

import copy
import math
from datetime import date

import pytest

from consistency.forecastbench import ForecastBenchError, validate_forecast_set
from consistency.forecastbench.export import file_name, question_sets
from consistency.forecastbench.formats import question_set
from consistency.forecastbench.reader import import_set
from consistency.forecastbench.synthetic import Shape, forecast_set, make_round

DUE = "2025-03-02"


@pytest.fixture(scope="module")
def case():
    rnd = make_round(
        date(2025, 3, 2), date(2025, 6, 1), Shape({"manifold": 20, "infer": 20}, {"fred": 10, "acled": 10})
    )
    keys = set(next(iter(question_sets(import_set(question_set(rnd.question_set, "q")).questions).values())).keys)
    return forecast_set(rnd, "Lab", "Bot", noise=0.5), keys


def _findings(doc, keys):
    verdict = validate_forecast_set(doc, keys)
    return verdict, [(f.severity, f.where, f.reason) for f in verdict.findings]


def test_a_complete_set_passes(case):
    doc, keys = case
    verdict, found = _findings(doc, keys)
    assert found == [] and verdict.ok and not verdict.rejected
    assert len(verdict.rows) == len(keys) == 40 + 20 * 8
    assert verdict.coverage.missing == {"overall": 0, "market": 0, "dataset": 0}


def test_a_wrong_horizon_drops_the_row(case):
    doc, keys = copy.deepcopy(case[0]), case[1]
    i = next(i for i, r in enumerate(doc["forecasts"]) if r["source"] == "fred")
    doc["forecasts"][i]["resolution_date"] = "2025-03-10"  # due + 8 days
    verdict, found = _findings(doc, keys)
    assert found[0][:2] == ("drops", f"forecasts[{i}]")
    assert "2025-03-10" in found[0][2] and "due date 2025-03-02 plus 7, 30" in found[0][2]
    assert not verdict.rejected and not verdict.ok
    doc["forecasts"][i]["resolution_date"] = None
    assert _findings(doc, keys)[1][0][0] == "drops"


def test_a_market_row_keeps_whatever_resolution_date_it_has(case):
    doc, keys = copy.deepcopy(case[0]), case[1]
    for r in doc["forecasts"]:
        if r["source"] == "manifold":
            r["resolution_date"] = "2030-01-01"
    assert _findings(doc, keys)[1] == []


def test_a_duplicate_dataset_row_rejects_the_file_and_a_duplicate_market_row_is_flagged(case):
    doc, keys = copy.deepcopy(case[0]), case[1]
    i = next(i for i, r in enumerate(doc["forecasts"]) if r["source"] == "acled")
    doc["forecasts"].append(dict(doc["forecasts"][i], forecast=0.9))
    verdict, found = _findings(doc, keys)
    assert verdict.rejected
    assert found == [
        ("rejects", f"forecasts[{len(doc['forecasts']) - 1}]", f"repeats forecasts[{i}]: the file is rejected")
    ]
    doc = copy.deepcopy(case[0])
    j = next(i for i, r in enumerate(doc["forecasts"]) if r["source"] == "infer")
    doc["forecasts"].append(dict(doc["forecasts"][j]))
    verdict, found = _findings(doc, keys)
    assert not verdict.rejected and found[0][0] == "drops" and "both would be joined" in found[0][2]


@pytest.mark.parametrize(
    "drop, parts",
    [
        ({"manifold": 3}, ["market"]),  # 3 of 40 market questions: 7.5%, but 1.5% of all rows
        ({"fred": 11}, ["overall", "dataset"]),  # 11 of 160 dataset rows: 6.9%; 5.5% of all 200
        ({"fred": 8}, []),  # 8 of 160: 5.0%, not more than 5%
        ({"manifold": 2}, []),  # exactly 5%
    ],
)
def test_too_many_missing_forecasts_keep_the_file_off_the_leaderboard(case, drop, parts):
    doc, keys = copy.deepcopy(case[0]), case[1]
    left = dict(drop)
    kept = []
    for r in doc["forecasts"]:
        if left.get(r["source"], 0) > 0:
            left[r["source"]] -= 1
            continue
        kept.append(r)
    doc["forecasts"] = kept
    verdict, found = _findings(doc, keys)
    assert [f for f in found if f[0] != "excludes"] == []
    assert verdict.coverage.over() == parts
    assert len([f for f in found if f[0] == "excludes"]) == len(parts)
    if parts:
        assert "have no forecast; ForecastBench imputes 0.5 for them" in found[0][2]


@pytest.mark.parametrize(
    "change, severity, reason",
    [
        (lambda d: d.pop("model_organization"), "rejects", "missing or empty required field(s): model_organization"),
        (lambda d: d.update(forecasts=[]), "rejects", "missing or empty required field(s): forecasts"),
        (lambda d: d.update(question_set="latest-llm.json"), "rejects", "holds no date YYYY-MM-DD"),
        (lambda d: d.update(forecasts={"a": 1}), "rejects", "must be a list"),
        (lambda d: d["forecasts"][0].update(source="kalshi"), "drops", "unknown source 'kalshi'"),
        (lambda d: d["forecasts"][0].update(forecast=1.2), "drops", "1.2 is not a number in [0, 1]"),
        (lambda d: d["forecasts"][0].update(forecast=math.nan), "drops", "is not a number in [0, 1]"),
        (lambda d: d["forecasts"][0].update(forecast="0.5"), "drops", "'0.5' is not a number in [0, 1]"),
        (lambda d: d["forecasts"][0].update(direction=[1, 0]), "drops", "direction must be null or a pair"),
        (lambda d: d["forecasts"][0].update(id="no-such-question"), "ignored", "no manifold question no-such-question"),
    ],
)
def test_each_rule(case, change, severity, reason):
    doc, keys = copy.deepcopy(case[0]), case[1]
    change(doc)
    _verdict, found = _findings(doc, keys)
    assert any(f[0] == severity and reason in f[2] for f in found), found


def test_forecastbench_file_names():
    assert file_name(DUE, "ForecastBench", "Naive Forecaster") == "2025-03-02.ForecastBench.naive-forecaster.json"
    assert file_name(DUE, "Lab", "GPT-5 Pro (high)") == "2025-03-02.Lab.gpt-5-pro-(high).json"
    with pytest.raises(ForecastBenchError, match="cannot be part of a file name"):
        file_name(DUE, "a/b", "x")
