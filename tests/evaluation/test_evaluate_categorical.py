"""`cc evaluate` on multiple-choice and numeric tuples, over real HTTP against the scripted server's worlds: a
coherent rule gives no violation on any of the new checks; the incoherent rule's violations equal hand
computations; invalid answers and binary-only forecasters give failed items with one reason, not a crash."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize, minimize_scalar
from typer.testing import CliRunner

from consistency import distributions as dist
from consistency.checks import get_check
from consistency.cli import app
from consistency.datasets import typed_benchmark_dir
from consistency.fake_openai import ScriptedServer
from consistency.fake_openai.categorical import World, bundled_questions
from consistency.fake_openai.rules import INCOHERENT, coherent_rule, incoherent_rule, invalid_rule
from consistency.jsonl import iter_json_lines
from consistency.models import ForecastingQuestion, NumericForecast
from tests.support.categorical_runs import PLAN, questions, sources, write_tuples

runner = CliRunner()
CLASSES = {name: get_check(name).class_name for name in PLAN}


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    write_tuples(tmp_path / "tuples")


def evaluate(spec: str, out: str, *args: str):
    if "-t" not in args:
        args = ("-t", "tuples", *args)
    res = runner.invoke(app, ["evaluate", "-f", spec, "-o", out, *args])
    assert res.exit_code == 0, res.output
    return Path(out)


def scored(run: Path, name: str) -> list[dict]:
    return [obj for _, obj in iter_json_lines(run / f"{CLASSES[name]}.jsonl")]


def violations(run: Path, name: str, metric: str = "default") -> list[float]:
    return [line["violation_data"][metric]["violation"] for line in scored(run, name)]


@pytest.mark.parametrize("kind", ["basic", "cot"])
def test_a_coherent_forecaster_violates_no_new_check(kind):
    with ScriptedServer(coherent_rule(questions())) as srv:
        run = evaluate(f"{kind}:{srv.model_spec()}", "run")
    summary = json.loads((run / "summary.json").read_text())
    assert summary["questions"]["failed"] == 0 and summary["failures"] == []
    for name, planned in PLAN.items():
        assert len(scored(run, name)) == len(planned), name
        for metric in ("default", "frequentist"):
            assert max(violations(run, name, metric)) < 1e-9, (name, metric)


def test_the_logprob_forecaster_is_coherent_on_options_and_close_on_thresholds():
    """Its options are the first token's letters (exact); its CDF runs through answers at thresholds of its own,
    linearly between them, so thresholds elsewhere see a slightly different CDF."""
    with ScriptedServer(coherent_rule(questions())) as srv:
        run = evaluate(f"logprob:{srv.model_spec()}", "run")
    for name in ("PARTITION3", "PARTITION4", "MC_BINARY", "NUMERIC_PARAPHRASE"):
        assert max(violations(run, name)) < 1e-9, name
    assert max(violations(run, "CDF_THRESHOLDS")) < 1e-3
    first = scored(run, "PARTITION4")[0]["line"]
    assert [first[f]["forecast"]["prob"] for f in ("P_1", "P_2", "P_3", "P_4")] == pytest.approx(
        World(questions()).choice(sources()["mc4"].title, sources()["mc4"].options)
    )


# ------------------------------------------------------------------------------------------ hand computations
def partition_by_hand(F: list[float]) -> float:
    """PARTITION with unit weights: max over x > 0 of log x - Σ log(1 - F_i + F_i x), by a scalar search."""
    found = minimize_scalar(
        lambda s: -(s - sum(math.log(1 - f + f * math.exp(s)) for f in F)), bounds=(-10, 10), method="bounded",
        options={"xatol": 1e-12},
    )  # fmt: skip
    return -found.fun


def binary_pair_by_hand(p: float, q: float) -> float:
    """Two forecasts of one yes/no event: -2 log(sqrt(pq) + sqrt((1-p)(1-q)))."""
    return -2 * math.log(math.sqrt(p * q) + math.sqrt((1 - p) * (1 - q)))


def kl(a: np.ndarray, b: np.ndarray) -> float:
    a = np.clip(a, 1e-300, 1)
    return float(np.sum(a * np.log(a / b)))


def thresholds_by_hand(bins: np.ndarray, above: np.ndarray) -> float:
    """CDF_THRESHOLDS: min over distributions λ of the outcome's bin of KL(λ ‖ bins) + Σ_j KL(P(bin ≥ j) ‖ T_j),
    by a generic optimiser over softmax weights (no use of the library's solver)."""

    def value(z: np.ndarray) -> float:
        lam = np.exp(z - z.max())
        lam /= lam.sum()
        tails = np.cumsum(lam[::-1])[::-1][1:]  # P(bin >= j) for j = 1..k
        return kl(lam, bins) + sum(
            kl(np.array([t, 1 - t]), np.array([a, 1 - a])) for t, a in zip(tails, above, strict=True)
        )

    best = min(
        (minimize(value, x0, method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 20000})
         for x0 in (np.log(bins), np.zeros(len(bins)))),
        key=lambda r: r.fun,
    )  # fmt: skip
    return float(best.fun)


