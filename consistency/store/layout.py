"""The names of the files a result directory holds and the rules that place them, declared once.

Every module that opens one of these files takes its name (or its path) from here, so a layout change is
one edit and ``tests/project/test_structure.py`` can check that no other module spells a file name. What each file
holds: docs/reference/formats.md. Reading them is :mod:`.runs`'s job; this module only names and finds.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..checks import Check

# ------------------------------------------------------------------ a run directory (cc evaluate, cc repair)

#: The run's record: what was run, how, its status and totals (read through :func:`.meta.read_run_meta`).
RUN_FILE = "run.json"
#: The forecast journal of ``cc evaluate``: one line per question asked, appended as each finishes.
JOURNAL = "forecasts.jsonl"
#: Every model call of the run, as it finished (no secrets).
TRANSCRIPT = "llm_calls.jsonl"
#: The batch journal (batch mode): one line per state change of a batch.
BATCHES = "batches.jsonl"
#: Held (``flock``) by the process working on the run; the OS drops it when that process ends, however.
LOCK_FILE = ".lock"
#: All checks' statistics, the aggregate, unscorable lines and failed questions (``cc score``, ``cc evaluate``).
SUMMARY = "summary.json"
#: One check's statistics: ``stats_<Checker>.json``.
STATS_PREFIX = "stats_"
#: A forecast file is named after its check: ``<Checker>.jsonl`` (the paper's layout).
FORECAST_SUFFIX = ".jsonl"
#: A ground-truth run's scored questions (the paper's format) and their averages.
GROUND_TRUTH = "ground_truth_results.jsonl"
GROUND_TRUTH_SUMMARY = "ground_truth_summary.json"
#: A ground-truth run's scored multiple-choice, numeric and date questions (their own scores; not the paper's format).
GROUND_TRUTH_TYPED = "ground_truth_typed_results.jsonl"
#: The ArbitrageForecaster's call trees, kept beside the journal so a resume replays them.
SIDECAR = "arbitrage_steps.jsonl"
#: A ``cc repair`` directory's report.
REPAIR_REPORT = "repair.json"
#: The paper's published directories: the forecaster's class and configuration (first line).
PAPER_CONFIG = "config.jsonl"

# ------------------------------------------------------------------ a cc attack directory

#: Its settings, status and (once finished) summary.
ATTACK_FILE = "attack.json"
#: What makes it resumable: charges, answers, variants and verdicts, in order.
ATTACK_JOURNAL = "journal.jsonl"
#: The generator model's calls (the target's go to :data:`TRANSCRIPT`).
GENERATOR_TRANSCRIPT = "generator_calls.jsonl"
#: Every tuple the search scored, in the order found.
SEARCH_LOG = "search_log.jsonl"
#: The human-readable account of the search.
ATTACK_MARKDOWN = "report.md"
#: The returned tuples (``tuples/<Checker>.jsonl``) and the target's forecasts on them (``forecasts/<Checker>.jsonl``).
TUPLES_DIR = "tuples"
FORECASTS_DIR = "forecasts"

#: Every file a run or attack directory may hold that is not a forecast file: never read as forecasts.
NOT_FORECASTS = frozenset(
    {JOURNAL, TRANSCRIPT, BATCHES, SIDECAR, PAPER_CONFIG, ATTACK_JOURNAL, GENERATOR_TRANSCRIPT, SEARCH_LOG}
)


def forecast_file(check: Check | str) -> str:
    """The file of one check's forecast (or tuple) lines: ``NegChecker.jsonl``."""
    from ..checks import get_check  # the checks are loaded only when a file is named after one

    return f"{get_check(check).class_name}{FORECAST_SUFFIX}"


def stats_file(check: Check | str) -> str:
    """The statistics file of one check (a :class:`Check` or its class name): ``stats_NegChecker.json``."""
    return f"{STATS_PREFIX}{check if isinstance(check, str) else check.class_name}.json"


def check_of(path: str | Path) -> Check | None:
    """The check a file is named after (``NegChecker.jsonl``, ``neg.jsonl``), or None."""
    from ..checks import get_check

    path = Path(path)
    if path.name in NOT_FORECASTS:
        return None
    try:
        return get_check(path.stem)
    except KeyError:
        return None


def forecast_files_in(directory: str | Path) -> list[Path]:
    """The ``<Checker>.jsonl`` files of ``directory``, sorted by name (none when it is not a directory)."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.glob(f"*{FORECAST_SUFFIX}") if check_of(p) is not None)


def partial_name(name: str, pid: int) -> str:
    """The hidden sibling an output directory ``name`` is written into by process ``pid`` before it is
    moved into place (``.OUT.1234.partial``): never half a result under the real name."""
    return f".{name}.{pid}.partial"


def partial_pattern(name: str) -> str:
    """The glob of every :func:`partial_name` sibling of ``name`` (its name escaped by the caller)."""
    return f".{name}.*partial"


# ------------------------------------------------------------------ the bundled benchmark and question files

#: A benchmark directory: its questions, and one ``<Checker>.jsonl`` of tuples per check in :data:`TUPLES_DIR`.
BENCHMARK_QUESTIONS = "questions.jsonl"


def rejects_file(questions: Path) -> Path:
    """Where question synthesis puts what it rejected, with reasons: ``q.jsonl`` -> ``q.rejects.jsonl``."""
    return questions.with_name(questions.name.removesuffix(FORECAST_SUFFIX) + ".rejects" + FORECAST_SUFFIX)


def resolved_file(questions: Path) -> Path:
    """Where ``cc questions resolve`` writes by default: ``q.jsonl`` -> ``q.resolved.jsonl``."""
    return questions.with_name(questions.name.removesuffix(FORECAST_SUFFIX) + ".resolved" + FORECAST_SUFFIX)


def scrape_state_file(out: Path) -> Path:
    """A scrape's saved progress, beside its output (``q.jsonl.scrape.json``), so a resume carries on."""
    return out.with_name(out.name + ".scrape.json")
