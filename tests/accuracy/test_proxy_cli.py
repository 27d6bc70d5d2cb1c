"""`cc proxy` against an independent computation in plain Python loops, and the inputs it accepts."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from consistency.cli import app
from tests.support.reference import FORECASTS, GROUND_TRUTH_RUN, needs_reference

NOISE = (0.03, 0.08, 0.15, 0.25, 0.4, 0.6)


def run(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> Path:
    """Three batches, six forecasters of rising noise, some missing forecasts and unresolved questions."""
    rng = np.random.default_rng(7)
    lines = ["forecaster,question_id,prob,resolution,batch"]
    for b in ("b1", "b2", "b3"):
        truth = rng.random(25)
        y = (rng.random(25) < truth).astype(int)
        for k, noise in enumerate(NOISE):
            for j in range(25):
                if rng.random() < 0.1:
                    continue
                p = float(np.clip(truth[j] + rng.normal(0, noise), 0.0, 1.0))
                res = "" if j == 24 else str(y[j])  # one unresolved question per batch
                lines.append(f"f{k},{b}-q{j},{p:.4f},{res},{b}")
    path = tmp_path_factory.mktemp("proxy") / "forecasts.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def read_rows(path: Path) -> list[dict]:
    header, *body = path.read_text().splitlines()
    return [dict(zip(header.split(","), line.split(","), strict=True)) for line in body]


def hand_aggregate(xs: list[float], method: str) -> float:
    if method == "mean":
        return sum(xs) / len(xs)
    if method == "median":
        s = sorted(xs)
        n = len(s)
        return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    if method == "extremized_mean":
        m = sum(xs) / len(xs)
        return m**2 / (m**2 + (1 - m) ** 2)
    c = [min(max(x, 1e-3), 1 - 1e-3) for x in xs]
    z = math.sqrt(3) * sum(math.log(v / (1 - v)) for v in c) / len(c)
    return 1 / (1 + math.exp(-z))


def hand_scores(rows: list[dict], method: str, loo: bool) -> dict[tuple[str, str], tuple[float, float]]:
    """(forecaster, batch) -> (mean Brier, mean proxy loss) over resolved questions, one loop at a time."""
    by_question: dict[str, dict[str, float]] = {}
    for r in rows:
        if r["resolution"] != "":
            by_question.setdefault(r["question_id"], {})[r["forecaster"]] = float(r["prob"])
    sums: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        if r["resolution"] == "":
            continue
        others = [p for f, p in by_question[r["question_id"]].items() if not (loo and f == r["forecaster"])]
        x, y = float(r["prob"]), float(r["resolution"])
        acc = sums.setdefault((r["forecaster"], r["batch"]), [0.0, 0.0, 0])
        acc[0] += (x - y) ** 2
        acc[1] += (x - hand_aggregate(others, method)) ** 2
        acc[2] += 1
    return {k: (b / n, p / n) for k, (b, p, n) in sums.items()}


def hand_z(values: dict[tuple[str, str], float]) -> dict[tuple[str, str], float]:
    out = {}
    for batch in {b for _, b in values}:
        keys = [k for k in values if k[1] == batch]
        mu = sum(values[k] for k in keys) / len(keys)
        sd = math.sqrt(sum((values[k] - mu) ** 2 for k in keys) / len(keys))
        out.update({k: (values[k] - mu) / sd for k in keys})
    return out


def hand_pearson(a: list[float], b: list[float]) -> float:
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b, strict=True))
    return cov / math.sqrt(sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b))


def hand_ranks(a: list[float]) -> list[float]:
    return [sum(1 for y in a if y < x) + (sum(1 for y in a if y == x) + 1) / 2 for x in a]


@pytest.mark.parametrize("loo", [True, False])
def test_table_values_equal_a_hand_loop_computation(table, loo):
    code, stdout, stderr = run("proxy", table, "--json", "--bootstrap", 50, "--loo" if loo else "--with-self")
    assert code == 0, stderr
    got = json.loads(stdout)
    assert got["variant"] == ("leave-one-out" if loo else "with self") and got["batches"] == ["b1", "b2", "b3"]
    rows = read_rows(table)
    for method in ("mean", "median", "extremized_mean", "logit_pool"):
        hand = hand_scores(rows, method, loo)
        listed = {(r["forecaster"], r["batch"]): r for r in got["forecasters"]}
        assert set(listed) == set(hand)
        for key, (brier, proxy) in hand.items():
            assert listed[key]["truth"] == pytest.approx(brier, abs=1e-12, rel=0)
            assert listed[key]["proxy"][method] == pytest.approx(proxy, abs=1e-12, rel=0)
        zb, zp = hand_z({k: v[0] for k, v in hand.items()}), hand_z({k: v[1] for k, v in hand.items()})
        keys = sorted(hand)
        r = hand_pearson([zp[k] for k in keys], [zb[k] for k in keys])
        rho = hand_pearson(hand_ranks([zp[k] for k in keys]), hand_ranks([zb[k] for k in keys]))
        c = got["correlations"][method]
        assert c["pearson"]["r"] == pytest.approx(r, abs=1e-12, rel=0) and c["pearson"]["n"] == 18
        assert c["spearman"]["r"] == pytest.approx(rho, abs=1e-12, rel=0)
        assert c["pearson"]["low"] <= c["pearson"]["r"] <= c["pearson"]["high"]
        # predicting the next batch: z on b1 -> b2 and b2 -> b3, forecasters present in both
        pairs = [(f, t, u) for t, u in (("b1", "b2"), ("b2", "b3")) for f in sorted({f for f, _ in keys})]
        ahead = got["next_batch"]
        assert ahead[method]["r"] == pytest.approx(
            hand_pearson([zp[(f, t)] for f, t, _ in pairs], [zb[(f, u)] for f, _, u in pairs]), abs=1e-12, rel=0
        )
        assert ahead["truth"]["r"] == pytest.approx(
            hand_pearson([zb[(f, t)] for f, t, _ in pairs], [zb[(f, u)] for f, _, u in pairs]), abs=1e-12, rel=0
        )


def test_with_self_scores_are_lower_and_zscore_changes_pooled_r(table):
    loo = json.loads(run("proxy", table, "--json", "--bootstrap", 20)[1])
    own = json.loads(run("proxy", table, "--json", "--bootstrap", 20, "--with-self")[1])
    for a, b in zip(loo["forecasters"], own["forecasters"], strict=True):
        assert all(b["proxy"][m] < a["proxy"][m] for m in a["proxy"])  # own forecast pulls the target closer
    raw = json.loads(run("proxy", table, "--json", "--bootstrap", 20, "--raw")[1])
    assert raw["zscore"] is False
    assert raw["forecasters"] == loo["forecasters"]  # the per-pair scores are the raw means either way
    assert raw["correlations"]["mean"]["pearson"]["r"] != pytest.approx(loo["correlations"]["mean"]["pearson"]["r"])
    one = json.loads(run("proxy", table, "--json", "--bootstrap", 20, "--batches", "none")[1])
    assert one["batches"] == [""] and one["next_batch"] is None


def test_options_and_errors(table, tmp_path):
    got = json.loads(run("proxy", table, "--json", "--bootstrap", 20, "-a", "logit_pool", "--extremize", 3)[1])
    assert list(got["correlations"]) == ["logit_pool"]
    code, _, stderr = run("proxy", table, "-a", "mode")
    assert code == 2 and "--aggregators: unknown mode" in stderr
    code, _, stderr = run("proxy", table, "--batches", "week")
    assert code == 2 and "--batches 'week'" in stderr
    code, _, stderr = run("proxy", table, "--future", "b1,b9")
    assert code == 2 and "next batch" in stderr
    # each PATH its own batch
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    rows = table.read_text().splitlines()
    a.write_text("\n".join([rows[0], *(r for r in rows[1:] if r.endswith(",b1"))]) + "\n")
    b.write_text("\n".join([rows[0], *(r for r in rows[1:] if r.endswith(",b2"))]) + "\n")
    got = json.loads(run("proxy", a, b, "--json", "--bootstrap", 20, "--batches", "source")[1])
    assert got["batches"] == ["a.csv", "b.csv"] and got["next_batch"]["truth"]["n"] == 6


def test_duplicates_policy_is_applied_and_counted(tmp_path):
    path = tmp_path / "dup.csv"
    path.write_text(
        "forecaster,question_id,prob,resolution\n"
        + "".join(f"f{k},q{j},{0.2 + 0.1 * k},{j % 2}\n" for k in range(4) for j in range(6))
        + "f0,q0,0.6,0\n"
    )
    code, _, stderr = run("proxy", path)
    assert code == 2 and "second forecast on question 'q0'" in stderr and "--duplicates" in stderr
    policy = {}
    for name in ("mean", "first", "last"):
        code, stdout, stderr = run("proxy", path, "--json", "--bootstrap", 10, "--duplicates", name)
        assert code == 0 and "1 (forecaster, question) pair(s)" in stderr and f"--duplicates {name}" in stderr
        policy[name] = next(r for r in json.loads(stdout)["forecasters"] if r["forecaster"] == "f0")["truth"]
    # f0's Brier over q0..q5 with q0's forecast 0.2, 0.6 or their mean
    rest = sum((0.2 - j % 2) ** 2 for j in range(1, 6))
    assert policy["first"] == pytest.approx((0.2**2 + rest) / 6, abs=1e-12)
    assert policy["last"] == pytest.approx((0.6**2 + rest) / 6, abs=1e-12)
    assert policy["mean"] == pytest.approx((0.4**2 + rest) / 6, abs=1e-12)


@needs_reference
def test_published_run_directory_needs_a_duplicates_policy():
    code, _, stderr = run("leaderboard", FORECASTS)
    assert code == 2 and "--duplicates" in stderr
    code, stdout, stderr = run("leaderboard", FORECASTS, "--duplicates", "mean", "--json")
    assert code == 0 and "pair(s) had differing repeated forecasts" in stderr
    assert json.loads(stdout)["standings"][0]["n_questions"] > 0


@needs_reference
def test_summary_file_is_named_when_per_question_forecasts_are_needed():
    code, _, stderr = run("leaderboard", GROUND_TRUTH_RUN / "ground_truth_summary.json", "--method", "log")
    assert code == 2 and "ground-truth summary" in stderr and "invalid JSON" not in stderr
    code, stdout, _ = run("leaderboard", GROUND_TRUTH_RUN / "ground_truth_summary.json", "--json")
    published = json.loads((GROUND_TRUTH_RUN / "ground_truth_summary.json").read_text())
    assert code == 0 and json.loads(stdout)["standings"][0]["score"] == published["avg_brier_score"]


def test_batches_from_the_papers_split_directory_names(tmp_path):
    """Ground-truth directories named <forecaster>_<date range>, one per split, as published."""
    from consistency.datasets import sample_dir
    from consistency.jsonl import iter_json_lines

    questions = []
    for _, obj in iter_json_lines(sample_dir() / "forecasts" / "AndChecker.jsonl"):
        questions += [e["question"] for e in obj["line"].values()]
    rng = np.random.default_rng(5)
    for split, part in (("20240101_20240201", questions[:4]), ("20240301_20240401", questions[4:])):
        for k in range(4):
            d = tmp_path / f"Model-{k}_{split}"
            d.mkdir()
            lines = [
                json.dumps({"question": {**q, "resolution": bool(i % 2)}, "forecast": {"prob": float(rng.random())}})
                for i, q in enumerate(part)
            ]
            (d / "ground_truth_results.jsonl").write_text("\n".join(lines) + "\n")
    code, stdout, stderr = run("proxy", tmp_path, "--batches", "split", "--json", "--bootstrap", 10)
    assert code == 0, stderr
    got = json.loads(stdout)
    assert got["batches"] == ["20240101_20240201", "20240301_20240401"]
    assert {r["forecaster"] for r in got["forecasters"]} == {f"Model-{k}" for k in range(4)}
    assert got["next_batch"]["truth"]["n"] == 4


@pytest.mark.parametrize("loss", ["brier", "log", "absolute", "zero_one"])
def test_pearson_agrees_with_the_librarys_correlation_table(table, loss):
    from consistency.accuracy.proxy import proxy_correlation_table
    from consistency.accuracy.table import load_table

    t = load_table([table])
    F, _, questions = t.matrix()
    first = {q: i for i, q in reversed(list(enumerate(t.question_id)))}
    y = np.array([t.resolution[first[q]] for q in questions])
    batches = np.array([t.batch[first[q]] for q in questions])
    reference = proxy_correlation_table(F, y, batches, losses=[loss])
    for loo in (True, False):
        got = json.loads(
            run("proxy", table, "--json", "--bootstrap", 10, "--loss", loss, "--loo" if loo else "--with-self")[1]
        )
        for method, c in got["correlations"].items():
            row = f"{method} (LOO)" if loo else method
            assert c["pearson"]["r"] == pytest.approx(reference.get(row, loss), abs=1e-12, rel=0)


def test_the_python_api_gives_what_the_command_prints(table):
    """`cc proxy --json` is options -> accuracy.proxy_study.proxy_study -> print: a Python caller gets the same
    summary, and the same one-sentence refusals before any reading."""
    from consistency.accuracy.inputs import ScoreInputError
    from consistency.accuracy.proxy_study import proxy_study
    from consistency.accuracy.settings import Proxying

    code, stdout, stderr = run("proxy", table, "--json", "--bootstrap", 50, "--with-self", "--raw")
    assert code == 0, stderr
    study = proxy_study([table], Proxying(bootstrap=50, loo=False, zscore=False))
    assert json.loads(json.dumps(study.summary)) == json.loads(stdout) and study.duplicates == 0
    with pytest.raises(ScoreInputError, match="--aggregators: unknown mode"):
        proxy_study([table], Proxying(aggregators="mode"))
    with pytest.raises(ScoreInputError, match="--batches 'week'"):
        proxy_study([table], Proxying(batches="week"))
