"""`cc diff`: paired comparison of two runs (planted NEGATION inconsistency, identical runs, Brier)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from consistency import Forecast, Forecaster
from consistency.cli import app
from consistency.evaluation import evaluate
from consistency.evaluation.diff import diff_runs
from consistency.fake_openai import probability_for
from consistency.jsonl import iter_json_lines
from consistency.metrics.paired import paired_diff, sign_test, wilcoxon_test
from consistency.metrics.scoring import score_forecasts

runner = CliRunner()
NEGATED = re.compile(r"^Will \u201c([^\u201d]*)\u201d resolve NO\?$")
SHIFT = 0.1


class Coherent(Forecaster):
    """p for a question, exactly 1 - p for its template negation."""

    def __init__(self, shift: float = 0.0):
        self.shift = shift

    async def forecast(self, question):
        match = NEGATED.match(question.title)
        if match:
            return Forecast(prob=min(1.0, 1.0 - probability_for(match.group(1)) + self.shift))
        return Forecast(prob=probability_for(question.title))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    checks = ["neg", "para", "and"]
    a = evaluate(Coherent(), checks=checks, out=root / "a").run_dir
    again = evaluate(Coherent(), checks=checks, out=root / "again").run_dir
    b = evaluate(Coherent(SHIFT), checks=checks, out=root / "b").run_dir
    return a, again, b


def violations(run: Path, check: str) -> np.ndarray:
    return np.array([obj["violation_data"]["default"]["violation"] for _, obj in iter_json_lines(run / check)])


def test_a_planted_negation_inconsistency_is_found_with_the_right_sign_and_size(runs):
    a, _, b = runs
    result = diff_runs(a, b, resamples=2000, seed=1)
    neg, para = result.groups["NEGATION"], result.groups["PARAPHRASE"]
    # the planted effect, computed apart from the runs: each NEGATION tuple's violation at (p, 1 - p + shift)
    titles = [obj["line"]["P"]["question"]["title"] for _, obj in iter_json_lines(a / "NegChecker.jsonl")]
    p = np.array([probability_for(t) for t in titles])
    planted = (
        score_forecasts("neg", np.c_[p, np.minimum(1, 1 - p + SHIFT)]).values("default")
        - score_forecasts("neg", np.c_[p, 1 - p]).values("default")
    ).mean()
    assert neg.diff == pytest.approx(planted, abs=1e-12) and neg.diff > 0
    assert neg.ci_low <= planted <= neg.ci_high and neg.ci_low > 0
    va, vb = violations(a, "NegChecker.jsonl"), violations(b, "NegChecker.jsonl")
    assert neg.mean_a == pytest.approx(va.mean()) and neg.mean_b == pytest.approx(vb.mean())
    assert neg.worse == int(np.sum(vb - va > 1e-12)) == len(va) and neg.better == 0
    assert neg.p_sign == pytest.approx(2 * 0.5 ** len(va))  # all n pairs worse: 2 · C(n, 0) / 2^n
    # untouched checks do not move; overall is the mean of the checks' differences
    assert para.diff == 0 and para.p_sign == 1.0 and para.same == para.n
    assert result.overall.diff == pytest.approx(np.mean([d.diff for d in result.groups.values()]))
    assert result.worse() == ["overall", "NEGATION"]
    top = result.changed[0]
    assert top.group == "NEGATION" and top.probs_b[1] == pytest.approx(top.probs_a[1] + SHIFT)
    assert top.titles[0] in titles


def test_cli_fails_if_worse_and_passes_on_identical_runs(runs):
    a, again, b = runs
    res = runner.invoke(app, ["diff", str(a), str(b), "--fail-if-worse"])
    assert res.exit_code == 1, res.output
    assert "NEGATION" in res.output and "worse" in res.output and "changed most" in res.output
    res = runner.invoke(app, ["diff", str(a), str(again), "--fail-if-worse"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["diff", str(a), str(again), "--json"])
    data = json.loads(res.stdout)
    assert data["overall"]["diff"] == 0 and data["overall"]["p_wilcoxon"] == 1.0 and data["worse"] == []
    assert data["most_changed"] == [] and data["notes"] == []
    # B better than A is not a failure
    res = runner.invoke(app, ["diff", str(b), str(a), "--fail-if-worse", "--test", "sign"])
    assert res.exit_code == 0, res.output
    assert "better" in res.output


def test_runs_on_different_benchmarks_are_paired_by_tuple_id_with_a_note(runs, tmp_path):
    a, _, _ = runs
    c = evaluate(Coherent(SHIFT), checks=["neg"], limit=10, seed=3, out=tmp_path / "c").run_dir
    result = diff_runs(a, c)
    assert any("benchmarks differ" in n for n in result.notes)
    assert any(n.startswith("NEGATION: 10 shared, 14 only in A") for n in result.notes)
    assert set(result.groups) == {"NEGATION"} and result.groups["NEGATION"].n == 10


def test_ground_truth_runs_compare_brier_scores(tmp_path):
    outcomes = [True, False, True, False, True]
    for name, probs in (("a", [0.9, 0.1, 0.8, 0.2, 0.7]), ("b", [0.6, 0.5, 0.8, 0.4, 0.7])):
        (tmp_path / name).mkdir()
        rows = [
            {"question": {"id": f"q{i}", "title": f"Question {i}?"}, "forecast": {"prob": p}, "resolution": y}
            for i, (p, y) in enumerate(zip(probs, outcomes, strict=True))
        ]
        (tmp_path / name / "ground_truth_results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = diff_runs(tmp_path / "a", tmp_path / "b")
    d = result.groups["Brier"]
    brier_a = [(0.9 - 1) ** 2, 0.1**2, (0.8 - 1) ** 2, 0.2**2, (0.7 - 1) ** 2]
    brier_b = [(0.6 - 1) ** 2, 0.5**2, (0.8 - 1) ** 2, 0.4**2, (0.7 - 1) ** 2]
    assert d.mean_a == pytest.approx(sum(brier_a) / 5) and d.mean_b == pytest.approx(sum(brier_b) / 5)
    assert d.diff == pytest.approx((sum(brier_b) - sum(brier_a)) / 5)
    assert (d.better, d.worse, d.same) == (0, 3, 2)
    assert d.p_sign == pytest.approx(2 * 1 / 2**3)  # 3 worse of 3 non-tied pairs
    res = runner.invoke(app, ["diff", str(tmp_path / "a"), str(tmp_path / "b")])
    assert res.exit_code == 0 and "Brier" in res.output


def test_paired_math_equals_hand_computations():
    a = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    b = np.array([0.2, 0.2, 0.1, 0.5, 0.7, 0.9])  # + . - + + +
    d = paired_diff(a, b, resamples=500, seed=0)
    assert d.diff == pytest.approx(np.mean(b - a)) and (d.better, d.worse, d.same) == (1, 4, 1)
    assert d.p_sign == pytest.approx(2 * (math.comb(5, 0) + math.comb(5, 1)) / 2**5)
    assert sign_test(0, 0) == 1.0
    assert d.ci_low <= d.diff <= d.ci_high
    # the bootstrap is seeded: same seed, same interval
    assert paired_diff(a, b, resamples=500, seed=0).ci_low == d.ci_low
    # groups weigh the same, whatever their size
    g = paired_diff([np.zeros(2), np.zeros(8)], [np.ones(2), np.zeros(8)], resamples=200)
    assert g.diff == pytest.approx(0.5) and g.n == 10


def test_the_tests_agree_with_scipy():
    from scipy.stats import binomtest, wilcoxon

    rng = np.random.default_rng(0)
    for n in (1, 3, 10, 50, 51, 400, 5000):
        d = rng.normal(0.1, 1.0, n)
        assert wilcoxon_test(d) == pytest.approx(wilcoxon(d, zero_method="wilcox").pvalue, abs=1e-9)
        tied = np.round(d, 1)[np.round(d, 1) != 0]
        if n > 50:  # ties: the normal approximation with the tie correction
            assert wilcoxon_test(tied) == pytest.approx(wilcoxon(tied, zero_method="wilcox").pvalue, abs=1e-9)
    for better, worse in ((0, 5), (3, 7), (10, 10), (100, 140), (4000, 4200)):
        assert sign_test(better, worse) == pytest.approx(binomtest(better, better + worse).pvalue, abs=1e-9)


def test_bad_input_is_one_sentence(tmp_path):
    res = runner.invoke(app, ["diff", str(tmp_path / "nope"), str(tmp_path)])
    assert res.exit_code == 2 and "no such run directory" in res.output
    res = runner.invoke(app, ["diff", str(tmp_path), str(tmp_path)])
    assert res.exit_code == 2 and "not a run directory" in res.output


def test_evaluate_max_violation_gate_exits_1_after_writing_the_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.py").write_text(
        "from consistency import Forecaster, Forecast\n\n"
        "class Always(Forecaster):\n"
        "    def __init__(self, p: float = 0.5):\n"
        "        self.p = p\n\n"
        "    async def forecast(self, question):\n"
        "        return Forecast(prob=self.p)\n"
    )
    base = ["evaluate", "-f", "f.py::Always", "-F", "p=0.8", "-c", "neg,para", "-n", "3"]
    # NEGATION: 0.8 + 0.8 != 1 (violated); PARAPHRASE: 0.8 = 0.8 (no violation); the mean is half NEGATION's
    res = runner.invoke(app, [*base, "-o", "one", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "one" / "summary.json").read_text())
    neg = summary["checks"]["NegChecker"]["default"]["avg_violation"]
    mean = summary["aggregate"]["default"]["avg_violation"]
    assert neg > 0 and mean == pytest.approx(neg / 2)
    res = runner.invoke(app, [*base, "-o", "two", "--max-violation", str(mean * 1.01)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, [*base, "-o", "three", "--max-violation", str(mean * 0.99)])
    assert res.exit_code == 1 and "mean arbitrage violation of the mean over checks" in res.output
    assert json.loads((tmp_path / "three" / "run.json").read_text())["status"] == "complete"  # written first
    res = runner.invoke(app, [*base, "-o", "four", "--max-violation", str(mean * 1.01), "--check-level"])
    assert res.exit_code == 1 and "NEGATION" in res.output and "PARAPHRASE" not in res.output.split("failed")[-1]


def test_report_shows_the_diff_section(runs, tmp_path):
    a, _, b = runs
    page = tmp_path / "r.html"
    res = runner.invoke(app, ["report", str(a), str(b), "--diff", "-o", str(page)])
    assert res.exit_code == 0, res.output
    html = page.read_text()
    section = html[html.index('<section id="diff"') :]
    assert section.index("</section>") < section.index("</main>")
    assert '<tr class="worse"><td>NEGATION</td>' in section and "Changed most" in section
    res = runner.invoke(app, ["report", str(a), "--diff", "-o", str(tmp_path / "one.html")])
    assert res.exit_code == 2 and "--diff compares two runs" in res.output
    assert not (tmp_path / "one.html").exists()  # refused before any page is written
