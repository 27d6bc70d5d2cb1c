"""Replaying call trees in the shape of the paper's ConsistentForecaster files, against closed forms."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from consistency.cli import app
from consistency.evaluation import evaluate
from consistency.evaluation.asking import RunOptions
from consistency.evaluation.scoring import score_path
from consistency.fake_openai import ScriptedServer, hypocritical_rule
from consistency.forecasters import ArbitrageForecaster, BasicForecaster
from consistency.forecasters.arbitrage.replay import ReplayError, replay
from consistency.llm import LLMSettings
from consistency.metrics.closed_forms import closed_form

CHECKER = {"neg": ("NegChecker", "not_P"), "para": ("ParaphraseChecker", "para_P")}


def logit(p: float) -> float:
    return math.log(p / (1 - p))


def sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-z))


def question(title: str) -> dict:
    return {"id": title.lower().replace(" ", "-"), "title": title, "body": "", "question_type": "binary"}


def leaf(title: str, p: float) -> dict:
    return {**question(title), "elicited_prob": p, "elicitation_metadata": {"reasoning": "base"}}


def tree(x_prob: float, x_meta, steps: list[tuple[str, dict]]) -> list[dict]:
    """The published shape: x's own answer, then per check its other field with answer and subtree."""
    out = [{"name": "P", "elicited_prob": x_prob, "elicitation_metadata": x_meta}]
    for kind, child in steps:
        checker, field = CHECKER[kind]
        out.append({"name": checker, "data": {field: child}})
    return out


def by_hand(rule: str, p: float, others: list[tuple[str, float]]) -> float:
    """Closed forms of NEGATION / PARAPHRASE steps in sequence (logit averages), per weight rule."""
    w = 1.0
    for kind, b in others:
        other = logit(1 - b) if kind == "neg" else logit(b)
        if rule == "paper":  # x weighs w; w grows by n - 1 = 1
            p, w = sigmoid((w * logit(p) + other) / (w + 1)), w + 1
        else:  # cf: the other field weighs w; w grows by n - 2 = 0
            p = sigmoid((logit(p) + w * other) / (1 + w))
    return p


def write_lines(path: Path, forecasts: list[tuple[str, float, object]]) -> Path:
    """One NegChecker-shaped line per (title, prob, metadata) pair of forecasts."""
    with path.open("w") as fh:
        for i in range(0, len(forecasts), 2):
            (t1, p1, m1), (t2, p2, m2) = forecasts[i], forecasts[i + 1]
            line = {
                "P": {"question": question(t1), "forecast": {"prob": p1, "metadata": m1}},
                "not_P": {"question": question(t2), "forecast": {"prob": p2, "metadata": m2}},
            }
            fh.write(json.dumps({"line": line, "violation_data": {}}) + "\n")
    return path


def one(path: Path, rule: str = "paper", **kw):
    [result] = replay(path, rule, **kw)
    return result


def test_depth_one_negation_recomputes_to_the_closed_form(tmp_path):
    a, b = 0.7, 0.4
    expected = sigmoid((logit(a) + logit(1 - b)) / 2)
    t = tree(a, {"reasoning": "r"}, [("neg", leaf("Not P", b))])
    path = write_lines(tmp_path / "NegChecker.jsonl", [("P", expected, t), ("Not P", 0.4, {"reasoning": "r"})])
    r = one(path)
    assert (r.forecasts, r.nodes) == (1, 1)
    assert r.max_diff < 1e-12 and r.negative_profit == 0
    d = r.by_depth[1].as_dict()
    # only x moves: the tuple is still violated, less than before
    assert 0 < d["violation_recomputed"] < closed_form("NEGATION", np.array([[a, b]]))[0]
    assert d["violation_stored"] == pytest.approx(d["violation_recomputed"], abs=1e-12)


