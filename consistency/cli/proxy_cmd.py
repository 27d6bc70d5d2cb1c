"""``cc proxy``: the proxy-scoring paper's main table: does scoring against the crowd rank forecasters
like the Brier score does, per aggregator; and does it predict the next batch's Brier score?"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .bounds import positive
from .console import err, escape, out
from .table_options import SOURCES_HELP, Duplicates

if TYPE_CHECKING:
    from ..accuracy.proxy import BatchScores
    from ..accuracy.table import ForecastTable
    from ..accuracy.versus import Correlation

AGGREGATORS = ("mean", "median", "extremized_mean", "logit_pool")
BATCHES = ("batch", "source", "split", "none")


def proxy(
    paths: Annotated[list[Path], typer.Argument(help=SOURCES_HELP)],
    aggregators: Annotated[
        str, typer.Option("--aggregators", "-a", help=f"Comma-separated, from: {', '.join(AGGREGATORS)}.")
    ] = ",".join(AGGREGATORS),
    loo: Annotated[
        bool,
        typer.Option(
            "--loo/--with-self",
            help="Leave each forecaster out of its own aggregate (proper), or include it (the paper's main table).",
        ),
    ] = True,
    batches: Annotated[
        str,
        typer.Option(
            "--batches",
            help="Where batches come from: `batch` (the table's batch column), `source` (each PATH is a batch), "
            "`split` (the paper's directory names: forecaster_<split>, e.g. _20240501_20240815), `none` (one batch).",
        ),
    ] = "batch",
    zscore: Annotated[
        bool, typer.Option("--zscore/--raw", help="Standardise scores within each batch before pooling (the paper).")
    ] = True,
    extremize: Annotated[float, typer.Option("--extremize", min=0, help="α of the extremized mean.")] = 2.0,
    logit_d: Annotated[
        float, typer.Option("--logit-d", min=0, callback=positive, help="d of the logit pool.")
    ] = math.sqrt(3.0),
    loss: Annotated[str, typer.Option(help="Ground-truth loss: brier, log, absolute or zero_one.")] = "brier",
    future: Annotated[
        str | None,
        typer.Option(
            help="Batches in time order (comma-separated) for predicting the next batch; default: sorted, "
            "whenever there are two or more."
        ),
    ] = None,
    duplicates: Duplicates = "error",
    bootstrap: Annotated[int, typer.Option(min=1, help="Bootstrap resamples for the intervals.")] = 1000,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the bootstrap.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Proxy scores versus the Brier score across forecasters, per aggregator (Pearson and Spearman)."""
    from ..accuracy.inputs import ScoreInputError
    from ..accuracy.proxy import batch_scores

    methods = [m.strip() for m in aggregators.split(",") if m.strip()]
    unknown = sorted(set(methods) - set(AGGREGATORS))
    if unknown or not methods:
        raise ScoreInputError(f"--aggregators: unknown {', '.join(unknown)}; choose from {', '.join(AGGREGATORS)}")
    if batches not in BATCHES:
        raise ScoreInputError(f"--batches {batches!r}: choose one of {', '.join(BATCHES)}")
    table = _load(paths, batches, duplicates)
    F, forecasters, labels, y = _arrays(table)
    if len(forecasters) < 2:
        raise ScoreInputError(
            f"proxy scores compare forecasters with each other: need at least two, got {', '.join(forecasters)}"
        )
    params = {"extremized_mean": {"alpha": extremize}, "logit_pool": {"d": logit_d}}
    raw = batch_scores(F, y, labels, methods, loo=loo, loss=loss, params=params)
    scores = raw.zscored() if zscore else raw
    correlations = scores.correlations(bootstrap=bootstrap, seed=seed)
    order = [b.strip() for b in future.split(",")] if future else None
    ahead = scores.future(order, bootstrap=bootstrap, seed=seed) if order or len(raw.batches) > 1 else None
    variant = "leave-one-out" if loo else "with self"
    summary = _summary(raw, forecasters, correlations, ahead, variant=variant, zscore=zscore, loss=loss)
    if as_json:
        out.print_json(json.dumps(summary))
        return
    _print(summary, raw, forecasters, loss)


