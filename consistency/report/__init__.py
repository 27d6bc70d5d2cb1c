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
from typing import TYPE_CHECKING, Annotated, Any

from annotated_doc import Doc
from annotated_types import Ge

from ..store.outputs import output_file

if TYPE_CHECKING:
    from .gather import Run
    from .repair_section import RepairComparison

log = logging.getLogger(__name__)

__all__ = ["Report", "ReportInputError", "make_report"]


def __getattr__(name: str) -> Any:
    if name == "ReportInputError":  # from .gather, imported on first use: ``cc report --help`` reads this module
        from .gather import ReportInputError

        return ReportInputError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class Report:
    path: Path
    runs: list[Run]
    figures: list[Path]  # files written under --png
    size: int  # bytes of the HTML file
    repairs: RepairComparison | None = None  # the repair section's figures, when asked for


def make_report(
    paths: Sequence[str | Path],
    out: Annotated[Path, Doc("The HTML file to write.")] = Path("report.html"),
    *,
    top: Annotated[int, Ge(0), Doc("Worst tuples written out per check.")] = 5,
    png_dir: Annotated[Path | None, Doc("Also write every figure into this directory as PNG and SVG.")] = None,
    title: Annotated[str | None, Doc("The page's title.")] = None,
    diff: Annotated[bool, Doc("Add a section comparing the second PATH to the first, as `cc diff`.")] = False,
    repair: Annotated[
        bool,
        Doc(
            "Add a section: the first PATH's forecasts as given and Brier-repaired (joint, per tuple; computed "
            "with no model call): violations, Brier where resolved, model calls."
        ),
    ] = False,
    arbitrage_run: Annotated[
        Path | None,
        Doc("An ArbitrageForecaster run over the same tuples, shown beside the repairs (implies --repair)."),
    ] = None,
) -> Report:
    """Write the report for ``paths`` (``NAME=PATH`` names a forecaster) to ``out``; with ``diff``, a section
    comparing the second path to the first (as ``cc diff``); with ``repair`` (or an ``arbitrage_run`` over the
    same tuples to show beside), the first path's forecasts as given and repaired. The other parameters are
    ``cc report``'s options (a ``str`` path is taken too)."""
    from ..jsonl import atomic_write
    from .compare import compare
    from .figures import Figures
    from .gather import ReportInputError, gather
    from .render import Page

    if not paths:
        raise ReportInputError("no PATH given: name run directories, `cc score` outputs or published directories")
    if diff and len(paths) != 2:
        raise ReportInputError(f"--diff compares two runs; {len(paths)} PATH(s) given")
    target = output_file(out)  # never written through a symbolic link (refused before any work)
    runs = gather([str(p) for p in paths], top=top)
    comparison = compare(runs) if len(runs) > 1 else None
    figs = Figures(Path(png_dir) if png_dir is not None else None)
    title = title or ("Consistency report: " + ", ".join(r.name for r in runs[:3]) + (" …" if len(runs) > 3 else ""))
    page = Page(runs, comparison, figs, top).html(title)
    with atomic_write(target) as fh:  # a kill mid-write leaves the previous page, never half a page
        fh.write(page)
    if diff:
        from ..evaluation.diff import diff_runs
        from .diff_section import add_to_report, diff_html

        add_to_report(target, diff_html(diff_runs(*map(_path, paths))))
    repairs = _add_repairs(target, _path(paths[0]), arbitrage_run) if repair or arbitrage_run is not None else None
    log.info("report of %d run(s) written to %s", len(runs), target)
    return Report(target, runs, figs.written, target.stat().st_size, repairs)


def _path(spec: str | Path) -> str:
    """The path of a ``NAME=PATH`` argument (a path that exists as given is a path, ``=`` and all)."""
    spec = str(spec)
    return spec.split("=", 1)[1] if "=" in spec and not Path(spec).exists() else spec


def _add_repairs(page: Path, first: str, arbitrage_run: str | Path | None) -> RepairComparison:
    from ..errors import InputError
    from .diff_section import add_to_report
    from .gather import ReportInputError
    from .repair_section import compare_repairs, repair_html

    try:
        result = compare_repairs(first, arbitrage_run)
    except InputError as exc:
        raise ReportInputError(f"--repair: {exc}") from None
    add_to_report(page, repair_html(result))
    return result
