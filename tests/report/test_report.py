"""`cc report`: every kind of input, failures and unscorable lines shown, the correlation, and the page in Chromium."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from consistency.accuracy import proper
from consistency.accuracy.pairing import same_forecaster
from consistency.datasets import benchmark_dir, sample_dir
from consistency.evaluation import RunOptions, evaluate
from consistency.evaluation.ground_truth import evaluate_questions
from consistency.evaluation.scoring import score_path, write_report
from consistency.fake_openai import Fault, ScriptedServer, every_nth, probability_rule
from consistency.jsonl import iter_json_lines
from consistency.llm import LLMSettings
from consistency.report import ReportInputError, make_report
from consistency.report.compare import compare
from tests.support.reference import FORECASTS, GROUND_TRUTH_RUN, needs_reference

CC = Path(sys.executable).parent / "cc"
NO_CACHE = LLMSettings(cache=False, timeout=5, max_backoff=0.01, max_attempts=1)
CONSTANTS = ("0.25", "0.3", "0.4", "0.5")
SECTIONS = ["summary", "consistency", "accuracy", "comparison"]


def lines(path: Path) -> list[dict]:
    return [obj for _, obj in iter_json_lines(path)]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    """A tuple run with failed questions, ground-truth runs, a `cc score` output with a bad line, and four
    constant forecasters each with a tuple run and a ground-truth run (paired by their configuration)."""
    root = tmp_path_factory.mktemp("report")
    out: dict[str, Path] = {}
    broken = every_nth(probability_rule(), 5, Fault.server_error(500))
    with ScriptedServer(broken) as srv:
        evaluate(
            srv.model_spec(),
            checks=["neg", "cond", "and"],
            limit=4,
            out=root / "tuples",
            options=RunOptions(llm=NO_CACHE),
        )
    out["tuples"] = root / "tuples"
    questions = root / "resolved.jsonl"
    with questions.open("w") as fh:
        for i, q in enumerate(lines(benchmark_dir() / "questions.jsonl")[:40]):
            fh.write(json.dumps({**q, "resolution": i % 3 == 0}) + "\n")
    with ScriptedServer(probability_rule()) as srv:
        evaluate_questions(srv.model_spec(), questions, out=root / "gt", options=RunOptions(llm=NO_CACHE))
    out["gt"] = root / "gt"
    forecasts = root / "forecasts"
    shutil.copytree(sample_dir() / "forecasts", forecasts)
    with (forecasts / "NegChecker.jsonl").open("a") as fh:
        fh.write('{"line": {"P": {"question": {"id": "x", "title": "broken"}, "forecast": {"prob": 1.7}}}}\n')
    write_report(score_path(forecasts), root / "scored")
    out["scored"] = root / "scored"
    for p in CONSTANTS:
        options = {"p": p}
        evaluate("constant", checks=["neg", "cond", "or"], limit=3, forecaster_options=options, out=root / f"c{p}")
        evaluate_questions("constant", questions, forecaster_options=options, out=root / f"g{p}")
        out[f"c{p}"], out[f"g{p}"] = root / f"c{p}", root / f"g{p}"
    out["root"] = root
    return out


def text_of(page: str) -> str:
    """The page's visible text, roughly: tags dropped and entities left as they are."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))


def test_tuple_run_shows_summary_checks_worst_tuples_failures_and_unscorable_lines(data, tmp_path):
    report = make_report([data["tuples"]], tmp_path / "r.html", top=2)
    page = (tmp_path / "r.html").read_text()
    text = text_of(page)
    summary = json.loads((data["tuples"] / "summary.json").read_text())
    meta = json.loads((data["tuples"] / "run.json").read_text())
    assert summary["failures"] and summary["errors"]  # the fixture really has both
    run = report.runs[0]
    assert run.n_failures == len(summary["failures"]) and run.n_unscorable == len(summary["errors"])
    for failure in summary["failures"]:
        assert "500" in failure["error"] and html.escape(failure["title"]) in page
    assert "no forecast:" in text and "unscorable lines" in text
    assert meta["benchmark"]["fingerprint"] in text and "scripted" in text  # fingerprint, model
    assert f"{meta['totals']['prompt_tokens']} in + {meta['totals']['completion_tokens']} out" in text
    for c in run.checks:  # statistics as recorded; every scored tuple in the distributions
        recorded = summary["checks"][c.check.class_name]
        assert c.stats["default"]["avg_violation"] == recorded["default"]["avg_violation"]
        assert (
            len(c.violations["default"])
            == recorded["scored"]
            == len(lines(data["tuples"] / f"{c.check.class_name}.jsonl"))
        )
        assert f"{recorded['default']['avg_violation']:.4f}" in text
        assert len(c.worst) <= 2
        scored = lines(data["tuples"] / f"{c.check.class_name}.jsonl")
        largest = sorted((obj["violation_data"]["default"]["violation"] for obj in scored), reverse=True)
        assert [w.profit for w in c.worst] == [v for v in largest[:2] if v > 0]
        for w in c.worst:  # written out: titles, forecasts and the arbitrageur's prices from that line
            line = scored[[obj["violation_data"]["default"]["violation"] for obj in scored].index(w.profit)]
            prices = line["violation_data"]["default"]["arbitrage_prices"]
            for row in w.rows:
                assert row.title == line["line"][row.field]["question"]["title"]
                assert html.escape(row.title) in page
                assert row.prob == line["line"][row.field]["forecast"]["prob"]
                assert row.price == pytest.approx(prices[row.field])
                assert f"{row.price:.3f}" in text
            assert f"{w.profit:.4f}" in text
    assert 'id="comparison"' not in page  # one run: no comparison section


