"""The report's per-check bars tell a check a run did not include, and one with no scored tuple, from a mean
violation of zero: each is labelled ("not run", "none scored", "0") in the figure and listed under it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from consistency.evaluation import evaluate
from consistency.forecasters import Forecaster, ForecastError
from consistency.models import Forecast
from consistency.report import figures, make_report
from consistency.report.gather import read_run


class NoConditionals(Forecaster):
    """Answers 0.3, except that it fails every conditional question: no COND tuple can be scored."""

    async def forecast(self, question):
        if question.question_type == "conditional_binary":
            raise ForecastError("no conditionals here")
        return Forecast(prob=0.3)


@pytest.fixture(scope="module")
def run_dirs(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("gaps")
    # 0.5 is exactly coherent on NEGATION (a mean of 0); the 0.3 run never ran COND; NoConditionals ran it, scored none
    evaluate("constant", checks=["neg", "cond"], limit=3, forecaster_options={"p": "0.5"}, out=root / "half")
    evaluate("constant", checks=["neg"], limit=3, forecaster_options={"p": "0.3"}, out=root / "neg_only")
    evaluate(NoConditionals(), checks=["neg", "cond"], limit=3, out=root / "no_cond")
    return [root / "half", root / "neg_only", root / "no_cond"]


def test_gaps_name_each_missing_check_and_why(run_dirs):
    runs = [read_run(p) for p in run_dirs]
    assert figures.gaps(runs) == {
        runs[1].name: {"COND": figures.NOT_RUN},
        runs[2].name: {"COND": figures.NOT_SCORED},
    }


def test_the_figure_labels_a_missing_check_where_its_bar_would_be(run_dirs):
    runs = [read_run(p) for p in run_dirs]
    fig = figures.checks_by_run(runs)
    width = 0.8 / 3
    for ax in fig.axes[:2]:
        labels = {t.get_text(): t.get_position()[0] for t in ax.texts}
        assert labels["not run"] == pytest.approx(1.0)  # COND (x = 1), the middle run
        assert labels["none scored"] == pytest.approx(1.0 + width)  # COND, the third run
        zeros = [t for t in ax.texts if t.get_text() == "0"]
        assert len(zeros) == 1 and zeros[0].xy[0] == pytest.approx(0.0 - width)  # NEGATION of the first run
        slots = [p for p in ax.patches if str(p.get_gid()).startswith("empty-slot:")]
        assert sorted(p.get_gid() for p in slots) == ["empty-slot:none scored", "empty-slot:not run"]
        assert not any(p.get_fill() for p in slots)
    # the slots are drawn in axes units: the y range still fits the real bars only
    top = fig.axes[0].get_ylim()[1]
    assert top < 2 * max(c.stats["default"]["avg_violation"] for r in runs for c in r.checks if c.scored)


def test_the_html_lists_the_gaps_and_draws_their_labels(run_dirs, tmp_path):
    make_report([str(p) for p in run_dirs], tmp_path / "report.html")
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'data-gaps="2"' in page
    assert re.search(r'data-check="COND" data-why="not run"', page)
    assert re.search(r'data-check="COND" data-why="none scored"', page)
    section = page[page.index('id="comparison"') :]
    svg = section[section.index("<svg") : section.index("</svg>")]
    assert ">not run<" in svg and ">none scored<" in svg  # text kept as text in the inline SVG


def test_runs_of_the_same_checks_have_no_gaps(run_dirs):
    runs = [read_run(run_dirs[0]), read_run(run_dirs[0])]
    assert figures.gaps(runs) == {}
    assert not [t for t in figures.checks_by_run(runs).axes[0].texts if t.get_text() in ("not run", "none scored")]
