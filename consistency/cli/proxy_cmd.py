"""``cc proxy``: the proxy-scoring paper's main table: does scoring against the crowd rank forecasters
like the Brier score does, per aggregator; and does it predict the next batch's Brier score?"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ..accuracy.settings import SOURCES, Proxying
from .console import escape, out, say, table
from .declared import options_from
from .options import AsJson
from .table_options import merged, skipping

_FLAGS = {"aggregators": ("--aggregators", "-a"), "loo": "--loo/--with-self", "zscore": "--zscore/--raw"}


@options_from(Proxying, "settings", flags=_FLAGS)
def proxy(
    paths: Annotated[list[Path], typer.Argument(help=SOURCES)], as_json: AsJson = False, *, settings: Proxying
) -> None:
    """Proxy scores versus the Brier score across forecasters, per aggregator (Pearson and Spearman)."""
    from ..accuracy.proxy_study import proxy_study

    with skipping() as skipped:
        study = proxy_study(paths, settings, skipped=skipped)
    merged(study.duplicates, settings.duplicates)
    if as_json:
        out.print_json(json.dumps(study.summary))
        return
    for i, (title, columns, rows) in enumerate(study.tables()):  # the first two columns name a forecaster, a batch
        shown = [(escape(str(r[0])), escape(str(r[1])), *r[2:]) for r in rows] if i == 0 else rows
        out.print(table(title, columns, shown, left=2 if i == 0 else 1))
    say([study.counts()])
