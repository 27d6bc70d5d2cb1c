"""The forecasters on multiple-choice, numeric and date questions: what they ask (prompts, instructor schemas),
what they make of the answers, re-asking invalid ones, the logprob forecaster's letters and thresholds, and a
forecast of the wrong kind as a failed item with one reason. Over real HTTP to the scripted server's worlds."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest
from pydantic import ValidationError

from consistency.fake_openai import ScriptedServer
from consistency.fake_openai.categorical import World
from consistency.fake_openai.rules import coherent_rule, invalid_rule
from consistency.forecasters import BasicForecaster, CoTForecaster, Forecaster, ForecasterSpecError, load_forecaster
from consistency.forecasters.answers import PERCENTILES, choice_answer, choice_forecast, percentile_answer
from consistency.forecasters.base import WrongKind, as_forecast
from consistency.forecasters.logprob import letter_mass
from consistency.forecasters.logprob_numeric import cdf_through_thresholds, isotonic, threshold_questions
from consistency.llm.logprobs import NextToken, TokenChance
from consistency.models import ChoiceForecast, Forecast, ForecastingQuestion, NumericForecast

MC = ForecastingQuestion(
    id="mc",
    title="Which city will host the 2031 Pan-African Games?",
    question_type="multiple_choice",
    options=["Lagos", "Nairobi", "Accra", "Other"],
)
NUM = ForecastingQuestion(
    id="num",
    title="How many heat pumps will be installed in Norway in 2027?",
    question_type="numeric",
    range={"lower": 0, "upper": 200_000, "open_upper": True, "unit": "heat pumps"},
)
LOG = ForecastingQuestion(
    id="log",
    title="What will Freedonia's nominal GDP be in 2027 (millions of USD)?",
    question_type="numeric",
    range={"lower": 100, "upper": 1_000_000, "open_lower": True, "open_upper": True, "scale": "log"},
)
DATE = ForecastingQuestion(
    id="date", title="When will the next crewed Orion capsule launch?", question_type="date",
    range={"lower": "2027-01-01", "upper": "2029-01-01"},
)  # fmt: skip
ALL = [MC, NUM, LOG, DATE]
LEVELS = [p / 100 for p in PERCENTILES]


pytestmark = pytest.mark.usefixtures("in_tmp_dir")


def many(forecaster: Forecaster, questions: list[ForecastingQuestion]):
    return asyncio.run(forecaster.forecast_many(questions))


def world_cdf(q: ForecastingQuestion) -> np.ndarray:
    return World(ALL).cdf(q.question_type, q.range)


# ------------------------------------------------------------------------------------------ answer models
def test_a_choice_answer_must_give_one_probability_per_option_summing_to_one():
    model = choice_answer(4)
    probs = [0.1, 0.2, 0.3, 0.4]
    assert model.model_validate({"reasoning": "r", "probabilities": probs}).stated == probs
    with pytest.raises(ValidationError, match=r"sum to 1\.2; they must sum to 1"):
        model.model_validate({"reasoning": "r", "probabilities": [0.3, 0.3, 0.3, 0.3]})
    with pytest.raises(ValidationError, match="at least 4"):
        model.model_validate({"reasoning": "r", "probabilities": [0.5, 0.5]})
    schema = model.model_json_schema()["properties"]["probabilities"]
    assert (schema["minItems"], schema["maxItems"]) == (4, 4)
    # a sum off by rounding (two decimals each) is taken, rescaled explicitly, and the stated sum kept
    near = choice_forecast(MC, [0.33, 0.33, 0.33, 0.0], {})
    assert math.fsum(near.probs) == pytest.approx(1.0) and near.metadata["stated_sum"] == pytest.approx(0.99)


def test_a_percentile_answer_is_checked_against_the_range():
    model = percentile_answer(NUM)
    good = dict(zip([f"p{p}" for p in PERCENTILES], [10, 20, 40, 60, 80, 150_000, 250_000], strict=True))
    assert model.model_validate({"reasoning": "r", **good}).quantiles()[0.95] == 250_000  # open upper bound
    with pytest.raises(ValidationError, match="out of order"):
        model.model_validate({"reasoning": "r", **good, "p25": 5})
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        model.model_validate({"reasoning": "r", **good, "p5": -1})  # closed lower bound
    assert model.model_json_schema()["properties"]["p5"]["minimum"] == 0
    dates = percentile_answer(DATE, None)
    assert set(dates.model_json_schema()["properties"]) == {f"p{p}" for p in PERCENTILES}
    assert dates.model_json_schema()["properties"]["p50"]["type"] == "string"


# ------------------------------------------------------------------------------------------ over HTTP
@pytest.mark.parametrize("reasoning", [True, False])
def test_the_basic_forecaster_asks_for_a_distribution_and_percentiles(reasoning):
    world = World(ALL)
    with ScriptedServer(coherent_rule(ALL)) as srv:
        outs = many(BasicForecaster(srv.model_spec(), reasoning=reasoning), ALL)
        requests = {r.last_user_text.splitlines()[0]: r for r in srv.requests}
    assert [o.error for o in outs] == [None] * 4
    mc, num, log, date = (o.forecast for o in outs)
    assert isinstance(mc, ChoiceForecast) and mc.probs == pytest.approx(world.choice(MC.title, MC.options))
    for q, f in ((NUM, num), (LOG, log), (DATE, date)):
        assert isinstance(f, NumericForecast) and f.cdf == pytest.approx(list(world_cdf(q)), abs=1e-12)
        assert set(f.metadata["percentiles"]) == {str(p) for p in PERCENTILES}
    assert ("reasoning" in mc.metadata) is reasoning
    mc_request = requests[f"Question: {MC.title}"]
    assert "Options:\n1. Lagos\n2. Nairobi\n3. Accra\n4. Other" in mc_request.last_user_text
    assert set(mc_request.schema["properties"]) == ({"reasoning", "probabilities"} if reasoning else {"probabilities"})
    num_request = requests[f"Question: {NUM.title}"].last_user_text
    assert "Lower bound: 0 (closed: the outcome cannot be lower)" in num_request
    assert "Upper bound: 200000 (open: the outcome may be higher)" in num_request and "Unit: heat pumps" in num_request
    assert "Scale: logarithmic" in requests[f"Question: {LOG.title}"].last_user_text
    assert "Lower bound: 2027-01-01" in requests[f"Question: {DATE.title}"].last_user_text


def test_cot_reasons_in_free_text_then_extracts_the_distribution():
    with ScriptedServer(coherent_rule(ALL)) as srv:
        outs = many(CoTForecaster(srv.model_spec()), [MC, NUM])
        free = [r for r in srv.requests if not r.wants_json]
    mc, num = (o.forecast for o in outs)
    assert mc.probs == pytest.approx(World(ALL).choice(MC.title, MC.options))
    assert "Lagos: " in mc.metadata["reasoning"] and mc.metadata["reasoning_summary"]
    assert "Percentile 50: " in num.metadata["reasoning"] and num.cdf == pytest.approx(list(world_cdf(NUM)), abs=1e-12)
    assert len(free) == 2 and "End with one line per option" in free[0].last_user_text + free[1].last_user_text


def test_invalid_answers_are_asked_again_with_the_reason_then_fail():
    with ScriptedServer(invalid_rule(ALL)) as srv:
        outs = many(BasicForecaster(srv.model_spec()), [MC, NUM])
        count = srv.count
    assert count == 2 * 3  # the first answer and two re-asks each (LLMSettings.max_reasks)
    assert all(o.forecast is None for o in outs)
    assert "sum to 1.2" in outs[0].error and "out of order" in outs[1].error


# ------------------------------------------------------------------------------------------ logprob
def test_logprob_reads_the_option_letters_and_thresholds():
    world = World(ALL)
    with ScriptedServer(coherent_rule(ALL)) as srv:
        outs = many(load_forecaster(f"logprob:{srv.model_spec()}"), [MC, NUM])
        letters = [r for r in srv.requests if "Letter:" in r.last_user_text]
    mc, num = (o.forecast for o in outs)
    assert mc.probs == pytest.approx(world.choice(MC.title, MC.options), abs=1e-12)
    assert "A. Lagos\nB. Nairobi" in letters[0].last_user_text and len(letters) == 1
    assert len(num.metadata["thresholds"]) == 7 and srv.count == 1 + 7
    # the CDF passes through one minus the answers at the thresholds: the world's CDF there
    at = [NUM.range.location(t) for t in num.metadata["thresholds"]]
    expected = np.interp(at, np.linspace(0, 1, 201), world_cdf(NUM))
    assert np.interp(at, np.linspace(0, 1, 201), num.cdf) == pytest.approx(expected, abs=1e-9)


def test_letter_mass_counts_capitals_and_spellings_and_fills_unlisted_letters():
    chances = [(" A", 0.3), ("A", 0.2), ("a", 0.2), ("B.", 0.1)]
    top = NextToken(token=" A", top=[TokenChance(token=t, logprob=math.log(p)) for t, p in chances])
    assert letter_mass(top, ["A", "B", "C"]) == pytest.approx({"A": 0.5, "B": 0.1})


def test_thresholds_answers_become_a_monotone_cdf():
    assert list(isotonic([0.1, 0.4, 0.3, 0.5])) == pytest.approx([0.1, 0.35, 0.35, 0.5])
    asked = threshold_questions(NUM, 3)
    assert [t for t, _ in asked] == sorted(t for t, _ in asked) and len(asked) == 3
    assert all("be greater than" in q.title for _, q in asked)
    # answers that fall then rise are pooled; a closed lower bound starts at 0; the open upper side keeps mass
    f = cdf_through_thresholds(NUM, [(50_000, 0.8), (100_000, 0.85), (150_000, 0.6)])
    assert f.cdf[0] == 0.0 and f.cdf[-1] < 1.0 and (np.diff(f.cdf) >= 0).all()
    assert f.metadata["cdf_at_thresholds"] == pytest.approx([0.175, 0.175, 0.4])
    assert f.cdf[-1] == pytest.approx(0.625)  # the last two thresholds' slope carried to the bound
    with pytest.raises(Exception, match="only 1 of the threshold questions got an answer: boom"):
        cdf_through_thresholds(NUM, [(50_000, 0.5)], ["boom"])
    with pytest.raises(ForecasterSpecError, match="thresholds must be"):
        load_forecaster("logprob:local", ["thresholds=9"])


# ------------------------------------------------------------------------------------------ the wrong kind
class Gives(Forecaster):
    def __init__(self, value):
        self.value = value

    async def forecast(self, question):
        return self.value


@pytest.mark.parametrize(
    ("question", "value", "reason"),
    [
        (MC, Forecast(prob=0.3), "returned a Forecast for a multiple choice question, which takes a ChoiceForecast"),
        (MC, 0.3, "returned a plain number for a multiple choice question"),
        (MC, {"prob": 0.3}, "returned a forecast with 'prob' for a multiple choice question"),
        (NUM, ChoiceForecast(probs=[0.5, 0.5]), "returned a ChoiceForecast for a numeric question"),
        (ForecastingQuestion(title="Will it?"), ChoiceForecast(probs=[0.5, 0.5]), "for a binary question"),
        (MC, {"probs": [0.5, 0.5]}, "invalid forecast"),  # two probabilities for four options
    ],
)
def test_a_forecast_of_the_wrong_kind_is_a_failed_item_with_one_reason(question, value, reason):
    outcome = asyncio.run(Gives(value).forecast_safely(question))
    assert outcome.forecast is None and reason in outcome.error and "\n" not in outcome.error


def test_a_mapping_of_the_right_kind_is_accepted():
    assert as_forecast({"probs": [0.1, 0.2, 0.3, 0.4]}, MC).probs == [0.1, 0.2, 0.3, 0.4]
    cdf = NumericForecast.from_percentiles(NUM, {0.1: 1000, 0.9: 90_000})
    assert as_forecast(cdf, NUM).cdf == cdf.cdf
    with pytest.raises(WrongKind):
        as_forecast(cdf, MC)
