"""The bundled multiple-choice and numeric benchmark, and `cc score/repair/diff/report` over forecast files of the
four checks on it: violations equal hand computations, repairs re-score as coherent, the report draws the
distributions against their yes/no answers."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize

from consistency.checks import CDF_THRESHOLDS, MC_BINARY, NUMERIC_PARAPHRASE, get_check
from consistency.datasets import typed_benchmark_dir
from consistency.datasets.make_typed import main
from consistency.evaluation.benchmark import load_benchmark
from consistency.models import ForecastEntry, NumericForecast, tuple_model
from consistency.outcomes import event_of, forecast_row, option_groups, thresholds
from consistency.report.distributions import picture_of

CC = Path(sys.executable).parent / "cc"
TYPED = typed_benchmark_dir()
P_ANSWER = 0.3  # every yes/no question's forecast in the files below


def cc(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CC), *map(str, args)], capture_output=True, text=True, env={"COLUMNS": "200"}, timeout=300
    )


def _numeric(question, shift: float) -> dict:
    r = question.range
    cdf = NumericForecast.from_percentiles(
        question, {0.1: r.value(0.2 + shift), 0.5: r.value(0.5 + shift), 0.9: r.value(0.8)}
    )
    return cdf.model_dump(mode="json", exclude={"metadata"})


def write_forecasts(target: Path) -> dict[str, list[dict]]:
    """Forecast files over the bundled typed tuples: uniform MC forecasts, 0.3 on every yes/no question, a CDF from
    three percentiles (the second wording's shifted by a tenth of the range)."""
    target.mkdir(parents=True, exist_ok=True)
    written = {}
    for path in sorted((TYPED / "tuples").glob("*.jsonl")):
        check = get_check(path.stem)
        lines = []
        for raw in path.read_text().splitlines():
            tup = json.loads(raw)
            made = tuple_model(check).model_validate(tup)
            line = {}
            for f in check.fields:
                q = getattr(made, f)
                if q.question_type == "multiple_choice":
                    forecast = {"probs": [1 / len(q.options)] * len(q.options)}
                elif q.question_type in ("numeric", "date"):
                    forecast = _numeric(q, 0.1 if f == "para_X" else 0.0)
                else:
                    forecast = {"prob": P_ANSWER}
                line[f] = {"question": tup[f], "forecast": forecast}
            lines.append({"line": line})
        (target / path.name).write_text("".join(json.dumps(x) + "\n" for x in lines))
        written[check.class_name] = lines
    return written


@pytest.fixture(scope="module")
def forecasts(tmp_path_factory) -> tuple[Path, dict[str, list[dict]]]:
    root = tmp_path_factory.mktemp("typed")
    return root / "forecasts", write_forecasts(root / "forecasts")


def _violations(path: Path, metric: str = "default") -> list[float]:
    return [json.loads(x)["violation_data"][metric]["violation"] for x in path.read_text().splitlines()]


def _entries(check, line: dict) -> dict[str, ForecastEntry]:
    return {f: ForecastEntry.model_validate(line["line"][f]) for f in check.field_names}


def _kl(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    keep = a > 0
    return float(np.sum(a[keep] * np.log(a[keep] / b[keep])))


def _clipped(bins: np.ndarray, epsilon: float = 1e-3) -> np.ndarray:
    m = len(bins)
    floor = np.where(bins <= 0, epsilon / (m - 1), np.maximum(bins, 1e-12))
    raised = floor != bins
    return np.where(raised, floor, bins * (1 - floor[raised].sum()) / bins[~raised].sum())


# ---------------------------------------------------------------------------------------------- the benchmark
def test_the_typed_benchmark_loads_with_its_structure_and_provenance(tmp_path):
    sets = {ts.check.name: ts for ts in load_benchmark(TYPED / "tuples")}
    assert {n: len(ts.tuples) for n, ts in sets.items()} == {
        "PARTITION3": 1,
        "PARTITION4": 4,
        "PARTITION5": 2,
        "PARTITION6": 1,
        "MC_BINARY": 16,
        "CDF_THRESHOLDS": 10,
        "NUMERIC_PARAPHRASE": 10,
    }
    assert not any(ts.errors for ts in sets.values())
    for name, ts in sets.items():
        for tup in ts.tuples:
            if name.startswith("PARTITION"):  # the k options, one each, in order
                source = {event_of(q).question_id for q in tup.values()}
                options = [event_of(tup[f]).options for f in ts.check.field_names]
                assert len(source) == 1 and [len(o) for o in options] == [1] * len(options)
                continue
            x = tup["X"]
            assert x.metadata["provenance"]["shape"] and x.id.startswith("cc-typed-")
            if name == "MC_BINARY":
                assert option_groups(MC_BINARY, "X", tup)[0] == [x.options.index(o) for o in event_of(tup["P"]).options]
            elif name == "CDF_THRESHOLDS":
                t = thresholds(CDF_THRESHOLDS, "X", tup)
                assert (np.diff(t) > 0).all() and x.range.lower < t[0] and t[-1] < x.range.upper
            else:
                assert tup["para_X"].range == x.range and tup["para_X"].title != x.title
    # cc validate tells every file's check, PARTITION<k> by its fields too (in a fresh process nothing has
    # registered PARTITION4 by name yet).
    done = cc("validate", TYPED / "tuples", TYPED / "forecasts")
    assert done.returncode == 0 and "error" not in done.stdout + done.stderr, done.stdout + done.stderr
    assert done.stdout.count("all valid") == 14
    # Built by the template instantiator from the questions file alone (and the sample forecasts from the tuples):
    # regenerated byte for byte.
    main(["--out", str(tmp_path / "tuples"), "--forecasts", str(tmp_path / "forecasts")])
    for part in ("tuples", "forecasts"):
        assert sorted(p.name for p in (tmp_path / part).iterdir()) == sorted(p.name for p in (TYPED / part).iterdir())
        for path in (TYPED / part).glob("*.jsonl"):
            assert (tmp_path / part / path.name).read_bytes() == path.read_bytes(), path
    # The sample forecaster is incoherent as documented: PARTITION's answers sum to 1.2.
    line = json.loads((TYPED / "forecasts" / "Partition4Checker.jsonl").read_text().splitlines()[0])["line"]
    assert sum(e["forecast"]["prob"] for e in line.values()) == pytest.approx(1.2, abs=1e-5)


# ---------------------------------------------------------------------------------------------- cc score
def test_cc_score_gives_the_hand_computed_violations(forecasts, tmp_path):
    source, lines = forecasts
    out = tmp_path / "scored"
    done = cc("score", source, "-o", out, "--bootstrap", "0")
    assert done.returncode == 0, done.stderr
    for name in ("PARTITION3", "PARTITION4", "PARTITION5", "PARTITION6"):
        # k yes/no answers of 0.3 over one-hot worlds: by symmetry the closest coherent point is uniform.
        k = int(name[-1])
        hand = k * _kl([1 / k, 1 - 1 / k], [P_ANSWER, 1 - P_ANSWER])
        assert _violations(out / f"Partition{k}Checker.jsonl") == pytest.approx(
            [hand] * len(lines[f"Partition{k}Checker"])
        )
    # MC_BINARY: two distributions over (the options asked about, the rest): twice the Bhattacharyya distance.
    hand = []
    for line in lines["McBinaryChecker"]:
        a = forecast_row(MC_BINARY, _entries(MC_BINARY, line))[0]
        hand.append(-2 * math.log(math.sqrt(a * P_ANSWER) + math.sqrt((1 - a) * (1 - P_ANSWER))))
    assert _violations(out / "McBinaryChecker.jsonl") == pytest.approx(hand, abs=1e-9)
    # NUMERIC_PARAPHRASE: the same over the 202 bins of the grid, empty bins clipped as `--epsilon` says (ε shared
    # among the m - 1 other outcomes, the rest shrunk in proportion).
    hand = []
    for line in lines["NumericParaphraseChecker"]:
        p, q = (np.asarray(line["line"][f]["forecast"]["cdf"]) for f in ("X", "para_X"))
        bins = [_clipped(np.diff(np.concatenate([[0.0], c, [1.0]]))) for c in (p, q)]
        hand.append(-2 * math.log(float(np.sqrt(bins[0] * bins[1]).sum())))
    assert _violations(out / "NumericParaphraseChecker.jsonl") == pytest.approx(hand, abs=1e-6)
    # CDF_THRESHOLDS: the worlds are the 4 bins; minimise Σ KL over distributions λ on them by brute force.
    got = _violations(out / "CdfThresholdsChecker.jsonl")
    for line, v in zip(lines["CdfThresholdsChecker"], got, strict=True):
        x = forecast_row(CDF_THRESHOLDS, _entries(CDF_THRESHOLDS, line))[:4]

        def total(z: np.ndarray, x=x) -> float:
            lam = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
            above = [lam[j:].sum() for j in (1, 2, 3)]
            return _kl(lam, x) + sum(_kl([a, 1 - a], [P_ANSWER, 1 - P_ANSWER]) for a in above)

        options = {"xatol": 1e-12, "fatol": 1e-14, "maxiter": 20000}
        starts = (np.zeros(4), np.log(x))
        best = min((minimize(total, z0, method="Nelder-Mead", options=options) for z0 in starts), key=lambda r: r.fun)
        assert v == pytest.approx(best.fun, abs=1e-7) and v > 0.1


# ---------------------------------------------------------------------------------------------- cc repair / diff
def test_cc_repair_makes_the_files_coherent_and_cc_diff_reads_them(forecasts, tmp_path):
    source, lines = forecasts
    per_tuple, scored, rescored = tmp_path / "per-tuple", tmp_path / "scored", tmp_path / "rescored"
    done = cc("repair", source, "--per-tuple", "-o", per_tuple)
    assert done.returncode == 0, done.stderr
    assert cc("score", per_tuple, "-o", rescored, "--bootstrap", "0").returncode == 0
    for path in rescored.glob("*Checker.jsonl"):
        assert max(_violations(path)) < 1e-6, path.name
    # MC_BINARY's Brier repair projects (a, 1 - a, p) onto the segment of points (t, 1 - t, t): t = (2a + p) / 3
    # (X's mass counts in two columns), keeping the options' proportions inside each group (uniform stays uniform).
    first = json.loads((per_tuple / "McBinaryChecker.jsonl").read_text().splitlines()[0])["line"]
    a = forecast_row(MC_BINARY, _entries(MC_BINARY, lines["McBinaryChecker"][0]))[0]
    group = option_groups(MC_BINARY, "X", {f: _entries(MC_BINARY, {"line": first})[f].question for f in ("X", "P")})[0]
    probs = np.asarray(first["X"]["forecast"]["probs"])
    assert probs[group].sum() == pytest.approx((2 * a + P_ANSWER) / 3) == pytest.approx(first["P"]["forecast"]["prob"])
    assert np.ptp(probs[group]) < 1e-12 and first["X"]["forecast"]["metadata"]["repair"]["original_probs"]
    # Jointly: NUMERIC_PARAPHRASE's grid is too many worlds for the joint projection, but its tuples share no
    # value with others, so each is a component of its own (repaired on its own); everything re-scores coherent.
    joint, rejoint = tmp_path / "joint", tmp_path / "joint-scored"
    done = cc("repair", source, "-o", joint)
    assert done.returncode == 0, done.stderr
    report = json.loads((joint / "repair.json").read_text())
    assert report["joint"] and report["total"]["violation_after"] < 1e-6 and report["total"]["guaranteed"] > 0
    assert cc("score", joint, "-o", rejoint, "--bootstrap", "0").returncode == 0
    assert max(v for p in rejoint.glob("*Checker.jsonl") for v in _violations(p)) < 1e-6
    paraphrase = {r["check"]: r for r in report["checks"]}["NUMERIC_PARAPHRASE"]
    alone = {r["check"]: r for r in json.loads((per_tuple / "repair.json").read_text())["checks"]}
    assert paraphrase["moved"] == pytest.approx(alone["NUMERIC_PARAPHRASE"]["moved"], rel=1e-9)
    # A paraphrase tuple sharing its questions (the same tuple twice) cannot be joined: one sentence, nothing
    # written; neither can a joint log repair of categorical fields.
    shared = tmp_path / "shared"
    shared.mkdir()
    first_line = (source / "NumericParaphraseChecker.jsonl").read_text().splitlines()[0]
    (shared / "NumericParaphraseChecker.jsonl").write_text(f"{first_line}\n{first_line}\n")
    refused = cc("repair", shared, "-o", tmp_path / "shared-joint")
    assert refused.returncode == 2 and "share a question with other tuples" in refused.stderr
    assert "Traceback" not in refused.stderr and not (tmp_path / "shared-joint").exists()
    refused = cc("repair", source, "--score", "log", "--joint", "-o", tmp_path / "joint-log")
    assert refused.returncode == 2 and "joint log repair covers yes/no checks" in refused.stderr
    # cc diff: the scored files against the repaired ones, tuple by tuple.
    assert cc("score", source, "-o", scored, "--bootstrap", "0").returncode == 0
    diff = cc("diff", scored, per_tuple)
    assert diff.returncode == 0, diff.stderr
    assert "skipped" not in diff.stdout + diff.stderr
    for name in ("CDF_THRESHOLDS", "MC_BINARY", "NUMERIC_PARAPHRASE", "PARTITION4"):
        row = next(x for x in diff.stdout.splitlines() if x.strip().startswith(name + " "))
        assert re.search(r"\s0\.0000\s", row), row  # B's mean violation


# ---------------------------------------------------------------------------------------------- cc report
def test_the_report_draws_distributions_against_their_answers(forecasts, tmp_path):
    source, lines = forecasts
    html = tmp_path / "report.html"
    done = cc("report", source, "-o", html, "--png", tmp_path / "png")
    assert done.returncode == 0, done.stderr
    page = html.read_text()
    for name in ("McBinaryChecker", "CdfThresholdsChecker", "NumericParaphraseChecker"):
        assert re.search(rf'data-figure="run1_{name}_line\d+"><svg', page), name
        assert (tmp_path / "png").glob(f"run1_{name}_line*.png")
    assert 'data-figure="run1_Partition4Checker' not in page  # no distribution in a PARTITION
    # The pictures' data: the threshold answers as CDF values, the MC forecast beside P.
    line = lines["CdfThresholdsChecker"][0]["line"]
    cdf = picture_of(CDF_THRESHOLDS, line, None)
    assert cdf.answers == pytest.approx([1 - P_ANSWER] * 3) and cdf.curves[0][1] == line["X"]["forecast"]["cdf"]
    assert len(cdf.at) == 3 and all(0 < t < 1 for t in cdf.at)
    line = lines["McBinaryChecker"][0]["line"]
    mc = picture_of(MC_BINARY, line, {"P": 0.5})
    assert mc.values == line["X"]["forecast"]["probs"] and mc.answers == [P_ANSWER] and mc.prices == [0.5]
    assert [mc.labels[i] for i in mc.chosen] == event_of(ForecastEntry.model_validate(line["P"]).question).options
    para = picture_of(NUMERIC_PARAPHRASE, lines["NumericParaphraseChecker"][0]["line"], None)
    assert [label for label, _ in para.curves] == ["first wording", "second wording"]
    # The worst-tuple table lists MC_BINARY's two outcomes by the options they hold.
    assert "X is Democratic or Republican" in page or "X is Republican or Other" in page
