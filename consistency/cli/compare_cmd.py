"""``cc compare A B``: head-to-head peer score with a weighted t-test and a weighted bootstrap."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ..accuracy.ranking import compare as compare_two
from .console import escape, out
from .options import AsJson, BootstrapSeed
from .table_options import SOURCES_HELP, AsOf, Duplicates, load_forecasts


def compare(
    a: Annotated[str, typer.Argument(help="First forecaster.")],
    b: Annotated[str, typer.Argument(help="Second forecaster.")],
    paths: Annotated[list[Path], typer.Argument(help=SOURCES_HELP)],
    resamples: Annotated[int, typer.Option(min=1, help="Bootstrap resamples.")] = 10_000,
    seed: BootstrapSeed = 0,
    as_of: AsOf = None,
    duplicates: Duplicates = "error",
    as_json: AsJson = False,
) -> None:
    """Is A more accurate than B? 100·ln(p_A/p_B) on the outcome, per question both answered."""
    c = compare_two(load_forecasts(paths, duplicates), a, b, resamples=resamples, seed=seed, as_of=as_of)
    t, bs = c.t_test, c.bootstrap
    summary = {
        "a": a,
        "b": b,
        "questions": c.n_questions,
        "weighted_questions": c.weight_sum,
        "mean_score": c.mean,
        "t_test": {"t": t.t, "df": t.df, "p_value": t.p_value, "ci95": [t.ci_low, t.ci_high]},
        "bootstrap": {"ci95": [bs.ci_low, bs.ci_high], "share_positive": bs.prob_positive, "resamples": bs.resamples},
    }
    if as_json:
        out.print_json(json.dumps(summary))
        return
    verdict = "A better" if t.ci_low > 0 else "B better" if t.ci_high < 0 else "no significant difference"
    out.print(f"{escape(a)} vs {escape(b)} on {c.n_questions} questions (weighted count {c.weight_sum:g})")
    out.print(f"mean head-to-head score: {c.mean:+.2f} (positive: {escape(a)} more accurate)")
    out.print(
        f"weighted t-test: t={t.t:.2f}, df={t.df:g}, p={t.p_value:.3g}, 95% CI [{t.ci_low:+.2f}, {t.ci_high:+.2f}]"
    )
    ci = f"[{bs.ci_low:+.2f}, {bs.ci_high:+.2f}]"
    out.print(f"weighted bootstrap: 95% CI {ci}, positive in {bs.prob_positive:.1%} of resamples")
    out.print(f"verdict: {verdict}")