def test_ground_truth_run_shows_brier_log_score_reliability_and_murphy(data, tmp_path):
    report = make_report([data["gt"]], tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    rows = lines(data["gt"] / "ground_truth_results.jsonl")
    p = np.array([r["prob"] for r in rows])
    y = np.array([float(r["resolution"]) for r in rows])
    acc = report.runs[0].accuracy
    assert acc is not None and acc.n == len(rows) == 40
    assert acc.brier == pytest.approx(np.mean((p - y) ** 2))
    assert acc.log_bits == pytest.approx(np.mean([r["log_score"] for r in rows]))  # the stored bits
    assert acc.brier_ci[0] <= acc.brier <= acc.brier_ci[1]
    m = acc.murphy
    assert m.reliability - m.resolution + m.uncertainty == pytest.approx(acc.brier)  # exact: grouped by value
    assert acc.calibration.count.sum() == len(rows)
    assert acc.calibration_error == pytest.approx(proper.expected_calibration_error(p, y, 10))
    text = text_of(page)
    assert f"{acc.brier:.4f}" in text and f"{m.reliability:.4f}" in text
    assert "Reliability diagram" in page and 'data-figure="run1_reliability"' in page
    assert "No run among the inputs holds consistency results" in text


def test_score_output_shows_the_unscorable_line_with_file_and_line(data, tmp_path):
    report = make_report([data["scored"]], tmp_path / "r.html")
    text = text_of((tmp_path / "r.html").read_text())
    run = report.runs[0]
    assert run.source == "cc score output" and run.n_unscorable >= 1
    assert re.search(r"NegChecker\.jsonl:4: [^ ]*: ", text)  # file:line: field: reason
    neg = next(c for c in run.checks if c.check.name == "NEGATION")
    assert neg.unscorable == 1 and neg.scored == 3


def test_what_the_page_cannot_show_is_cut_and_the_page_says_so(tmp_path):
    source = sample_dir() / "forecasts" / "NegChecker.jsonl"
    good = source.read_text().splitlines()
    bad = '{"line": {"P": {"question": {"id": "x", "title": "t"}, "forecast": {"prob": 2}}}}'
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "NegChecker.jsonl").write_text("\n".join(good * 10 + [bad] * 150) + "\n")
    write_report(score_path(tmp_path / "in"), tmp_path / "scored")
    report = make_report([tmp_path / "scored"], tmp_path / "r.html", top=4)
    page = (tmp_path / "r.html").read_text()
    run = report.runs[0]
    assert run.n_unscorable == 150 and len(run.unscorable) == 100
    assert "Showing the first 100 of 150 unscorable lines" in page
    assert len(run.checks[0].worst) == 4 and len(run.checks[0].violations["default"]) == 30
    assert 'data-sampled="true">The page shows at most 4 tuple(s) per check (4 of 30 scored tuples)' in page


def test_bundled_sample_forecasts_are_scored_like_cc_score(tmp_path):
    report = make_report([sample_dir() / "forecasts"], tmp_path / "r.html")
    expected = score_path(sample_dir() / "forecasts")
    for got, want in zip(report.runs[0].checks, expected.files, strict=True):
        assert got.stats["default"] == want.stats()["default"].model_dump()
        np.testing.assert_array_equal(got.violations["frequentist"], want.scores.frequentist)


