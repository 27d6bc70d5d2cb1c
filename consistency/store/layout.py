"""The names of the files a run directory (and the other result directories) hold, declared once.

Every module that opens one of these files takes its name from here, so a layout change is one edit
and ``grep`` finds each name in one place. What each file holds: docs/reference/formats.md.
"""

from __future__ import annotations

#: The run's record: what was run, how, its status and totals (read through :func:`.meta.read_run_meta`).
RUN_FILE = "run.json"
#: The forecast journal of ``cc evaluate``: one line per question asked, appended as each finishes.
JOURNAL = "forecasts.jsonl"
#: Every model call of the run, as it finished (no secrets).
TRANSCRIPT = "llm_calls.jsonl"
#: Held (``flock``) by the process working on the run; the OS drops it when that process ends, however.
LOCK_FILE = ".lock"
#: All checks' statistics, the aggregate, unscorable lines and failed questions (``cc score``, ``cc evaluate``).
SUMMARY = "summary.json"
#: One check's statistics: ``stats_<Checker>.json``.
STATS_PREFIX = "stats_"
#: A ground-truth run's scored questions (the paper's format) and their averages.
GROUND_TRUTH = "ground_truth_results.jsonl"
GROUND_TRUTH_SUMMARY = "ground_truth_summary.json"
#: The ArbitrageForecaster's call trees, kept beside the journal so a resume replays them.
SIDECAR = "arbitrage_steps.jsonl"
#: A ``cc repair`` directory's report.
REPAIR_REPORT = "repair.json"
#: A ``cc attack`` directory's configuration and summary.
ATTACK_FILE = "attack.json"


def stats_file(class_name: str) -> str:
    """The statistics file of one check (``stats_NegChecker.json``)."""
    return f"{STATS_PREFIX}{class_name}.json"


def partial_name(name: str, pid: int) -> str:
    """The hidden sibling an output directory ``name`` is written into by process ``pid`` before it is
    moved into place (``.OUT.1234.partial``): never half a result under the real name."""
    return f".{name}.{pid}.partial"