def _load(paths: list[Path], batches: str, duplicates: str) -> ForecastTable:
    """One table; with ``--batches source`` each PATH's rows form a batch named after the PATH."""
    import numpy as np

    from ..accuracy.table import COLUMNS, ForecastTable
    from .table_options import load_forecasts

    if batches != "source":
        table = load_forecasts(paths, duplicates)
        if batches == "none":
            table.batch[:] = ""
        elif batches == "split":
            from ..accuracy.pairing import split_name

            names = {n: split_name(n) for n in set(table.forecaster.tolist())}
            table.batch = np.array([names[n][1] for n in table.forecaster], dtype=object)
            table.forecaster = np.array([names[n][0] for n in table.forecaster], dtype=object)
        return table
    parts = []
    for path in paths:
        part = load_forecasts([path], duplicates)
        part.batch[:] = path.name or str(path)
        parts.append(part)
    return ForecastTable(
        **{c: np.concatenate([getattr(t, c) for t in parts]) for c in COLUMNS},
        sources=[str(p) for p in paths],
        duplicates=sum(t.duplicates for t in parts),
    )


def _arrays(table: ForecastTable) -> tuple[Any, list[str], Any, Any]:
    """The forecast matrix, forecaster names, per-forecast batch labels and per-question resolutions."""
    import numpy as np

    from ..accuracy.inputs import ScoreInputError

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


def _summary(
    raw: BatchScores,
    forecasters: list[str],
    correlations: dict[str, tuple[Correlation, Correlation]],
    ahead: dict[str, Correlation] | None,
    **settings: object,
) -> dict[str, Any]:
    rows = []
    for i, name in enumerate(forecasters):
        for b, batch in enumerate(raw.batches):
            if raw.n[i, b] == 0 or math.isnan(raw.truth[i, b]):
                continue
            rows.append(
                {
                    "forecaster": name,
                    "batch": batch,
                    "questions": int(raw.n[i, b]),
                    "truth": float(raw.truth[i, b]),
                    "proxy": {m: float(v[i, b]) for m, v in raw.proxy.items()},
                }
            )
    return {
        **settings,
        "batches": list(raw.batches),
        "correlations": {m: {"pearson": _corr(p), "spearman": _corr(s)} for m, (p, s) in correlations.items()},
        "next_batch": None if ahead is None else {k: _corr(c) for k, c in ahead.items()},
        "forecasters": rows,
    }


def _interval(c: dict[str, Any]) -> str:
    if c["r"] is None:
        return "-"
    ci = "" if c["low"] is None else f" [{c['low']:+.2f}, {c['high']:+.2f}]"
    return f"{c['r']:+.3f}{ci}"


def _print(summary: dict[str, Any], raw: BatchScores, forecasters: list[str], loss: str) -> None:
    from rich.table import Table

    methods = list(summary["correlations"])
    per = Table(title=f"Mean {loss} loss and proxy score per forecaster and batch (lower is better)")
    for col in ("forecaster", "batch", "questions", loss, *methods):
        per.add_column(col, justify="left" if col in ("forecaster", "batch") else "right")
    for row in summary["forecasters"]:
        per.add_row(
            escape(row["forecaster"]),
            escape(str(row["batch"])),
            str(row["questions"]),
            f"{row['truth']:.4f}",
            *(f"{row['proxy'][m]:.4f}" for m in methods),
        )
    out.print(per)
    scaled = "within-batch z-scores" if summary["zscore"] else "raw scores"
    main = Table(
        title=f"Proxy ({summary['variant']}) versus {loss} over (forecaster, batch) pairs, {scaled} (95% bootstrap CI)"
    )
    for col in ("aggregator", "Pearson r", "Spearman ρ", "pairs"):
        main.add_column(col, justify="left" if col == "aggregator" else "right")
    for m in methods:
        c = summary["correlations"][m]
        main.add_row(m, _interval(c["pearson"]), _interval(c["spearman"]), str(c["pearson"]["n"]))
    out.print(main)
    ahead = summary["next_batch"]
    if ahead is not None:
        nxt = Table(title=f"Predicting the next batch's {loss}: Pearson r of a score on batch T with {loss} on T+1")
        for col in ("score on batch T", "r", "forecasters × pairs"):
            nxt.add_column(col, justify="left" if col == "score on batch T" else "right")
        nxt.add_row(f"{loss} (baseline)", _interval(ahead["truth"]), str(ahead["truth"]["n"]))
        for m in methods:
            nxt.add_row(f"proxy {m}", _interval(ahead[m]), str(ahead[m]["n"]))
        out.print(nxt)
    n_forecasters = len({r["forecaster"] for r in summary["forecasters"]})
    err.print(f"{n_forecasters} forecasters, {len(raw.batches)} batch(es), {len(summary['forecasters'])} pairs")
