"""Scored questions of ground-truth results, and ``cc diff`` as rows."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from ..store.layout import GROUND_TRUTH
from .frame import WHO, AnalysisError, Backend, Column, Paths, build, check_backend, concat, label, read_runs

GROUND_TRUTH_COLUMNS = (
    *WHO,
    Column("line", "int64", f"The line in {GROUND_TRUTH}."),
    Column("question_id", "string", "The question's id."),
    Column("title", "string", "The question's title."),
    Column("prob", "float64", "The forecast."),
    Column("resolution", "float64", "1.0 or 0.0; NaN when unresolved."),
    Column("brier", "float64", "(prob - resolution)²; NaN when unresolved."),
)
DIFF_COLUMNS = (
    Column("group", "string", "A check (ground truth: a question source), or overall."),
    Column("n", "int64", "Items both runs share."),
    Column("mean_a", "float64", "A's mean score on them."),
    Column("mean_b", "float64", "B's mean score on them."),
    Column("diff", "float64", "B − A: positive when B is worse."),
    Column("ci_low", "float64", "Bootstrap interval of diff, low end."),
    Column("ci_high", "float64", "Bootstrap interval of diff, high end."),
    Column("better", "int64", "Items where B scores better."),
    Column("worse", "int64", "Items where B scores worse."),
    Column("same", "int64", "Items where they tie."),
    Column("p_sign", "float64", "Sign test p-value."),
    Column("p_wilcoxon", "float64", "Wilcoxon signed-rank p-value."),
    Column("significantly_worse", "bool", "As cc diff --fail-if-worse decides it (Bonferroni per group)."),
)


def ground_truth_df(paths: Paths, *, backend: Backend = "pandas") -> Any:
    """One row per scored question of every ground-truth result (ours, or the paper's files).

    Columns: :data:`GROUND_TRUTH_COLUMNS`. Results without ground truth are skipped; none at all is an
    :class:`AnalysisError`."""
    check_backend(backend)
    parts: dict[str, list[np.ndarray]] = {c.name: [] for c in GROUND_TRUTH_COLUMNS}
    errors: list[str] = []
    found = False
    for run in read_runs(paths):
        if run.ground_truth_file is None:
            continue
        found = True
        columns = run.ground_truth()
        n = len(columns)
        for name, values in (
            ("run", np.full(n, label(run), dtype=object)),
            ("forecaster", np.full(n, run.name, dtype=object)),
            ("line", columns.line),
            ("question_id", np.asarray(columns.question_ids, dtype=object)),
            ("title", np.asarray(columns.titles, dtype=object)),
            ("prob", columns.probs),
            ("resolution", columns.resolution),
            ("brier", columns.brier),
        ):
            parts[name].append(values)
        errors += [str(e) for e in columns.errors]
    if not found:
        raise AnalysisError("no ground-truth results among the paths (cc evaluate --questions writes them)")
    kinds = {"line": np.int64, "prob": float, "resolution": float, "brier": float}
    data = {c.name: concat(parts[c.name], kinds.get(c.name, object)) for c in GROUND_TRUTH_COLUMNS}
    return build(GROUND_TRUTH_COLUMNS, data, backend, errors=errors)


def diff_df(
    a: str | Path, b: str | Path, *, metric: str = "default", backend: Backend = "pandas", **options: Any
) -> Any:
    """``cc diff A B`` as rows: one per check (ground truth: per question source) and one ``overall``.

    Columns: :data:`DIFF_COLUMNS`. ``options`` are :func:`consistency.evaluation.diff.diff_runs`'s
    (``resamples``, ``seed``, ``level``...); the notes it makes are in ``attrs["notes"]`` (pandas)."""
    from ..evaluation.diff import diff_runs

    check_backend(backend)
    result = diff_runs(a, b, metric=metric, **options)
    worse = set(result.worse())  # each group at its Bonferroni level, overall at the level
    rows = [
        {"group": name, **asdict(d), "significantly_worse": name in worse}
        for name, d in [*result.groups.items(), ("overall", result.overall)]
    ]
    data = {c.name: [r[c.name] for r in rows] for c in DIFF_COLUMNS}
    errors = [str(e) for e in (*result.a.skipped, *result.b.skipped)]
    return build(DIFF_COLUMNS, data, backend, errors=errors, notes=list(result.notes))
