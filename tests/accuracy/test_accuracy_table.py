"""Loading forecasts as a long table: CSV, JSONL and the paper's ground-truth files."""

from __future__ import annotations

import numpy as np
import pytest

from consistency.accuracy.inputs import ScoreInputError
from consistency.accuracy.table import load_table
from tests.support.reference import FORECASTS, GROUND_TRUTH, needs_reference

CSV = """forecaster,question_id,prob,resolution,weight,batch,market_prob,resolved_at,scheduled_resolution
alice,q1,0.7,yes,1,b1,0.6,2025-01-01,2025-02-01
alice,q2,0.2,no,0.5,b1,,2025-02-01T00:00:00Z,2025-02-01
bob,q1,0.4,1,,b1,0.6,,
bob,q3,0.9,,,b2,,,
"""


def test_csv_long_table(tmp_path):
    path = tmp_path / "f.csv"
    path.write_text(CSV)
    table = load_table([path])
    assert len(table) == 4 and table.forecasters == ["alice", "bob"]
    np.testing.assert_array_equal(table.resolution[:3], [1.0, 0.0, 1.0])
    assert np.isnan(table.resolution[3])
    np.testing.assert_array_equal(table.weight, [1.0, 0.5, 1.0, 1.0])
    assert np.isnan(table.market_prob[1]) and table.market_prob[0] == 0.6
    assert table.resolved_at[1] == np.datetime64("2025-02-01T00:00:00")
    assert np.isnat(table.resolved_at[2])
    matrix, forecasters, questions = table.matrix()
    assert forecasters == ["alice", "bob"] and questions == ["q1", "q2", "q3"]
    assert matrix[1, 0] == 0.4 and np.isnan(matrix[1, 1])


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            "alice,q1,0.3,yes,,,,,",
            r"f.csv:6: forecaster 'alice' has a second forecast on question 'q1' \(first at .*f.csv:2\)",
        ),
        ("carol,q9,1.3,yes,,,,,", r"f.csv:6: prob must be a probability in \[0, 1\]"),
        ("carol,q9,0.3,maybe,,,,,", r"f.csv:6: resolution 'maybe' is not yes/no"),
        ("carol,q9,0.3,yes,-1,,,,", r"f.csv:6: weight must be a non-negative number"),
        ("carol,q9,0.3,yes,,,,someday,", r"f.csv:6: cannot read the date 'someday'"),
        ("carol,,0.3,yes,,,,,", r"f.csv:6: missing question_id"),
    ],
)
def test_bad_rows_are_named(tmp_path, row, message):
    path = tmp_path / "f.csv"
    path.write_text(CSV + row + "\n")
    with pytest.raises(ScoreInputError, match=message):
        load_table([path])


def test_jsonl_long_table_and_missing_columns(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_text('{"forecaster": "a", "question_id": "q", "prob": 0.5, "resolution": true}\n')
    assert load_table([path]).resolution[0] == 1.0
    bad = tmp_path / "g.csv"
    bad.write_text("who,question_id,prob\nx,q,0.5\n")
    with pytest.raises(ScoreInputError, match="lacks column"):
        load_table([bad])


@needs_reference
def test_papers_ground_truth_files_load():
    table = load_table([GROUND_TRUTH])
    assert len(table) == 242
    assert table.forecasters == ["BasicForecaster_gpt4o-mini-2024-07-18_20240501_20240815"]
    assert np.all(np.isin(table.resolution, [0.0, 1.0]))
    assert np.isfinite(table.market_prob).sum() > 0


def test_run_directories_of_forecast_lines(tmp_path):
    from consistency.datasets import sample_dir

    table = load_table([sample_dir() / "forecasts"])
    assert table.forecasters == ["forecasts"] and len(table) > 30
    assert np.all(np.isnan(table.resolution))  # the sample's questions resolve 2027-2030


@needs_reference
def test_a_question_forecast_differently_twice_in_a_run_is_named():
    run = FORECASTS
    with pytest.raises(
        ScoreInputError, match=r"ConsequenceChecker.jsonl:9 \(P\): question .* was forecast 0.25 here but 0.3"
    ):
        load_table([run])
