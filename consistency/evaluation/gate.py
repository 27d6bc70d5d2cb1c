"""The gates of a run, in one place for ``cc evaluate``, the pytest plugin and the Python API: a mean arbitrage
violation within a limit (``--max-violation``, :func:`assert_consistent`), and failed questions within a
threshold (``--fail-on-error``).

A limit is checked before it is used: NaN compares false with everything, so ``violation > nan``
would pass every forecaster, and an infinite limit passes everything too. Both are refused, as is a
negative one (no violation is below 0): a gate that cannot fail is a defect, not a setting.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError, RunFailed
from ..forecasters import Forecaster
from ..store.records import truth_summary_of
from .asking import RunOptions
from .diff import read_run_scores
from .runner import EvaluationResult, evaluate
from .scoring import ScoreReport


class LimitError(InputError):
    """A gate's limit that is not a usable number; one sentence naming the option."""


def checked_limit(name: str, value: float, *, at_least: float = 0.0) -> float:
    """``value`` when it is a finite number of at least ``at_least``; else a :class:`LimitError` naming ``name``."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise LimitError(f"{name} must be a number, got {value!r}") from None
    if isinstance(value, bool) or not math.isfinite(number):
        raise LimitError(f"{name} must be a finite number, got {value!r}: a gate with it could never fail")
    if number < at_least:
        raise LimitError(f"{name} must be at least {at_least:g}, got {value!r}")
    return number


def over_limit(
    report: ScoreReport, limit: float, *, per_check: bool = False, metric: str = "default"
) -> list[tuple[str, float]]:
    """What exceeds ``limit``: ``[("overall", mean)]`` for the mean over checks (each check weighs the
    same, as in the run's aggregate), or each check whose own mean is above it with ``per_check``. A mean
    that is not a number (NaN) is over any limit: it cannot be shown to be within it."""
    limit = checked_limit("max_violation", limit)
    if per_check:
        out = []
        for f in report.files:
            stats = f.stats()[metric]
            if stats.num_samples and not stats.avg_violation <= limit:
                out.append((f.check.name, float(stats.avg_violation)))
        return out
    mean = report.aggregate()[metric]["avg_violation"]
    return [("overall", float(mean))] if mean is not None and not mean <= limit else []


def too_many_failures(failed: int, total: int, limit: float) -> bool:
    """Like inspect's ``--fail-on-error``: a limit below 1 is a fraction of the items, else a count."""
    if limit < 1:
        return total > 0 and failed / total > limit
    return failed > limit


def failed_gates(
    result: EvaluationResult,
    *,
    fail_on_error: float | None = None,
    max_violation: float | None = None,
    per_check: bool = False,
) -> list[str]:
    """Why a finished run fails its gates, one sentence each (empty: it passes): more failed questions than
    ``fail_on_error``, no forecast at all, a ground-truth run with nothing resolved to score, or a mean
    violation over ``max_violation``. The run directory is written either way."""
    record = result.meta
    failed, total = len(result.failures), record.questions or 0
    if fail_on_error is not None and too_many_failures(failed, total, checked_limit("--fail-on-error", fail_on_error)):
        return [f"{failed} failed question(s) exceed --fail-on-error {fail_on_error:g}"]
    if total and failed == total:  # not "a few failed items": nothing at all to score
        return ["no question got a forecast"]
    summary = truth_summary_of(record) if result.report is None else None
    if summary is not None and total and not summary.scored and summary.unresolved:
        return [
            f"nothing scored: none of the {summary.unresolved} answered question(s) has a resolution; "
            "a ground-truth run scores resolved questions only (resolve them with cc questions resolve)"
        ]
    if max_violation is None or result.report is None:
        return []
    return [
        f"mean arbitrage violation of {'the mean over checks' if name == 'overall' else name} {value:.4f} > "
        f"{max_violation:g}"
        for name, value in over_limit(result.report, max_violation, per_check=per_check)
    ]


class InconsistentForecaster(RunFailed, AssertionError):
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
    question is asked (:class:`LimitError`); a run in which no tuple could be
    scored fails the gate (there is nothing to show consistent).
    """
    max_violation = checked_limit("max_violation", max_violation)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"n must be a whole number of tuples per check, at least 1, got {n!r}")
    target = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="consistency-gate-"))
    run = target / "run"
    result = evaluate(forecaster, tuples=tuples, checks=checks, limit=n, seed=seed, out=run, options=options)
    if result.report is None:  # pragma: no cover - evaluate always scores tuples
        raise RunFailed("no scores")
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