def test_the_papers_section_5_example(tmp_path):
    """F(P)=0.5, F(para P)=0.6, F(para² P)=0.7 give about 0.5505 and 0.6517: still inconsistent."""
    tp = tree(0.5, None, [("para", leaf("para P", 0.6))])
    tq = tree(0.6, None, [("para", leaf("para para P", 0.7))])
    path = write_lines(tmp_path / "ParaphraseChecker.jsonl", [("P", 0.5505, tp), ("para P", 0.6517, tq)])
    r = one(path, write_to=tmp_path / "out")
    assert r.max_diff < 5e-5
    line = json.loads((tmp_path / "out" / "ParaphraseChecker.jsonl").read_text())
    p, q = line["line"]["P"]["forecast"]["prob"], line["line"]["not_P"]["forecast"]["prob"]
    assert (round(p, 4), round(q, 4)) == (0.5505, 0.6517)
    assert closed_form("PARAPHRASE", np.array([[p, q]]))[0] > 1e-3


def g4_tree(a: list[float], i: int, r: int) -> tuple[float, object]:
    """⟨F⟩ʳ on paraⁱ(x) in the published shape, with the stored value from Theorem G.4."""
    value = sigmoid(sum(math.comb(r, k) * logit(a[i + k]) for k in range(r + 1)) / 2**r)
    if r == 0:
        return value, {"reasoning": "base"}
    x_value, x_meta = g4_tree(a, i, r - 1)
    p_value, p_meta = g4_tree(a, i + 1, r - 1)
    child = {**question(f"para^{i + 1} x"), "elicited_prob": p_value, "elicitation_metadata": p_meta}
    return value, tree(x_value, x_meta, [("para", child)])


def test_theorem_g4_binomial_formula_for_recursive_paraphrase(tmp_path):
    a = [0.2, 0.55, 0.7, 0.35]
    value, t = g4_tree(a, 0, 3)
    path = write_lines(tmp_path / "ParaphraseChecker.jsonl", [("x", value, t), ("para x", 0.5, None)])
    r = one(path)
    assert sorted(r.by_depth) == [1, 2, 3]
    assert [r.by_depth[d].nodes for d in (1, 2, 3)] == [4, 2, 1]  # the tree repeats shared nodes, as published
    assert all(r.by_depth[d].max_diff < 1e-12 for d in (1, 2, 3))
    out = tmp_path / "w"
    one(path, write_to=out)
    written = json.loads((out / "ParaphraseChecker.jsonl").read_text())["line"]["P"]["forecast"]["prob"]
    assert logit(written) == pytest.approx((logit(a[0]) + 3 * logit(a[1]) + 3 * logit(a[2]) + logit(a[3])) / 8)


def three_checks(rule: str) -> tuple[float, list[dict]]:
    a, b, c, d = 0.62, 0.55, 0.48, 0.3
    steps = [("neg", b), ("para", c), ("neg", d)]
    value = by_hand(rule, a, steps)
    children = [leaf("not P", b), leaf("para P", c), leaf("not P again", d)]
    return value, tree(a, None, [(k, ch) for (k, _), ch in zip(steps, children, strict=True)])


@pytest.mark.parametrize("built_with", ["paper", "cf"])
def test_a_three_check_list_and_the_cf_rule(tmp_path, built_with):
    value, t = three_checks(built_with)
    path = write_lines(tmp_path / "NegChecker.jsonl", [("P", value, t), ("not P", 0.55, None)])
    same = one(path, built_with)
    other = one(path, "cf" if built_with == "paper" else "paper")
    assert same.max_diff < 1e-12
    # the rules differ once x has accumulated weight (the notes: NP differs by up to 0.07)
    assert other.max_diff > 0.01


def test_single_check_trees_are_the_same_under_both_rules(tmp_path):
    inner = tree(0.8, None, [("neg", leaf("not P", 0.3))])
    inner_neg = tree(0.3, None, [("neg", leaf("not not P", 0.6))])
    v1 = by_hand("paper", 0.8, [("neg", 0.3)])
    v2 = by_hand("paper", 0.3, [("neg", 0.6)])
    top = tree(v1, inner, [("neg", {**question("not P"), "elicited_prob": v2, "elicitation_metadata": inner_neg})])
    value = by_hand("paper", v1, [("neg", v2)])
    path = write_lines(tmp_path / "NegChecker.jsonl", [("P", value, top), ("not P", v2, inner_neg)])
    for rule in ("paper", "cf", "equal"):
        r = one(path, rule)
        assert r.max_diff < 1e-12, rule
        assert r.by_depth[2].nodes == 1 and r.by_depth[1].nodes == 3  # P's own, not P's, and not P's line


