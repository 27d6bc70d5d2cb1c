"""The proxy-scoring paper's main table from long tables (``cc proxy``): does scoring against the crowd rank
forecasters like the ground-truth loss does, per aggregator, and does it predict the next batch's loss?

:func:`proxy_study` reads the forecasts, forms the batches, scores each (forecaster, batch) with
:func:`.proxy.batch_scores` and returns one JSON-ready summary, the same for ``--json`` and the tables.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..jsonl import LineError
from .inputs import ScoreInputError
from .proxy import AGGREGATORS, BatchScores
from .table import COLUMNS, ForecastTable, load_table
from .versus import Correlation


@dataclass(frozen=True)
class ProxyStudy:
    """The summary (``cc proxy --json``), and how many repeated forecasts the duplicates policy merged."""

    summary: dict[str, Any]
    duplicates: int


#: Where the batches come from: the table's batch column, each path, the paper's directory names, or none.
BATCHES = ("batch", "source", "split", "none")


def proxy_study(
    paths: Sequence[Path],
    *,
    aggregators: Sequence[str] = tuple(AGGREGATORS),
    loo: bool = True,
    batches: str = "batch",
    zscore: bool = True,
    extremize: float = 2.0,
    logit_d: float = math.sqrt(3.0),
    loss: str = "brier",
    future: Sequence[str] | None = None,
    duplicates: str = "error",
    bootstrap: int = 1000,
    seed: int = 0,
    skipped: list[LineError] | None = None,
) -> ProxyStudy:
    """Per aggregator, Pearson and Spearman correlations of proxy scores with the ``loss`` over (forecaster,
    batch) pairs (``zscore``: standardised within each batch first, as the paper does), the next batch's loss
    predicted from each score (in the order ``future``, or sorted when there are two batches or more), and
    each pair's scores; ``loo`` leaves each forecaster out of its own aggregate."""
    from .proxy import batch_scores

    unknown = sorted(set(aggregators) - set(AGGREGATORS))
    if unknown or not aggregators:
        raise ScoreInputError(f"--aggregators: unknown {', '.join(unknown)}; choose from {', '.join(AGGREGATORS)}")
    if batches not in BATCHES:
        raise ScoreInputError(f"--batches {batches!r}: choose one of {', '.join(BATCHES)}")
    table = _load(list(paths), batches, duplicates, skipped)
    F, forecasters, labels, y = _arrays(table)
    if len(forecasters) < 2:
        raise ScoreInputError(
            f"proxy scores compare forecasters with each other: need at least two, got {', '.join(forecasters)}"
        )
    params = {"extremized_mean": {"alpha": extremize}, "logit_pool": {"d": logit_d}}
    raw = batch_scores(F, y, labels, list(aggregators), loo=loo, loss=loss, params=params)
    scores = raw.zscored() if zscore else raw
    correlations = scores.correlations(bootstrap=bootstrap, seed=seed)
    ahead = scores.future(future, bootstrap=bootstrap, seed=seed) if future or len(raw.batches) > 1 else None
    summary = {
        "variant": "leave-one-out" if loo else "with self",
        "zscore": zscore,
        "loss": loss,
        "batches": list(raw.batches),
        "correlations": {m: {"pearson": _corr(p), "spearman": _corr(s)} for m, (p, s) in correlations.items()},
        "next_batch": None if ahead is None else {k: _corr(c) for k, c in ahead.items()},
        "forecasters": _rows(raw, forecasters),
    }
    return ProxyStudy(summary, table.duplicates)


def _load(paths: list[Path], batches: str, duplicates: str, skipped: list[LineError] | None) -> ForecastTable:
    """One table; with ``source`` batches each path's rows form a batch named after the path."""
    if batches != "source":
        table = load_table(paths, duplicates, skipped)
        if batches == "none":
            table.batch[:] = ""
        elif batches == "split":
            from .pairing import split_name

            names = {n: split_name(n) for n in set(table.forecaster.tolist())}
            table.batch = np.array([names[n][1] for n in table.forecaster], dtype=object)
            table.forecaster = np.array([names[n][0] for n in table.forecaster], dtype=object)
        return table
    parts = []
    for path in paths:
        part = load_table([path], duplicates, skipped)
        part.batch[:] = path.name or str(path)
        parts.append(part)
    return ForecastTable(
        **{c: np.concatenate([getattr(t, c) for t in parts]) for c in COLUMNS},
        sources=[str(p) for p in paths],
        duplicates=sum(t.duplicates for t in parts),
    )


def _arrays(table: ForecastTable) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray]:
    """The forecast matrix, forecaster names, per-forecast batch labels and per-question resolutions."""
    f_idx, q_idx, forecasters, questions = table.codes()
    if len(set(zip(f_idx.tolist(), q_idx.tolist(), strict=True))) != len(table):
        raise ScoreInputError("a forecaster answered one question in two batches; give each batch its own questions")
    F = np.full((len(forecasters), len(questions)), np.nan)
    F[f_idx, q_idx] = table.prob
    y = np.full(len(questions), np.nan)
    y[q_idx[::-1]] = table.resolution[::-1]  # a question's first recorded resolution
    first_label = np.empty(len(questions), dtype=object)
    first_label[q_idx[::-1]] = table.batch[::-1]
    labels = np.broadcast_to(first_label, F.shape).copy()
    labels[f_idx, q_idx] = table.batch
    return F, forecasters, labels.astype(str), y


def _corr(c: Correlation) -> dict[str, float | int | None]:
    def num(v: float) -> float | None:
        return None if math.isnan(v) else v

    return {"r": num(c.r), "low": num(c.low), "high": num(c.high), "n": c.n}


def _rows(raw: BatchScores, forecasters: list[str]) -> list[dict[str, Any]]:
    """Each (forecaster, batch) with resolved questions: how many, the mean loss and each proxy score."""
    return [
        {
            "forecaster": name,
            "batch": batch,
            "questions": int(raw.n[i, b]),
            "truth": float(raw.truth[i, b]),
            "proxy": {m: float(v[i, b]) for m, v in raw.proxy.items()},
        }
        for i, name in enumerate(forecasters)
        for b, batch in enumerate(raw.batches)
        if raw.n[i, b] and not math.isnan(raw.truth[i, b])
    ]
