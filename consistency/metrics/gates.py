"""Consistency gates: is a run's mean arbitrage violation within a limit (for CI and tests)?"""

from __future__ import annotations

from .forecast_files import ScoreReport


def over_limit(
    report: ScoreReport, limit: float, *, per_check: bool = False, metric: str = "default"
) -> list[tuple[str, float]]:
    """What exceeds ``limit``: ``[("overall", mean)]`` for the mean over checks (each check weighs the
    same, as in the run's aggregate), or each check whose own mean is above it with ``per_check``."""
    if per_check:
        out = []
        for f in report.files:
            stats = f.stats()[metric]
            if stats.num_samples and stats.avg_violation > limit:
                out.append((f.check.name, float(stats.avg_violation)))
        return out
    mean = report.aggregate()[metric]["avg_violation"]
    return [("overall", float(mean))] if mean is not None and mean > limit else []
