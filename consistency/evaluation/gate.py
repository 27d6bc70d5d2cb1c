"""``assert_consistent``: fail a test when a forecaster contradicts itself more than a limit allows."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError, RunFailed
from ..forecasters import Forecaster
from ..metrics.forecast_files import ScoreReport
from ..metrics.gates import checked_limit, over_limit
from ..metrics.run_diff import read_run_scores
from .asking import RunOptions
from .runner import evaluate


class InconsistentForecaster(RunFailed, AssertionError):
    """The forecaster's mean arbitrage violation is above the limit; the message shows the worst tuples."""


def assert_consistent(
    forecaster: Forecaster | str | Any,
    checks: Sequence[str] | None = None,
    n: int = 10,
    max_violation: float = 0.05,
    seed: int = 0,
    *,
    per_check: bool = False,
    top: int = 5,
    out: str | Path | None = None,
    options: RunOptions | None = None,
) -> ScoreReport:
    """Evaluate ``forecaster`` on ``n`` tuples per check of the bundled benchmark (a sample fixed by
    ``seed``; its tuples are template instantiations, so no model writes questions) and raise
    :class:`InconsistentForecaster` when the mean arbitrage violation over checks (each check with
    ``per_check``) is above ``max_violation``. Answers are cached as in any run, so an unchanged
    forecaster costs nothing to check again. Returns the scores when the gate passes.

    A limit that could never fail (NaN, infinite, negative) or ``n`` below 1 is refused before any
    question is asked (:class:`~consistency.metrics.gates.LimitError`); a run in which no tuple could be
    scored fails the gate (there is nothing to show consistent).
    """
    max_violation = checked_limit("max_violation", max_violation)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"n must be a whole number of tuples per check, at least 1, got {n!r}")
    target = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="consistency-gate-"))
    result = evaluate(forecaster, checks=checks, limit=n, seed=seed, out=target / "run", options=options)
    if result.report is None:  # pragma: no cover - evaluate always scores tuples
        raise RuntimeError("no scores")
    over = over_limit(result.report, max_violation, per_check=per_check)
    scored = result.report.aggregate()["default"]["num_samples"]
    if not over and not result.failures and scored:
        return result.report
    lines = [] if scored else ["no tuple could be scored: there is nothing to show consistent"]
    for name, value in over:
        what = "mean over checks" if name == "overall" else name
        lines.append(f"mean arbitrage violation ({what}) {value:.4f} > max_violation {max_violation:g}")
    if result.failures:
        first = result.failures[0]
        lines.append(f"{len(result.failures)} question(s) got no forecast, e.g. {first['title']!r}: {first['error']}")
    lines.append(f"worst tuples (run directory {result.run_dir}):")
    lines += worst_tuples(result.run_dir, top)
    raise InconsistentForecaster("\n".join(lines))


def worst_tuples(run_dir: Path, top: int = 5) -> list[str]:
    """The ``top`` tuples with the largest violation, each with its questions and the answers given."""
    scores = read_run_scores(run_dir)
    rows = [(float(items.score[i]), name, i) for name, items in scores.groups.items() for i in range(len(items.ids))]
    rows.sort(key=lambda r: -r[0])
    out = []
    for violation, name, i in rows[:top]:
        items = scores.groups[name]
        out.append(f"  {name} violation {violation:.4f}")
        for field, title, prob in zip(items.fields, items.titles[i], items.probs[i], strict=True):
            out.append(f"    {field} = {prob:.3f}  {title}")
    return out
