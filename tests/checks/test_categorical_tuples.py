"""Tuples of the multiple-choice and numeric checks from one source question: template instantiation with no model
call, a model's second wording for NUMERIC_PARAPHRASE (scripted server, real HTTP), forecasts to the check's
columns and resolutions to its outcomes."""

from __future__ import annotations

import asyncio
import json
import math

import numpy as np
import pytest

from consistency.checks import CDF_THRESHOLDS, MC_BINARY, NUMERIC_PARAPHRASE, get_check
from consistency.evaluation.scoring import score_file
from consistency.fake_openai import Reply, ScriptedServer, schema_rule
from consistency.generate import TemplateInstantiator
from consistency.generate.categorical import NeedsWording, categorical_tuple, choose_thresholds, fits
from consistency.generate.llm import InstantiationError, LLMInstantiator
from consistency.llm import LLM, LLMSettings
from consistency.metrics.scoring import ScoreParams, score_forecasts
from consistency.models import ChoiceForecast, ForecastEntry, ForecastingQuestion, NumericForecast, tuple_model
from consistency.outcomes import TupleShapeError, forecast_row, tuple_outcomes


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))


def mc(resolution=None, options=("Red", "Blue", "Green", "Other")) -> ForecastingQuestion:
    return ForecastingQuestion(
        id="mc-1",
        title="Which party will win the 2027 election in Freedonia?",
        body="Resolves to the party whose candidate is sworn in as president.",
        question_type="multiple_choice",
        options=list(options),
        resolution=resolution,
        resolution_date="2027-06-01",
        created_date="2026-01-01",
    )


def numeric(resolution=None, range=None) -> ForecastingQuestion:
    r = range or {"lower": 0, "upper": 1_000_000, "open_upper": True, "unit": "vehicles"}
    return ForecastingQuestion(
        id="num-1",
        title="How many vehicles will Tesla deliver in Q3 2027?",
        body="Per Tesla's quarterly delivery report.",
        question_type="numeric",
        range=r,
        resolution=resolution,
        resolution_date="2027-10-05",
    )


def _questions(check, tup):
    made = tuple_model(check).model_validate(tup)
    return {n: getattr(made, n) for n in check.fields}


def test_partition_from_a_multiple_choice_question():
    check = get_check("PARTITION4")
    tup = TemplateInstantiator().instantiate_sync(check, {"X": mc("Blue")})
    assert [tup[f]["resolution"] for f in check.fields] == [False, True, False, False]
    assert (
        tup["P_3"]["title"]
        == "Will the outcome of \u201cWhich party will win the 2027 election in Freedonia?\u201d be \u201cGreen\u201d?"
    )
    assert tup["P_3"]["metadata"] == {"outcome_event": {"question_id": "mc-1", "options": ["Green"]}}
    assert "Options: Red; Blue; Green; Other" in tup["P_3"]["body"] and "sworn in" in tup["P_3"]["body"]
    assert {tup[f]["resolution_date"] for f in check.fields} == {"2027-06-01T00:00:00Z"}
    assert len({tup[f]["id"] for f in check.fields}) == 4
    # Unresolved source: unresolved fields; a question with three options does not fit PARTITION4.
    assert {TemplateInstantiator().instantiate_sync(check, {"X": mc()})[f]["resolution"] for f in check.fields} == {
        None
    }
    assert not fits(check, mc(options=("A", "B", "C"))) and fits(get_check("PARTITION3"), mc(options=("A", "B", "C")))


def test_mc_binary_with_an_option_or_a_union():
    one = categorical_tuple(MC_BINARY, mc("Blue"), options=["Blue"])
    two = categorical_tuple(MC_BINARY, mc("Blue"), options=["Red", "Green"])
    assert one["P"]["resolution"] is True and two["P"]["resolution"] is False
    assert two["P"]["title"].endswith("be one of \u201cRed\u201d or \u201cGreen\u201d?")
    assert one["P"]["id"] != two["P"]["id"]
    assert one["X"] == mc("Blue").model_dump(mode="json")
    assert tuple_outcomes(MC_BINARY, _questions(MC_BINARY, two)) == {"X": 1, "P": False}
    # Chosen by the source's id when not given: stable.
    assert TemplateInstantiator().instantiate_sync(MC_BINARY, {"X": mc()}) == categorical_tuple(MC_BINARY, mc())


def test_cdf_thresholds_from_a_numeric_question():
    tup = categorical_tuple(CDF_THRESHOLDS, numeric(523_000))
    titles = [tup[f]["title"] for f in ("T_1", "T_2", "T_3")]
    asked = "\u201cHow many vehicles will Tesla deliver in Q3 2027?\u201d"
    assert titles[1] == f"Will the answer to {asked} be greater than 500,000 vehicles?"
    assert [tup[f]["metadata"]["outcome_event"]["above"] for f in ("T_1", "T_2", "T_3")] == [250_000, 500_000, 750_000]
    assert [tup[f]["resolution"] for f in ("T_1", "T_2", "T_3")] == [True, True, False]
    assert tuple_outcomes(CDF_THRESHOLDS, _questions(CDF_THRESHOLDS, tup))["X"] == 2
    above = categorical_tuple(CDF_THRESHOLDS, numeric("above_upper_bound"))
    assert [above[f]["resolution"] for f in ("T_1", "T_2", "T_3")] == [True, True, True]


