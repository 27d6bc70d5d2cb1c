"""Multiple-choice, numeric and date questions and their forecasts (issue 35, item 1): the data model's rules and
its errors; binary questions dump exactly as before."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from consistency import distributions as dist
from consistency.checks import get_check
from consistency.jsonl import dump_line
from consistency.models import (
    ChoiceForecast,
    Forecast,
    ForecastEntry,
    ForecastingQuestion,
    ForecastLine,
    NumericForecast,
    parse_forecast,
    tuple_model,
)

DATASETS = Path(__file__).resolve().parents[2] / "consistency" / "datasets"


def _dumps(obj) -> str:
    return json.dumps(obj, ensure_ascii=False)


def _question_dicts(obj):
    """Every question dict inside a tuple or forecast line (fields, base sentences)."""
    if isinstance(obj, dict):
        if "title" in obj and "question_type" in obj:
            yield obj
        else:
            for value in obj.values():
                yield from _question_dicts(value)


def test_bundled_files_round_trip_byte_for_byte():
    """Questions files, tuple files and every question inside forecast files read and write back unchanged."""
    files = sorted(DATASETS.rglob("*.jsonl"))
    assert len(files) > 30
    questions = tuples = 0
    for path in files:
        for text in path.read_text(encoding="utf-8").splitlines(keepends=True):
            obj = json.loads(text)
            if "line" in obj:  # a forecast line: its questions exactly, its forecasts' values
                line = ForecastLine.model_validate(obj)
                for name, entry in obj["line"].items():
                    assert line.line[name].question.model_dump(mode="json") == entry["question"]
                    assert _dumps(line.line[name].question.model_dump(mode="json")) == _dumps(entry["question"])
                    given = {k: v for k, v in entry["forecast"].items() if k != "metadata"}  # prob, probs or cdf
                    assert {k: getattr(line.line[name].forecast, k) for k in given} == given
                    questions += 1
            elif "title" in obj:
                assert dump_line(ForecastingQuestion.model_validate(obj)) == text
                questions += 1
            else:
                check = get_check(path.stem)
                assert dump_line(tuple_model(check).model_validate(obj)) == text, f"{path.name}: {text[:80]}"
                for q in _question_dicts(obj):
                    assert _dumps(ForecastingQuestion.model_validate(q).model_dump(mode="json")) == _dumps(q)
                    questions += 1
                tuples += 1
    assert questions > 500 and tuples > 100


def _mc(**kw) -> ForecastingQuestion:
    return ForecastingQuestion(title="Which party wins?", question_type="multiple_choice", **kw)


def _num(**kw) -> ForecastingQuestion:
    r = kw.pop("range", {"lower": 0, "upper": 100})
    return ForecastingQuestion(title="How many?", question_type="numeric", range=r, **kw)


def _error(make) -> tuple[str, str]:
    with pytest.raises(ValidationError) as info:
        make()
    err = info.value.errors(include_url=False)[0]
    return ".".join(map(str, err["loc"])), err["msg"]


@pytest.mark.parametrize(
    ("make", "field", "words"),
    [
        (lambda: _mc(options=["A", "B", "A"]), "options", ("'A'", "twice")),
        (lambda: _mc(options=["A"]), "options", ("at least two", "got 1")),
        (lambda: _mc(options=["A", " "]), "options", ("empty",)),
        (lambda: _mc(), "question_type", ("needs options",)),
        (lambda: _mc(options=["A", "B"], resolution="C"), "resolution", ("'C'", "not one of the options", "'A', 'B'")),
        (lambda: _mc(options=["A", "B"], resolution=True), "resolution", ("option labels",)),
        (lambda: _num(range={"lower": 10, "upper": 1}), "range", ("reversed", "10", "1")),
        (lambda: _num(range={"lower": 0, "upper": 1, "scale": "log"}), "range", ("log scale", "positive", "0")),
        (lambda: _num(range={"lower": 1, "upper": 9, "scale": "log", "zero_point": 3}), "range", ("outside", "3")),
        (lambda: _num(range={"lower": 1, "upper": 9, "zero_point": -1}), "range", ("log scale",)),
        (lambda: _num(range=None), "question_type", ("needs a range",)),
        (lambda: _num(resolution="many"), "resolution", ("finite number", "below_lower_bound", "'many'")),
        (lambda: ForecastingQuestion(title="x", options=["A", "B"]), "options", ("multiple_choice", "binary")),
        (lambda: _mc(options=["A", "B"], range={"lower": 0, "upper": 1}), "range", ("numeric", "multiple_choice")),
        (lambda: ForecastingQuestion(title="x", resolution="A"), "resolution", ("valid boolean",)),
    ],
)
def test_bad_questions_are_named_with_their_reason(make, field, words):
    where, msg = _error(make)
    assert where == field
    for word in words:
        assert word in msg, msg


def test_resolutions_of_each_type():
    assert ForecastingQuestion(title="x", resolution="yes").resolution is True  # binary: lax as before
    assert _mc(options=["A", "B"], resolution="B").outcome_index() == 1
    q = _num(range={"lower": 0, "upper": 100, "open_upper": True}, resolution=50)
    assert q.resolution == 50.0 and q.outcome_index() == 101  # a boundary counts in the cell above it
    assert _num(resolution=0).outcome_index() == 1 and _num(resolution=100).outcome_index() == 200
    assert _num(resolution=0.3).outcome_index() == 1  # [0, 0.5) is the first cell
    open_up = {"lower": 0, "upper": 100, "open_upper": True}
    assert _num(range=open_up, resolution="above_upper_bound").outcome_index() == 201
    assert _num(range=open_up, resolution=250).outcome_index() == 201
    # On a closed side an outcome beyond the bound is counted at the bound.
    assert _num(resolution="below_lower_bound").outcome_index() == 1
    assert _num(resolution=-5).outcome_index() == 1
    d = ForecastingQuestion(
        title="When?",
        question_type="date",
        range={"lower": "2025-01-01", "upper": "2026-01-01"},
        resolution="2025-07-02",
    )
    assert d.range.lower == 1735689600.0 and d.resolution == 1751414400.0
    assert d.outcome_location() == pytest.approx(182 / 365)


def test_new_types_round_trip_and_omit_empty_fields():
    q = _num(range={"lower": 1, "upper": 1000, "scale": "log", "unit": "USD"}, resolution="above_upper_bound")
    data = q.model_dump(mode="json")
    assert data["range"] == {
        "lower": 1.0,
        "upper": 1000.0,
        "open_lower": False,
        "open_upper": False,
        "scale": "log",
        "unit": "USD",
    }
    assert ForecastingQuestion.model_validate(data) == q
    assert "options" not in data and "range" not in ForecastingQuestion(title="x").model_dump()


def test_scales_and_grids():
    lin = _num().range
    assert lin.grid()[[0, 1, 100, 200]].tolist() == [0.0, 0.5, 50.0, 100.0]
    log = _num(range={"lower": 1, "upper": 10_000, "scale": "log"}).range
    assert log.grid()[[0, 50, 100, 200]] == pytest.approx([1, 10, 100, 10_000])
    assert log.location(1000.0) == pytest.approx(0.75)
    zp = _num(range={"lower": 1, "upper": 19, "scale": "log", "zero_point": -1}).range  # geometric in x + 1: 2 … 20
    assert zp.grid()[[0, 100, 200]] == pytest.approx([1, 2 * math.sqrt(10) - 1, 19])
    assert zp.location(zp.grid()[37]) * 200 == pytest.approx(37)


def test_choice_forecasts():
    q = _mc(options=["A", "B", "C"])
    assert parse_forecast(q, {"probs": [0.2, 0.3, 0.5]}).probs == [0.2, 0.3, 0.5]
    with pytest.raises(ValidationError, match=r"sum to 1\.2"):
        ChoiceForecast(probs=[0.5, 0.6, 0.1])
    with pytest.raises(ValidationError, match="option 1: probability must be within"):
        ChoiceForecast(probs=[0.5, 1.5, -1.0])
    with pytest.raises(ValueError, match="2 probabilities for 3 options"):
        parse_forecast(q, {"probs": [0.5, 0.5]})
    with pytest.raises(ValueError, match="multiple_choice question takes a forecast with 'probs'"):
        parse_forecast(q, {"prob": 0.5})
    assert ChoiceForecast.normalised(q, {"A": 1, "C": 3}).probs == [0.25, 0.0, 0.75]
    assert ChoiceForecast.normalised(q, [2, 2, 4]).probs == [0.25, 0.25, 0.5]
    with pytest.raises(ValueError, match="'D' is not an option"):
        ChoiceForecast.normalised(q, {"D": 1})


def test_numeric_forecasts_and_their_errors():
    q = _num(range={"lower": 0, "upper": 100, "open_upper": True})
    ramp = [j / 400 for j in range(201)]  # uniform on the range, half the mass above it
    f = parse_forecast(q, {"cdf": ramp})
    assert isinstance(f, NumericForecast) and f.cdf_at(q, 25.0) == pytest.approx(0.125)
    assert f.pmf()[[0, 1, 200, 201]] == pytest.approx([0, 1 / 400, 1 / 400, 0.5])
    with pytest.raises(ValueError, match=r"closed, so the CDF must start at 0, got 0\.1"):
        parse_forecast(q, {"cdf": [0.1 + j / 400 for j in range(201)]})
    with pytest.raises(ValueError, match="the upper bound is closed, so the CDF must end at 1"):
        parse_forecast(_num(), {"cdf": ramp})
    falling = list(ramp)
    falling[7] = 0.0
    with pytest.raises(ValidationError, match=r"point 7 \(0\) is below point 6 \(0.015\)"):
        NumericForecast(cdf=falling)
    with pytest.raises(ValidationError, match="at least 201"):
        NumericForecast(cdf=[0.0, 1.0])


def test_from_percentiles_is_linear_in_the_location_with_open_tails():
    closed = _num()
    f = NumericForecast.from_percentiles(closed, {0.1: 20, 0.5: 50, 0.9: 80})
    # 0 at the bound, then straight lines through the knots, 1 at the upper bound.
    assert f.cdf[0] == 0 and f.cdf[40] == pytest.approx(0.1) and f.cdf[100] == pytest.approx(0.5)
    assert f.cdf[20] == pytest.approx(0.05) and f.cdf[180] == pytest.approx(0.95) and f.cdf[-1] == 1
    open_both = _num(range={"lower": 0, "upper": 100, "open_lower": True, "open_upper": True})
    g = NumericForecast.from_percentiles(open_both, {0.25: 20, 0.75: 60})
    # The tails continue the slope 0.5 / 40 per unit: 0.25 - 20/80 = 0 at the lower bound, 0.75 + 40/80 > 1 above.
    assert g.cdf[0] == pytest.approx(0.0) and g.cdf[20] == pytest.approx(0.125) and g.cdf[-1] == 1.0
    h = NumericForecast.from_percentiles(open_both, {0.4: 10, 0.6: 90})
    # Slope 0.2 / 80 per unit: 0.4 - 10 * slope below the range, 1 - (0.6 + 10 * slope) above it.
    assert h.cdf[0] == pytest.approx(0.375) and 1 - h.cdf[-1] == pytest.approx(0.375)
    log = _num(range={"lower": 1, "upper": 10_000, "scale": "log"})
    k = NumericForecast.from_percentiles(log, {0.25: 10, 0.75: 1000})  # quartiles on grid points 50 and 150
    assert k.cdf[50] == pytest.approx(0.25) and k.cdf[100] == pytest.approx(0.5) and k.cdf[150] == pytest.approx(0.75)
    for bad, words in [
        ({0.5: 30}, "at least two"),
        ({0.1: 40, 0.5: 30}, "out of order: the 0.5 quantile 30 is not above the 0.1 quantile 40"),
        ({0.0: 10, 0.5: 30}, "strictly between 0 and 1"),
        ({0.1: -5, 0.5: 30}, "below the closed lower bound 0"),
        ({0.1: 5, 0.9: 130}, "above the closed upper bound 100"),
    ]:
        with pytest.raises(ValueError, match=words.replace("(", r"\(")):
            NumericForecast.from_percentiles(closed, bad)


def test_a_percentile_at_a_closed_bound_is_a_steep_start():
    f = NumericForecast.from_percentiles(_num(), {0.05: 0, 0.5: 50})
    assert f.cdf[0] == 0 and f.cdf[1] == pytest.approx(0.05) and f.cdf[100] == pytest.approx(0.5)


def test_forecast_entries_read_the_kind_the_question_needs():
    mc = _mc(options=["A", "B"]).model_dump(mode="json")
    entry = ForecastEntry.model_validate({"question": mc, "forecast": {"probs": [0.4, 0.6]}})
    assert isinstance(entry.forecast, ChoiceForecast)
    assert json.loads(entry.model_dump_json())["forecast"] == {"probs": [0.4, 0.6], "metadata": None}
    binary = ForecastingQuestion(title="x").model_dump(mode="json")
    assert isinstance(ForecastEntry.model_validate({"question": binary, "forecast": {"prob": 0.4}}).forecast, Forecast)
    for forecast, field, words in [
        ({"prob": 0.4}, "forecast", "takes a forecast with 'probs'"),
        ({"probs": [0.4, 0.7]}, "forecast.probs", "sum to 1.1"),
        ({"prob": 0.4, "probs": [0.4, 0.6]}, "forecast", "one of prob, probs and cdf"),
    ]:
        where, msg = _error(lambda f=forecast: ForecastEntry.model_validate({"question": mc, "forecast": f}))
        assert (where, words in msg) == (field, True), msg
    where, msg = _error(lambda: ForecastEntry.model_validate({"question": binary, "forecast": {"prob": 1.7}}))
    assert where == "forecast.prob" and "[0, 1], got 1.7" in msg


def test_grid_helpers():
    cdf = np.array([np.linspace(0, 1, 201), np.linspace(0, 0.5, 201)])
    assert dist.cdf_at(cdf[:, None, :], [[0.25, 0.5], [0.25, 1.5]]).tolist() == [[0.25, 0.5], [0.125, 0.5]]
    assert dist.pmf(cdf).shape == (2, 202) and dist.pmf(cdf).sum(axis=1) == pytest.approx([1, 1])


def test_the_store_reads_a_typed_checks_lines_into_its_columns_as_cc_score_does(tmp_path):
    """The run store (cc diff, cc report) reads a multiple-choice or numeric tuple's distributions into the
    check's columns, the same numbers cc score scores; a line that does not fit them is a named LineError."""
    from consistency.datasets import typed_benchmark_dir
    from consistency.evaluation.scoring import score_file
    from consistency.store.lines import read_tuple_columns

    for path in sorted((typed_benchmark_dir() / "forecasts").glob("*.jsonl")):
        check = get_check(path.stem)
        columns = read_tuple_columns(path, check, text=True)
        assert not columns.errors and len(columns) > 0
        assert columns.probs.shape == (len(columns), check.n_columns)
        assert all(len(t) == check.n_columns for t in columns.titles or [])
        np.testing.assert_array_equal(columns.probs, score_file(path).scores.probs)
    source = typed_benchmark_dir() / "forecasts" / "McBinaryChecker.jsonl"
    obj = json.loads(source.read_text(encoding="utf-8").splitlines()[0])
    name = next(f for f in get_check("MC_BINARY").field_names if "probs" in obj["line"][f]["forecast"])
    obj["line"][name]["forecast"] = {"prob": 0.5}  # a multiple-choice field answered as yes/no
    bad = tmp_path / source.name
    bad.write_text(dump_line(obj) + "\n", encoding="utf-8")
    columns = read_tuple_columns(bad, get_check("MC_BINARY"))
    assert len(columns) == 0 and [(e.line, e.field) for e in columns.errors] == [(1, "line")]
