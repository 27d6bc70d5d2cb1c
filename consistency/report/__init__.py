"""``cc report``: one self-contained HTML page (and optional PNG/SVG figures) from any mix of results.

Reads ``cc evaluate`` run directories, ``cc score`` outputs and the paper's published forecast and
ground-truth directories (:mod:`.gather`), pairs runs of one forecaster and correlates consistency with
accuracy through ``consistency.accuracy`` (:mod:`.compare`), draws with matplotlib (:mod:`.figures`) and
fills the page template (:mod:`.render`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..jsonl import atomic_write
from ..store.outputs import output_file
from .gather import ReportInputError, Run, gather

log = logging.getLogger(__name__)

__all__ = ["Report", "ReportInputError", "make_report"]


@dataclass
class Report:
    path: Path
    runs: list[Run]
    figures: list[Path]  # files written under --png
    size: int  # bytes of the HTML file


def make_report(
    paths: Sequence[str | Path],
    out: str | Path = "report.html",
    *,
    top: int = 5,
    png_dir: str | Path | None = None,
    title: str | None = None,
) -> Report:
    """Write the report for ``paths`` (``NAME=PATH`` names a forecaster) to ``out``."""
    from .compare import compare
    from .figures import Figures
    from .render import Page

    if not paths:
        raise ReportInputError("no PATH given: name run directories, `cc score` outputs or published directories")
    target = output_file(out)  # never written through a symbolic link (refused before any work)
    runs = gather([str(p) for p in paths], top=top)
    comparison = compare(runs) if len(runs) > 1 else None
    figs = Figures(Path(png_dir) if png_dir is not None else None)
    title = title or ("Consistency report: " + ", ".join(r.name for r in runs[:3]) + (" …" if len(runs) > 3 else ""))
    page = Page(runs, comparison, figs, top).html(title)
    with atomic_write(target) as fh:  # a kill mid-write leaves the previous page, never half a page
        fh.write(page)
    log.info("report of %d run(s) written to %s (%d bytes)", len(runs), target, len(page.encode()))
    return Report(target, runs, figs.written, target.stat().st_size)
