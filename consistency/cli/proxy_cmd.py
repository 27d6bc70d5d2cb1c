"""``cc proxy``: the proxy-scoring paper's main table: does scoring against the crowd rank forecasters
like the Brier score does, per aggregator; and does it predict the next batch's Brier score?"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer

from .bounds import positive
from .console import err, escape, out, table
from .options import AsJson, BootstrapSeed
from .table_options import SOURCES_HELP, Duplicates, merged, skipping

#: Kept in step with ``accuracy.aggregates.AGGREGATORS`` (checked by a test); listed here so --help imports no numpy.
AGGREGATORS = ("mean", "median", "extremized_mean", "logit_pool")


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
    seed: BootstrapSeed = 0,
    as_json: AsJson = False,
) -> None:
    """Proxy scores versus the Brier score across forecasters, per aggregator (Pearson and Spearman)."""
    from ..accuracy.proxy_study import proxy_study

    with skipping() as skipped:
        study = proxy_study(paths, aggregators=[m.strip() for m in aggregators.split(",") if m.strip()], loo=loo,
                            batches=batches, zscore=zscore, extremize=extremize, logit_d=logit_d, loss=loss,
                            future=[b.strip() for b in future.split(",")] if future else None, duplicates=duplicates,
                            bootstrap=bootstrap, seed=seed, skipped=skipped)  # fmt: skip
    merged(study.duplicates, duplicates)
    if as_json:
        out.print_json(json.dumps(study.summary))
        return
    _print(study.summary)


def _interval(c: dict[str, Any]) -> str:
    if c["r"] is None:
        return "-"
    ci = "" if c["low"] is None else f" [{c['low']:+.2f}, {c['high']:+.2f}]"
    return f"{c['r']:+.3f}{ci}"


def _print(summary: dict[str, Any]) -> None:
    loss, methods, pairs = summary["loss"], list(summary["correlations"]), summary["forecasters"]
    rows = [(escape(r["forecaster"]), escape(str(r["batch"])), r["questions"], f"{r['truth']:.4f}",
             *(f"{r['proxy'][m]:.4f}" for m in methods)) for r in pairs]  # fmt: skip
    title = f"Mean {loss} loss and proxy score per forecaster and batch (lower is better)"
    out.print(table(title, ("forecaster", "batch", "questions", loss, *methods), rows, left=2))
    scaled = "within-batch z-scores" if summary["zscore"] else "raw scores"
    title = f"Proxy ({summary['variant']}) versus {loss} over (forecaster, batch) pairs, {scaled} (95% bootstrap CI)"
    c = summary["correlations"]
    rows = [(m, _interval(c[m]["pearson"]), _interval(c[m]["spearman"]), c[m]["pearson"]["n"]) for m in methods]
    out.print(table(title, ("aggregator", "Pearson r", "Spearman ρ", "pairs"), rows))
    ahead = summary["next_batch"]
    if ahead is not None:
        title = f"Predicting the next batch's {loss}: Pearson r of a score on batch T with {loss} on T+1"
        rows = [(f"{loss} (baseline)", _interval(ahead["truth"]), ahead["truth"]["n"])]
        rows += [(f"proxy {m}", _interval(ahead[m]), ahead[m]["n"]) for m in methods]
        out.print(table(title, ("score on batch T", "r", "forecasters × pairs"), rows))
    n_forecasters = len({r["forecaster"] for r in pairs})
    err.print(f"{n_forecasters} forecasters, {len(summary['batches'])} batch(es), {len(pairs)} pairs")
