"""The only code that knows the files results are kept in: their names and layouts, and typed readers.

The file names and layouts (:mod:`.layout`, which imports nothing, so the CLI's help texts can use it
at no start-up cost), the checked reader of ``run.json`` (:mod:`.meta`), the other records
(:mod:`.records`), the line files as columns (:mod:`.lines`) and the one reader of a result,
:func:`.runs.read_run`. The readers are imported on first use, for the same reason.
"""

from __future__ import annotations

from .layout import (
    ATTACK_FILE,
    GROUND_TRUTH,
    GROUND_TRUTH_SUMMARY,
    JOURNAL,
    LOCK_FILE,
    REPAIR_REPORT,
    RUN_FILE,
    SIDECAR,
    STATS_PREFIX,
    SUMMARY,
    TRANSCRIPT,
    partial_name,
    stats_file,
)

_LAZY = {"RunMeta", "RunMetaError", "optional_run_meta", "read_run_meta", "run_meta_of"}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        from . import meta

        return getattr(meta, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ATTACK_FILE",
    "GROUND_TRUTH",
    "GROUND_TRUTH_SUMMARY",
    "JOURNAL",
    "LOCK_FILE",
    "REPAIR_REPORT",
    "RUN_FILE",
    "SIDECAR",
    "STATS_PREFIX",
    "SUMMARY",
    "TRANSCRIPT",
    "RunMeta",
    "RunMetaError",
    "optional_run_meta",
    "partial_name",
    "read_run_meta",
    "run_meta_of",
    "stats_file",
]
