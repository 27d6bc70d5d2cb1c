"""``cc questions import forecastbench`` as a library call: sources in, our questions out.

Sources are anything :mod:`.locate` resolves. Each question set is paired with the resolution
set of its due date (ForecastBench publishes one per due date; its human set is scored on the
LLM set's rows), turned into questions by :mod:`.reader`, and questions met twice (a set given
twice) are kept once. Forecast sets among the sources are returned as they are, for the caller.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .bulk import paused_collector
from .formats import question_set, resolution_set
from .locate import Document, Gathered, Locator
from .reader import Imported, import_set


@dataclass
class Loaded:
    imported: Imported
    sets: list[tuple[str, str, str | None]] = field(default_factory=list)  # (question set file, due, resolution file)
    forecast_sets: list[Document] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    repeated: int = 0  # questions met twice and kept once


def load(
    sources: list[str],
    *,
    datasets: str | Path | None = None,
    offline: bool = False,
    refresh: bool = False,
    resolutions: bool = True,
    freeze_values: bool = False,
    cache_root: Path | None = None,
) -> Loaded:
    """Our questions from ForecastBench sources (files, folders, URLs, ``fb:`` references)."""
    locator = Locator(datasets, offline=offline, refresh=refresh, cache_root=cache_root, resolutions=resolutions)
    with paused_collector():
        return _load(locator.gather(sources), freeze_values)


def _load(found: Gathered, freeze_values: bool) -> Loaded:
    loaded = Loaded(Imported(), forecast_sets=found.of("forecast_set"), notes=list(found.notes))
    by_due = {}
    for d in found.of("resolution_set"):
        parsed = resolution_set(d.doc, d.file)
        if parsed.due in by_due:
            loaded.notes.append(f"{d.file}: a second resolution set for {parsed.due}; the first is used")
            continue
        by_due[parsed.due] = parsed
    used = set()
    for d in found.of("question_set"):
        qset = question_set(d.doc, d.file)
        res = by_due.get(qset.due)
        used.add(qset.due)
        loaded.sets.append((d.file, qset.due, res.file if res else None))
        loaded.imported.extend(import_set(qset, res, freeze_values=freeze_values))
    for due, res in by_due.items():
        if due not in used:
            loaded.notes.append(f"{res.file}: no question set of {due} among the sources; its outcomes were not used")
    seen: set[str] = set()
    kept = []
    for q in loaded.imported.questions:
        if q.id in seen:
            loaded.repeated += 1
            continue
        seen.add(q.id)
        kept.append(q)
    loaded.imported.questions = kept
    tuples = {t["P_and_Q"]["id"]: t for t in loaded.imported.tuples}  # a set given twice: its tuples once
    loaded.imported.tuples = list(tuples.values())
    return loaded
