"""The only code that knows the files results are kept in: their names and layouts, and typed readers.

Today: the file names of a run directory (:mod:`.layout`) and the checked reader of ``run.json``
(:mod:`.meta`). Readers of the other files move here as they are typed.
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
from .meta import RunMeta, RunMetaError, optional_run_meta, read_run_meta, run_meta_of

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
