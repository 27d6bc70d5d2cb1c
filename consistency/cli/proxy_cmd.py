"""``cc proxy``: the proxy-scoring paper's main table: does scoring against the crowd rank forecasters
like the Brier score does, per aggregator; and does it predict the next batch's Brier score?"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated

import typer

from .bounds import positive
from .console import escape, out, say, table
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
    for i, (title, columns, rows) in enumerate(study.tables()):  # the first two columns name a forecaster, a batch
        shown = [(escape(str(r[0])), escape(str(r[1])), *r[2:]) for r in rows] if i == 0 else rows
        out.print(table(title, columns, shown, left=2 if i == 0 else 1))
    say([study.counts()])