@needs_reference
def test_published_directories_pair_into_one_forecaster(tmp_path):
    report = make_report([FORECASTS, GROUND_TRUTH_RUN], tmp_path / "r.html", png_dir=tmp_path / "png")
    page = (tmp_path / "r.html").read_text()
    forecasts, truth = report.runs
    assert forecasts.source == "published forecasts" and truth.source == "published ground truth"
    assert same_forecaster(forecasts.identity, truth.identity)  # same class and configuration: one forecaster
    assert len(forecasts.checks) == 10 and sum(c.scored for c in forecasts.checks) == 2000
    published = json.loads((GROUND_TRUTH_RUN / "ground_truth_summary.json").read_text())
    assert truth.accuracy is not None and truth.accuracy.n == published["total_questions"]
    assert round(truth.accuracy.brier, 3) == published["avg_brier_score"]
    assert "gpt-4o-mini-2024-07-18" in page
    assert page.count('class="leaderboard"') == 1 and "need at least 3 forecasters" in page
    for c in forecasts.checks:
        assert all(r.price is not None and 0 < r.price < 1 for w in c.worst for r in w.rows)


def test_mix_of_runs_compares_and_correlates_with_the_correlate_code(data, tmp_path):
    names = [f"c{p}" for p in CONSTANTS] + [f"g{p}" for p in CONSTANTS]
    paths = [data["tuples"], data["scored"], *(data[n] for n in names)]
    report = make_report(paths, tmp_path / "r.html", png_dir=tmp_path / "png")
    page = (tmp_path / "r.html").read_text()
    assert all(f'data-section="{s}"' in page for s in SECTIONS)
    # Each constant forecaster's tuple run and ground-truth run pair by configuration.
    constants = [r for r in report.runs if r.info.get("forecaster", "").startswith("constant")]
    assert len({r.identity.recorded for r in constants}) == len(CONSTANTS)
    rows = compare(report.runs).entries
    assert len([e for e in rows if e.name.startswith("Constant") and e.consistency and e.accuracy]) == len(CONSTANTS)
    # The correlation, recomputed by hand from the files: per-forecaster mean arbitrage violation vs Brier.
    xs, ys = [], []
    for p in CONSTANTS:
        summary = json.loads((data[f"c{p}"] / "summary.json").read_text())
        xs.append(np.mean([c["default"]["avg_violation"] for c in summary["checks"].values()]))
        gt = lines(data[f"g{p}"] / "ground_truth_results.jsonl")
        ys.append(np.mean([r["brier_score"] for r in gt]))
    assert all(b <= 0.25 for b in ys)
    r = float(np.corrcoef(xs, ys)[0, 1])
    assert f"{r:+.2f}" in text_of(page)
    assert 'data-figure="versus_default"' in page and 'data-figure="checks_by_run"' in page
    # --png: every figure of the page as PNG and SVG.
    figures = re.findall(r'data-figure="([^"]+)"', page)
    assert len(figures) >= 8
    for name in figures:
        assert (tmp_path / "png" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert "<svg" in (tmp_path / "png" / f"{name}.svg").read_text()
    # Self-contained: nothing to fetch (links are in-page anchors; images are inline SVG).
    assert not re.search(r'(?:src|href)="(?!#|data:)', page)
    assert "<script" not in page


def test_cli_writes_the_report_and_names_a_bad_path(data, tmp_path):
    target = tmp_path / "out" / "r.html"
    done = subprocess.run(
        [
            str(CC),
            "report",
            f"mine={data['tuples']}",
            str(data["gt"]),
            "--out",
            str(target),
            "--top",
            "1",
            "--title",
            "My <report>",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "300"},
    )
    assert done.returncode == 0, done.stderr
    assert "mine: cc evaluate run (tuples)" in done.stdout and "failed question(s)" in done.stdout
    page = target.read_text()
    assert "<title>My &lt;report&gt;</title>" in page
    parent = tmp_path / "runs"  # a directory of runs stands for each of them
    parent.mkdir()
    for n in ("c0.3", "g0.3"):
        shutil.copytree(data[n], parent / n)
    assert [r.path.name for r in make_report([parent], tmp_path / "p.html").runs] == ["c0.3", "g0.3"]
    bad = subprocess.run(
        [str(CC), "report", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "300"},
    )
    assert bad.returncode == 2 and "nope: no such file or directory" in bad.stderr
    with pytest.raises(ReportInputError, match="not a run directory"):
        make_report([tmp_path / "out"], tmp_path / "x.html")


# ------------------------------------------------------------------------ in a real browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.fixture(scope="module")
def browser():
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("Chromium or chromedriver is not installed (Debian: apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(120)
    yield driver
    driver.quit()


def _not_blank(png: bytes) -> float:
    import io

    from PIL import Image

    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=float)
    return float(pixels.std())


def test_the_report_opens_in_chromium_complete_and_readable(data, browser, tmp_path):
    from selenium.webdriver.common.by import By

    names = [f"c{p}" for p in CONSTANTS] + [f"g{p}" for p in CONSTANTS]
    target = tmp_path / "r.html"
    make_report([data["tuples"], data["gt"], data["scored"], *(data[n] for n in names)], target)
    browser.set_window_size(1280, 900)
    browser.get(target.as_uri())
    assert browser.execute_script("return document.readyState") == "complete"
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert not errors, errors
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0  # fetched nothing
    sections = [s.get_attribute("id") for s in browser.find_elements(By.CSS_SELECTOR, "section[data-section]")]
    assert sections == SECTIONS
    for sid in SECTIONS:
        assert browser.find_element(By.CSS_SELECTOR, f'nav a[href="#{sid}"]').is_displayed()
    figures = browser.find_elements(By.CSS_SELECTOR, "figure[data-figure]")
    names_shown = {f.get_attribute("data-figure") for f in figures}
    assert {
        "run1_violations",
        "run2_reliability",
        "checks_by_run",
        "versus_default",
        "versus_frequentist",
    } <= names_shown
    for fig in figures:
        svg = fig.find_element(By.TAG_NAME, "svg")
        assert svg.size["width"] > 300 and svg.size["height"] > 100, fig.get_attribute("data-figure")
        assert fig.find_elements(By.CSS_SELECTOR, "svg text, svg path")  # drawn, not an empty box
    assert browser.find_elements(By.CSS_SELECTOR, "details.failures li")  # failures with reasons
    assert browser.find_elements(By.CSS_SELECTOR, "details.unscorable li")
    worst = browser.find_elements(By.CSS_SELECTOR, "details.worst")
    assert worst
    worst[0].click()  # opens: the tuple's questions become visible
    assert worst[0].find_element(By.CSS_SELECTOR, "table.tuple").is_displayed()
    assert browser.find_element(By.CSS_SELECTOR, "table.leaderboard").is_displayed()
    shot = browser.get_screenshot_as_png()
    assert _not_blank(shot) > 20
    for width in (1280, 390):  # desktop and a phone: no sideways scrolling of the page, text not tiny
        metrics = {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600}
        browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
        browser.refresh()
        inner = browser.execute_script("return window.innerWidth")
        assert browser.execute_script("return document.documentElement.scrollWidth") <= inner + 1
        size = browser.execute_script("return parseFloat(getComputedStyle(document.body).fontSize)")
        assert size >= 13
        for fig in browser.find_elements(By.CSS_SELECTOR, "figure[data-figure]"):  # a wide figure scrolls inside
            assert fig.size["width"] <= inner
            assert fig.find_element(By.TAG_NAME, "svg").size["width"] >= min(inner - 40, 640)  # never shrunk to specks
        assert _not_blank(browser.get_screenshot_as_png()) > 20


def test_arbitrage_forecaster_runs_show_violation_by_depth(tmp_path):
    runs = []
    for depth in (1, 2):
        options = {"base": "uniform", "depth": str(depth), "checks": "neg", "instantiator": "template"}
        out = tmp_path / f"d{depth}"
        evaluate("arbitrage", checks=["neg", "para"], limit=3, forecaster_options=options, out=out)
        runs.append(out)
    report = make_report([*runs, sample_dir() / "forecasts"], tmp_path / "r.html", png_dir=tmp_path / "png")
    page = (tmp_path / "r.html").read_text()
    assert [r.forecaster.forecaster_class for r in report.runs[:2]] == ["ArbitrageForecaster"] * 2
    assert 'data-section="arbitrage"' in page and 'href="#arbitrage"' in page
    assert 'data-figure="arbitrage_depth_1"' in page and (tmp_path / "png" / "arbitrage_depth_1.png").exists()
    text = text_of(page)
    for depth, run in zip((1, 2), runs, strict=True):
        summary = json.loads((run / "summary.json").read_text())
        neg = summary["checks"]["NegChecker"]["default"]["avg_violation"]
        para = summary["checks"]["ParaphraseChecker"]["default"]["avg_violation"]
        assert f"{depth} {neg:.4f} {para:.4f} {(neg + para) / 2:.4f}" in text  # one row of the depth table
    single = make_report([sample_dir() / "forecasts"], tmp_path / "s.html")
    assert single.runs and 'data-section="arbitrage"' not in (tmp_path / "s.html").read_text()
