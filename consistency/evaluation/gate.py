"""``assert_consistent``: fail a test when a forecaster contradicts itself more than a limit allows."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..evaluation.diff import read_run_scores
from ..forecasters import Forecaster
from ..metrics.gates import checked_limit, over_limit
from .asking import RunOptions
from .runner import evaluate
from .scoring import ScoreReport


class InconsistentForecaster(AssertionError):
    """The forecaster's mean arbitrage violation is above the limit; the message shows the worst tuples."""


def assert_consistent(
    forecaster: Forecaster | str | Any,
    checks: Sequence[str] | None = None,
    n: int = 10,
    max_violation: float = 0.05,
    seed: int = 0,
    *,
    tuples: str | Path | None = None,
    per_check: bool = False,
    top: int = 5,
    out: str | Path | None = None,
    options: RunOptions | None = None,
) -> ScoreReport:
    """Evaluate ``forecaster`` on ``n`` tuples per check of the bundled benchmark or of ``tuples`` (a directory
    or file of tuples, e.g. :func:`~consistency.datasets.typed_benchmark_dir` ``/ "tuples"`` for the
    multiple-choice and numeric checks; a sample fixed by ``seed``; the bundled tuples are template
    instantiations, so no model writes questions) and raise
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
    run = target / "run"
    result = evaluate(forecaster, tuples=tuples, checks=checks, limit=n, seed=seed, out=run, options=options)
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
        for field, columns in _fields(items.fields):
            probs = [items.probs[i][j] for j in columns]
            title = items.titles[i][columns[0]]
            out.append(f"    {field} = {_shown(probs)}  {title}")
    return out


def _fields(columns: Sequence[str]) -> list[tuple[str, list[int]]]:
    """The check's fields and the positions of their columns (``X[0]``, ``X[1]``... are field X's)."""
    out: dict[str, list[int]] = {}
    for j, column in enumerate(columns):
        out.setdefault(column.partition("[")[0], []).append(j)
    return list(out.items())


def _shown(probs: list[float], most: int = 8) -> str:
    """A yes/no field's probability, or a categorical field's outcome probabilities (of many, where the median
    falls: a numeric field's outcomes are its grid's 202 bins in order)."""
    if len(probs) == 1:
        return f"{probs[0]:.3f}"
    if len(probs) <= most:
        return "[" + ", ".join(f"{p:.3f}" for p in probs) + "]"
    total, j = 0.0, 0
    while j < len(probs) - 1 and total + probs[j] < 0.5:
        total += probs[j]
        j += 1
    return f"{len(probs)} outcomes, the median in #{j}"