def cdf_at(cdf: np.ndarray, question: ForecastingQuestion, x: float) -> float:
    assert question.range is not None
    return float(np.interp(question.range.location(x), dist.locations(), cdf))


def stated_cdf(world: World, question: ForecastingQuestion, restated: bool = False) -> np.ndarray:
    """The CDF a faithful forecaster makes of the percentiles the world states for ``question``."""
    assert question.range is not None
    levels = (0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95)
    values = world.stated_quantiles(question.question_type, question.range, levels, restated)
    return np.asarray(NumericForecast.from_percentiles(question, dict(zip(levels, values, strict=True))).cdf)


def event_options(entry: dict) -> list[str]:
    return entry["question"]["metadata"]["outcome_event"]["options"]


def assert_hand_computations(run: Path, qs: list[ForecastingQuestion]) -> int:
    """Every scored tuple of ``run`` (made by the incoherent rule over ``qs``) against its hand computation; the
    number of tuples compared."""
    world, says = World(qs), World(qs, INCOHERENT)  # the coherent world, and what the server states of it
    by_id = {q.id: q for q in qs}
    compared = 0

    def option_prob(source: ForecastingQuestion, chosen: list[str]) -> float:
        probs = dict(zip(source.options, world.choice(source.title, source.options), strict=True))
        return sum(probs[o] for o in chosen)

    for path in sorted(run.glob("*Checker.jsonl")):
        check = get_check(path.stem)
        for _, obj in iter_json_lines(path):
            line, violation = obj["line"], obj["violation_data"]["default"]["violation"]
            compared += 1
            if check.name.startswith("PARTITION"):
                fields = check.field_names
                source = by_id[line[fields[0]]["question"]["metadata"]["outcome_event"]["question_id"]]
                stated = [line[f]["forecast"]["prob"] for f in fields]
                expected = [1.2 * option_prob(source, event_options(line[f])) for f in fields]
                assert stated == pytest.approx(expected, abs=1e-12) and sum(stated) == pytest.approx(1.2)
                assert violation == pytest.approx(partition_by_hand(stated), rel=1e-6)
            elif check.name == "MC_BINARY":
                source = by_id[line["X"]["question"]["id"]]
                p = option_prob(source, event_options(line["P"]))
                q = min(1.0, 1.2 * p)
                assert line["X"]["forecast"]["probs"] == pytest.approx(world.choice(source.title, source.options))
                assert line["P"]["forecast"]["prob"] == pytest.approx(q)
                assert violation == pytest.approx(binary_pair_by_hand(p, min(q, 1 - 1e-12)), rel=1e-6)
            elif check.name.startswith("CDF_THRESHOLDS"):
                x = ForecastingQuestion.model_validate(line["X"]["question"])
                ts = [f for f in check.field_names if f.startswith("T_")]
                t = [line[f]["question"]["metadata"]["outcome_event"]["above"] for f in ts]
                shifted, true = stated_cdf(says, x), world.cdf(x.question_type, x.range)
                assert line["X"]["forecast"]["cdf"] == pytest.approx(list(shifted), abs=1e-12)
                at = np.array([cdf_at(shifted, x, v) for v in t])
                bins = np.diff(np.concatenate([[0.0], at, [1.0]]))
                above = np.array([1 - cdf_at(true, x, v) for v in t])
                assert [line[f]["forecast"]["prob"] for f in ts] == pytest.approx(list(above), 1e-12)
                assert (at < 1 - above).all()  # shifted up: the CDF lies below the threshold answers' CDF
                assert violation > 0.01 and violation == pytest.approx(thresholds_by_hand(bins, above), rel=1e-5)
            elif check.name == "NUMERIC_PARAPHRASE":
                x = ForecastingQuestion.model_validate(line["X"]["question"])
                first, second = stated_cdf(says, x), stated_cdf(says, x, restated=True)
                f, g = np.diff(first, prepend=0, append=1), np.diff(second, prepend=0, append=1)
                data = obj["violation_data"]["default"]
                assert violation == pytest.approx(-2 * math.log(np.sqrt(f * g).sum()), rel=1e-6)
                assert violation > 0.005
                assert data["largest_cdf_gap"] == pytest.approx(float(np.abs(first - second).max()), abs=1e-12)
            else:
                raise AssertionError(f"no hand computation for {check.name}")
    return compared


