"""``cc compare A B``: head-to-head peer score with a weighted t-test and a weighted bootstrap."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ..accuracy.settings import SOURCES, Comparing
from .console import escape, out
from .declared import options_from
from .options import AsJson
from .table_options import load_forecasts


@options_from(Comparing, "settings")
def compare(
    a: Annotated[str, typer.Argument(help="First forecaster.")],
    b: Annotated[str, typer.Argument(help="Second forecaster.")],
    paths: Annotated[list[Path], typer.Argument(help=SOURCES)],
    as_json: AsJson = False,
    *,
    settings: Comparing,
) -> None:
    """Is A more accurate than B? 100·ln(p_A/p_B) on the outcome, per question both answered."""
    from ..accuracy.ranking import compare as compare_two

    c = compare_two(load_forecasts(paths, settings.duplicates), a, b, settings)
    if as_json:
        out.print_json(json.dumps(c.as_dict()))
        return
    t, bs = c.t_test, c.bootstrap
    verdict = "A better" if t.ci_low > 0 else "B better" if t.ci_high < 0 else "no significant difference"
    out.print(f"{escape(a)} vs {escape(b)} on {c.n_questions} questions (weighted count {c.weight_sum:g})")
    out.print(f"mean head-to-head score: {c.mean:+.2f} (positive: {escape(a)} more accurate)")
    out.print(
        f"weighted t-test: t={t.t:.2f}, df={t.df:g}, p={t.p_value:.3g}, 95% CI [{t.ci_low:+.2f}, {t.ci_high:+.2f}]"
    )
    ci = f"[{bs.ci_low:+.2f}, {bs.ci_high:+.2f}]"
    out.print(f"weighted bootstrap: 95% CI {ci}, positive in {bs.prob_positive:.1%} of resamples")
    out.print(f"verdict: {verdict}")