def test_a_stored_value_off_the_optimum_is_counted(tmp_path):
    t = tree(0.7, None, [("neg", leaf("not P", 0.6))])
    path = write_lines(tmp_path / "NegChecker.jsonl", [("P", 0.95, t), ("not P", 0.6, None)])
    r = one(path)
    d = r.by_depth[1].as_dict()
    assert r.max_diff > 0.3 and d["negative_profit_steps"] == 1
    assert d["violation_stored"] > d["violation_recomputed"]


def test_our_forecasters_trees_replay_exactly_and_rescore(tmp_path, monkeypatch):
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))
    settings = LLMSettings(timeout=5, max_backoff=0.05, cache=False)
    with ScriptedServer(hypocritical_rule()) as srv:
        f = ArbitrageForecaster(
            BasicForecaster(srv.model_spec()), checks=["neg", "para"], depth=2, instantiator="template"
        )
        run = evaluate(f, checks=["neg"], limit=3, out=tmp_path / "run", options=RunOptions(llm=settings))
    [r] = replay(run.run_dir / "NegChecker.jsonl", "paper", tmp_path / "exact")
    assert r.forecasts == 6 and sorted(r.by_depth) == [1, 2]
    assert r.max_diff < 1e-9 and r.negative_profit == 0
    assert one(run.run_dir / "NegChecker.jsonl", "cf").max_diff > 1e-3  # NP: the rules differ
    with ScriptedServer(hypocritical_rule()) as srv:
        base = BasicForecaster(srv.model_spec())
        cf = ArbitrageForecaster(base, checks=["neg", "para"], depth=2, instantiator="template", weights="cf")
        run = evaluate(cf, checks=["neg"], limit=3, out=tmp_path / "cf", options=RunOptions(llm=settings))
    assert one(run.run_dir / "NegChecker.jsonl", "cf").max_diff < 1e-9
    report = score_path([tmp_path / "exact"])
    assert not report.errors and report.files[0].stats()["default"].num_samples == 3
    # the written trees are whole (no references into the run's sidecar): they replay anywhere
    assert one(tmp_path / "exact" / "NegChecker.jsonl").max_diff < 1e-9
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "NegChecker.jsonl").write_text((run.run_dir / "NegChecker.jsonl").read_text())
    with pytest.raises(ReplayError, match=r"arbitrage_steps\.jsonl"):
        one(alone / "NegChecker.jsonl")


def test_cli_replay_table_json_and_errors(tmp_path):
    value, t = three_checks("cf")
    path = write_lines(tmp_path / "NegChecker.jsonl", [("P", value, t), ("not P", 0.55, None)])
    runner = CliRunner()
    done = runner.invoke(app, ["arbitrage", "replay", str(path), "--weights", "cf"])
    assert done.exit_code == 0, done.output
    assert "NegChecker.jsonl" in done.stdout and "max |recomputed - stored|" in done.stdout
    done = runner.invoke(app, ["arbitrage", "replay", str(tmp_path), "--json", "--write", str(tmp_path / "w")])
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    assert data["weights"] == "paper" and data["files"][0]["max_abs_diff"] > 0.01
    assert (tmp_path / "w" / "NegChecker.jsonl").is_file()
    bad = tmp_path / "bad" / "NegChecker.jsonl"
    bad.parent.mkdir()
    broken = tree(0.5, None, [("neg", {**question("n"), "elicited_prob": "high"})])
    write_lines(bad, [("P", 0.5, broken), ("n", 0.5, None)])
    done = runner.invoke(app, ["arbitrage", "replay", str(bad)])
    assert done.exit_code == 2 and "NegChecker.jsonl:1" in done.output and "elicited_prob" in done.output
    with pytest.raises(ReplayError, match="no such file"):
        replay(tmp_path / "missing")


def test_write_refuses_to_replace_the_files_it_replays(tmp_path):
    value, t = three_checks("cf")
    path = write_lines(tmp_path / "NegChecker.jsonl", [("P", value, t), ("not P", 0.55, None)])
    before = path.read_bytes()
    done = CliRunner().invoke(app, ["arbitrage", "replay", str(tmp_path), "--write", str(tmp_path)])
    assert done.exit_code == 2 and "would replace the ones replayed" in " ".join(done.output.split())
    assert path.read_bytes() == before
