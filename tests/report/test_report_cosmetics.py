"""The report's figures and tables show what they hold: box-plot markers at the maximum not cut by the frame, the
reliability legend off the plotted points, a zero bar visibly zero, and the comparison table fitting a 1,400 px window
(checked in headless Chromium, as tests/report/test_report.py does)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from consistency.evaluation import evaluate
from consistency.evaluation.scoring import score_path, write_report
from consistency.report import figures, make_report
from consistency.report.gather import accuracy, read_run
from tests.support.paper_download import MODELS, build, truth_name, tuples_name


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("cosmetics")
    for p in ("0.5", "0.3"):  # constant 0.5 is exactly consistent on NEGATION: a mean violation of 0
        evaluate("constant", checks=["neg", "cond"], limit=4, forecaster_options={"p": p}, out=root / f"c{p}")
    return root, [read_run(root / f"c{p}") for p in ("0.5", "0.3")]


def test_box_plot_markers_at_the_maximum_are_inside_the_axes(runs):
    _, (_, run) = runs
    fig = figures.violations(run.checks)
    for ax in fig.axes:
        right = ax.get_xlim()[1]
        drawn = [line for line in ax.lines if len(line.get_xdata())]
        assert drawn
        assert max(float(np.max(line.get_xdata())) for line in drawn) < right
        assert not any(line.get_clip_on() for line in drawn if line.get_marker() == "D")


def test_the_reliability_legend_covers_no_bin(tmp_path):
    p = np.array([0.05] * 6 + [0.5] * 10 + [0.95] * 6)
    y = np.array([1.0] * 6 + [1.0, 0.0] * 5 + [0.0] * 6)  # the extreme bins observed at 1.0 and 0.0
    fig = figures.reliability(accuracy(p, y), "extremes")
    FigureCanvasAgg(fig).draw()
    top = fig.axes[0]
    legend = top.get_legend().get_window_extent()
    for x, yv in ((0.05, 1.0), (0.95, 0.0), (0.5, 0.5)):
        px, py = top.transData.transform((x, yv))
        assert not (legend.x0 - 6 <= px <= legend.x1 + 6 and legend.y0 - 6 <= py <= legend.y1 + 6), (x, yv)
    title = top.title.get_window_extent()
    assert not legend.overlaps(title)


def test_a_zero_bar_is_drawn_as_zero(runs):
    _, both = runs
    fig = figures.checks_by_run(both)
    ax = fig.axes[0]
    zero_run = both[0]
    assert {c.check.name: c.stats["default"]["avg_violation"] for c in zero_run.checks}["NEGATION"] == 0
    labels = [t for t in ax.texts if t.get_text() == "0"]
    assert labels, "no label on the zero bar"
    assert ax.collections, "no mark on the zero bar"


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


def test_the_comparison_table_fits_a_1400_px_window(tmp_path):
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("Chromium or chromedriver is not installed (Debian: apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    forecasts = build(tmp_path / "forecasts")  # the paper's layout and long names
    inputs = []
    for model in MODELS:
        scored = tmp_path / "scored" / tuples_name(model, "scraped")
        write_report(score_path(forecasts / tuples_name(model, "scraped")), scored)
        inputs += [scored, forecasts / truth_name(model, "scraped")]
    page = tmp_path / "r.html"
    make_report(inputs, page)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars"):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        driver.set_window_size(1400, 900)
        driver.get(page.as_uri())
        widths = driver.execute_script(
            "return [...document.querySelectorAll('#comparison .scroll')]"
            ".map(e => [e.firstElementChild.className, e.scrollWidth, e.clientWidth])"
        )
    finally:
        driver.quit()
    assert widths and any(cls == "leaderboard" for cls, _, _ in widths)
    for cls, scroll, client in widths:
        assert scroll <= client, f"the {cls} table scrolls sideways: {scroll} px in {client} px"
