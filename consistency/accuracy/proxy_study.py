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
from .settings import Proxying
from .table import COLUMNS, ForecastTable, load_table
from .versus import Correlation


@dataclass(frozen=True)
class ProxyStudy:
    """The summary (``cc proxy --json``), and how many repeated forecasts the duplicates policy merged."""

    summary: dict[str, Any]
    duplicates: int

    def tables(self) -> list[tuple[str, tuple[str, ...], list[tuple[object, ...]]]]:
        """The summary as tables (title, columns, rows): the losses per forecaster and batch (forecaster and
        batch first), the correlations per aggregator, and, with batches in time order, the next batch's."""
        s = self.summary
        loss, methods, pairs, c = s["loss"], list(s["correlations"]), s["forecasters"], s["correlations"]
        scaled = "within-batch z-scores" if s["zscore"] else "raw scores"
        tables = [
            (f"Mean {loss} loss and proxy score per forecaster and batch (lower is better)",
             ("forecaster", "batch", "questions", loss, *methods),
             [(r["forecaster"], str(r["batch"]), r["questions"], f"{r['truth']:.4f}",
               *(f"{r['proxy'][m]:.4f}" for m in methods)) for r in pairs]),
            (f"Proxy ({s['variant']}) versus {loss} over (forecaster, batch) pairs, {scaled} (95% bootstrap CI)",
             ("aggregator", "Pearson r", "Spearman ρ", "pairs"),
             [(m, _interval(c[m]["pearson"]), _interval(c[m]["spearman"]), c[m]["pearson"]["n"]) for m in methods]),
        ]  # fmt: skip
        ahead = s["next_batch"]
        if ahead is not None:
            rows = [(f"{loss} (baseline)", _interval(ahead["truth"]), ahead["truth"]["n"])]
            rows += [(f"proxy {m}", _interval(ahead[m]), ahead[m]["n"]) for m in methods]
            title = f"Predicting the next batch's {loss}: Pearson r of a score on batch T with {loss} on T+1"
            tables.append((title, ("score on batch T", "r", "forecasters × pairs"), rows))
        return tables

    def counts(self) -> str:
        pairs = self.summary["forecasters"]
        n_forecasters = len({r["forecaster"] for r in pairs})
        return f"{n_forecasters} forecasters, {len(self.summary['batches'])} batch(es), {len(pairs)} pairs"


def _interval(c: dict[str, Any]) -> str:
    """A correlation with its interval, ``+0.512 [+0.10, +0.80]`` (``-``: none)."""
    if c["r"] is None:
        return "-"
    ci = "" if c["low"] is None else f" [{c['low']:+.2f}, {c['high']:+.2f}]"
    return f"{c['r']:+.3f}{ci}"


#: Where the batches come from: the table's batch column, each path, the paper's directory names, or none.
BATCHES = ("batch", "source", "split", "none")


def proxy_study(
    paths: Sequence[Path], settings: Proxying | None = None, *, skipped: list[LineError] | None = None
) -> ProxyStudy:
    """Per aggregator, Pearson and Spearman correlations of proxy scores with the ``loss`` over (forecaster,
    batch) pairs (``zscore``: standardised within each batch first, as the paper does), the next batch's loss
    predicted from each score (in the order ``future``, or sorted when there are two batches or more), and
    each pair's scores; ``loo`` leaves each forecaster out of its own aggregate. ``settings``: ``cc proxy``'s
    options."""
    from .proxy import batch_scores

    o = settings or Proxying()
    aggregators, batches = o.aggregator_list, o.batches
    unknown = sorted(set(aggregators) - set(AGGREGATORS))
    if unknown or not aggregators:
        raise ScoreInputError(f"--aggregators: unknown {', '.join(unknown)}; choose from {', '.join(AGGREGATORS)}")
    if batches not in BATCHES:
        raise ScoreInputError(f"--batches {batches!r}: choose one of {', '.join(BATCHES)}")
    table = _load(list(paths), batches, o.duplicates, skipped)
    F, forecasters, labels, y = _arrays(table)
    if len(forecasters) < 2:
        raise ScoreInputError(
            f"proxy scores compare forecasters with each other: need at least two, got {', '.join(forecasters)}"
        )
    params = {"extremized_mean": {"alpha": o.extremize}, "logit_pool": {"d": o.logit_d}}
    raw = batch_scores(F, y, labels, list(aggregators), loo=o.loo, loss=o.loss, params=params)
    scores = raw.zscored() if o.zscore else raw
    correlations = scores.correlations(bootstrap=o.bootstrap, seed=o.seed)
    future = o.future_list
    ahead = scores.future(future, bootstrap=o.bootstrap, seed=o.seed) if future or len(raw.batches) > 1 else None
    summary = {
        "variant": "leave-one-out" if o.loo else "with self",
        "zscore": o.zscore,
        "loss": o.loss,
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