def test_thresholds_follow_the_crowd_and_the_scale():
    crowd = np.clip(np.linspace(-0.5, 1.5, 201), 0, 1)  # uniform on the middle half of 0 … 100
    q = numeric(range={"lower": 0, "upper": 100, "open_upper": False})
    q.metadata = {"crowd_forecast": {"cdf": crowd.tolist()}}
    assert choose_thresholds(q, 3) == [38.0, 50.0, 62.0]  # quantiles 37.5, 50, 62.5, rounded
    log = numeric(range={"lower": 1, "upper": 1e6, "scale": "log"})
    assert choose_thresholds(log, 3) == [30.0, 1000.0, 30_000.0]  # 10^1.5, 10^3, 10^4.5 at two digits' reach
    date = ForecastingQuestion(
        id="d", title="When will X happen?", question_type="date", range={"lower": "2025-01-01", "upper": "2027-01-01"}
    )
    tup = categorical_tuple(get_check("CDF_THRESHOLDS1"), date)
    assert tup["T_1"]["title"] == "Will the answer to \u201cWhen will X happen?\u201d be later than January 1, 2026?"


def test_forecasts_become_the_checks_columns():
    tup = categorical_tuple(CDF_THRESHOLDS, numeric())
    qs = _questions(CDF_THRESHOLDS, tup)
    cdf = NumericForecast.from_percentiles(qs["X"], {0.25: 250_000, 0.5: 500_000, 0.75: 750_000})
    entries = {"X": ForecastEntry(question=qs["X"], forecast=cdf)}
    for f, p in zip(("T_1", "T_2", "T_3"), (0.75, 0.5, 0.25), strict=True):
        entries[f] = ForecastEntry(question=qs[f], forecast={"prob": p})
    row = forecast_row(CDF_THRESHOLDS, entries)
    assert row == pytest.approx([0.25, 0.25, 0.25, 0.25, 0.75, 0.5, 0.25])
    assert score_forecasts(CDF_THRESHOLDS, row).arbitrage.violation[0] < 1e-12  # coherent
    # A CDF shifted against the thresholds: the hand computation is PARAPHRASE-like per threshold only for k = 1.
    entries["T_2"] = ForecastEntry(question=qs["T_2"], forecast={"prob": 0.8})
    assert score_forecasts(CDF_THRESHOLDS, forecast_row(CDF_THRESHOLDS, entries)).arbitrage.violation[0] > 0.05
    # MC_BINARY groups the options as P says.
    mb = categorical_tuple(MC_BINARY, mc(), options=["Red", "Green"])
    q = _questions(MC_BINARY, mb)
    row = forecast_row(
        MC_BINARY,
        {
            "X": ForecastEntry(question=q["X"], forecast=ChoiceForecast(probs=[0.1, 0.2, 0.3, 0.4])),
            "P": ForecastEntry(question=q["P"], forecast={"prob": 0.4}),
        },
    )
    assert row == pytest.approx([0.4, 0.6, 0.4])


def test_tuples_that_do_not_fit_their_check_are_named():
    tup = categorical_tuple(CDF_THRESHOLDS, numeric())
    qs = _questions(CDF_THRESHOLDS, tup)
    qs["T_2"].metadata = {}
    entries = {f: ForecastEntry(question=qs[f], forecast={"prob": 0.5}) for f in ("T_1", "T_2", "T_3")}
    entries["X"] = ForecastEntry(question=qs["X"], forecast=NumericForecast.from_percentiles(qs["X"], {0.2: 1, 0.8: 9}))
    with pytest.raises(TupleShapeError, match=r"field T_2 has no metadata\.outcome_event"):
        forecast_row(CDF_THRESHOLDS, entries)
    qs["T_2"].metadata = {"outcome_event": {"question_id": "other", "above": 5.0}}
    with pytest.raises(TupleShapeError, match="asks about question other"):
        forecast_row(CDF_THRESHOLDS, entries)
    qs["T_2"].metadata = {"outcome_event": {"question_id": "num-1", "above": 900_000.0}}
    with pytest.raises(TupleShapeError, match="thresholds of X must increase"):
        forecast_row(CDF_THRESHOLDS, entries)
    with pytest.raises(NeedsWording, match="second wording"):
        TemplateInstantiator().instantiate_sync(NUMERIC_PARAPHRASE, {"X": numeric()})
    with pytest.raises(ValueError, match="cannot be made from multiple_choice"):
        categorical_tuple(CDF_THRESHOLDS, mc())


def _wording(title: str):
    base = schema_rule()

    def rule(request):
        if request.tool_name == "NumericWording":
            return Reply.json({"title": title, "body": "Counted from Tesla's own report of deliveries for Q3 2027."})
        return base(request)

    return rule


async def _paraphrase(spec: str, source: ForecastingQuestion):
    async with LLM(LLMSettings(timeout=5.0, max_backoff=0.05)) as llm:
        return await LLMInstantiator(llm, spec).instantiate(NUMERIC_PARAPHRASE, {"X": source})