def test_the_incoherent_rules_violations_equal_hand_computations():
    """Options' yes/no answers summing to 1.2 (PARTITION, MC_BINARY), a CDF shifted by a tenth of the range against
    the thresholds (CDF_THRESHOLDS) and a second wording's shifted by a twentieth (NUMERIC_PARAPHRASE)."""
    assert (INCOHERENT.option_events, INCOHERENT.shift, INCOHERENT.restated_shift) == (1.2, 0.1, -0.05)
    qs = questions()
    with ScriptedServer(incoherent_rule(qs)) as srv:
        run = evaluate(f"basic:{srv.model_spec()}", "run", "--epsilon", "1e-12")
    assert json.loads((run / "summary.json").read_text())["failures"] == []
    assert assert_hand_computations(run, qs) == sum(len(v) for v in PLAN.values())


def test_the_bundled_typed_benchmark_coherent_and_incoherent():
    """The multiple-choice and numeric part of the bundled benchmark (its default world: the bundled questions):
    no violation with the coherent rule, the hand computations with the incoherent one."""
    typed = str(typed_benchmark_dir() / "tuples")
    with ScriptedServer(coherent_rule()) as srv:
        run = evaluate(f"basic:{srv.model_spec()}", "coherent", "-t", typed)
    files = sorted(run.glob("*Checker.jsonl"))
    assert {get_check(p.stem).name for p in files} >= {
        "PARTITION4",
        "MC_BINARY",
        "CDF_THRESHOLDS",
        "NUMERIC_PARAPHRASE",
    }
    assert json.loads((run / "summary.json").read_text())["failures"] == []
    n = 0
    for path in files:
        for _, obj in iter_json_lines(path):
            n += 1
            for metric in ("default", "frequentist"):
                assert obj["violation_data"][metric]["violation"] < 1e-9, (path.name, metric)
    assert n == sum(1 for p in (typed_benchmark_dir() / "tuples").glob("*.jsonl") for _ in p.open())
    with ScriptedServer(incoherent_rule()) as srv:
        run = evaluate(f"basic:{srv.model_spec()}", "incoherent", "-t", typed, "--epsilon", "1e-12")
    assert assert_hand_computations(run, bundled_questions()) == n


# ------------------------------------------------------------------------------------------ failures, not crashes
def test_invalid_distributions_are_asked_again_then_failed_items_and_the_rest_is_scored():
    with ScriptedServer(invalid_rule(questions())) as srv:
        run = evaluate(f"basic:{srv.model_spec()}", "run")
        options_asked = [r for r in srv.requests if "probabilities" in (r.schema or {}).get("properties", {})]
    summary = json.loads((run / "summary.json").read_text())
    failed = {f["question_id"]: f["error"] for f in summary["failures"]}
    kinds = {q.id: q.question_type for q in questions()}
    assert {kinds[i] for i in failed} == {"multiple_choice", "numeric", "date"}
    assert all(kinds[i] != "binary" for i in failed)
    assert any("sum to 1.2" in e for e in failed.values()) and any("out of order" in e for e in failed.values())
    assert len(options_asked) > len({r.last_user_text for r in options_asked})  # asked again with the reason
    assert len(scored(run, "PARTITION4")) == 1  # yes/no only: scored
    assert not (run / f"{CLASSES['MC_BINARY']}.jsonl").exists() or scored(run, "MC_BINARY") == []


def test_a_binary_only_forecaster_gives_failed_items_with_one_clear_reason():
    run = evaluate("constant", "run")
    summary = json.loads((run / "summary.json").read_text())
    kinds = {q.id: q.question_type for q in questions()}
    failed = {f["question_id"]: f["error"] for f in summary["failures"]}
    assert {kinds[i] for i in failed} == {"multiple_choice", "numeric", "date"}
    assert failed["mc3"] == (
        "the forecaster returned a Forecast for a multiple choice question, which takes a ChoiceForecast "
        "(a probability per option)"
    )
    assert failed["units"].startswith(
        "the forecaster returned a Forecast for a numeric question, which takes a NumericForecast"
    )
    # its yes/no answers are scored: three options at 0.5 each
    assert violations(run, "PARTITION3") == [pytest.approx(partition_by_hand([0.5] * 3), rel=1e-6)]
    assert not (run / f"{CLASSES['MC_BINARY']}.jsonl").exists() or scored(run, "MC_BINARY") == []