def test_numeric_paraphrase_gets_its_wording_from_a_model():
    wording = "What number of cars will Tesla report delivering in the third quarter of 2027?"
    with ScriptedServer(_wording(wording)) as srv:
        tup = asyncio.run(_paraphrase(srv.model_spec(), numeric(523_000)))
        assert any("Reword this numeric question" in r.last_user_text for r in srv.requests)
    para = tup["para_X"]
    assert para["title"] == wording and para["range"] == tup["X"]["range"] and para["resolution"] == 523_000.0
    assert para["question_type"] == "numeric" and para["id"] != tup["X"]["id"] and tup["metadata"]["model"]
    assert tuple_outcomes(NUMERIC_PARAPHRASE, _questions(NUMERIC_PARAPHRASE, tup)) == {"X": 105, "para_X": 105}
    # The same CDF for both wordings: no violation; one shifted: twice the Bhattacharyya distance.
    qs = _questions(NUMERIC_PARAPHRASE, tup)
    f = NumericForecast.from_percentiles(qs["X"], {0.25: 400_000, 0.75: 600_000})
    g = NumericForecast.from_percentiles(qs["X"], {0.25: 450_000, 0.75: 650_000})
    rows = [forecast_row(NUMERIC_PARAPHRASE, {"X": ForecastEntry(question=qs["X"], forecast=f),
                                              "para_X": ForecastEntry(question=qs["para_X"], forecast=h)})
            for h in (f, g)]  # fmt: skip
    v = score_forecasts(NUMERIC_PARAPHRASE, rows, params=ScoreParams(epsilon=1e-12)).arbitrage.violation
    assert v[0] < 1e-12 and v[1] == pytest.approx(-2 * math.log(np.sqrt(f.pmf() * g.pmf()).sum()), abs=1e-5)


def test_a_model_that_repeats_the_title_is_refused():
    source = numeric()
    with ScriptedServer(_wording(source.title)) as srv, pytest.raises(ValueError, match="not a new wording"):
        asyncio.run(_paraphrase(srv.model_spec(), source))
    with ScriptedServer(_wording("short")) as srv, pytest.raises(InstantiationError):
        asyncio.run(_paraphrase(srv.model_spec(), source))


def test_forecast_files_of_the_new_checks_are_scored(tmp_path):
    """`cc score`'s file path: forecasts in the check's columns, a line that does not fit named, not a crash."""
    tup = _questions(MC_BINARY, categorical_tuple(MC_BINARY, mc("Red"), options=["Red"]))
    good = {
        "line": {
            "X": {"question": tup["X"].model_dump(mode="json"), "forecast": {"probs": [0.5, 0.3, 0.1, 0.1]}},
            "P": {"question": tup["P"].model_dump(mode="json"), "forecast": {"prob": 0.7}},
        }
    }
    bad = json.loads(json.dumps(good))
    bad["line"]["P"]["question"]["metadata"] = {}
    path = tmp_path / "McBinaryChecker.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in (good, bad, good)) + "\n", encoding="utf-8")
    scored = score_file(path)
    assert scored.line_numbers == [1, 3] and [(e.line, e.field) for e in scored.errors] == [(2, "line")]
    assert "no metadata.outcome_event" in scored.errors[0].message
    expected = -2 * math.log(math.sqrt(0.5 * 0.7) + math.sqrt(0.5 * 0.3))
    assert scored.scores.arbitrage.violation == pytest.approx([expected, expected])


def test_generate_takes_only_the_questions_a_check_is_made_from(tmp_path):
    """A mixed pool: the template makes each check's tuples from the questions that fit it, with no
    rejects for the others; a pool with none stops the check with what it needs."""
    from consistency.generate.pipeline import GenerateOptions, generate

    yes_no = ForecastingQuestion(id="b-1", title="Will it rain in Paris on 1 June 2027?", body="Meteo-France.",
                                 resolution_date="2027-06-02")  # fmt: skip
    pool = [yes_no, mc(), numeric()]
    options = GenerateOptions(n=5)
    for name, source in (("PARTITION4", "mc-1"), ("MC_BINARY", "mc-1"), ("CDF_THRESHOLDS", "num-1")):
        report = asyncio.run(generate(get_check(name), pool, TemplateInstantiator(), tmp_path, options))
        assert (report.written, report.candidates, dict(report.rejected), report.skipped) == (1, 1, {}, 0), name
        (line,) = [json.loads(x) for x in report.path.read_text().splitlines()]
        assert [q["id"] for q in line["metadata"]["base_sentences"].values()] == [source]
        assert not report.rejects_path.exists() or not report.rejects_path.read_text()
    wanted = {"PARTITION3": "a multiple-choice question with 3 options", "CDF_THRESHOLDS": "a numeric or date question"}
    for name, words in wanted.items():  # the four-option question fits neither
        with pytest.raises(ValueError, match=f"^its source is {words}, and none of the 2 question"):
            asyncio.run(generate(get_check(name), [yes_no, mc()], TemplateInstantiator(), tmp_path, options))
