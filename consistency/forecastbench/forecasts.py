"""Forecasts on ForecastBench's questions, wherever they are: our runs, or ForecastBench forecast sets.

A run directory of ``cc evaluate`` (on imported questions or on tuples built from them) keeps every
forecast in its journal, ``forecasts.jsonl``; a directory of ``<Checker>.jsonl`` forecast lines holds
them in its lines. Either way a question's id says which ForecastBench row it is (:func:`.keys.key_of`);
questions of other origins (a tuple's derived questions) are counted and left aside. A forecast set
is read by ForecastBench's own rules (:func:`.validate.validate_forecast_set`): what they drop is dropped here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..jsonl import LineError, iter_json_lines
from ..store.layout import JOURNAL, forecast_files_in
from .bulk import paused_collector
from .formats import ForecastBenchError, load_document
from .keys import RowKey, key_of
from .validate import Finding, validate_forecast_set


@dataclass
class Forecasts:
    """One forecaster's forecasts on ForecastBench rows."""

    name: str
    origin: str  # the run directory or forecast-set file
    probs: dict[RowKey, float] = field(default_factory=dict)
    reasoning: dict[RowKey, str] = field(default_factory=dict)
    other: int = 0  # forecasts on questions that are not ForecastBench's
    failed: int = 0  # ForecastBench questions the run could not forecast
    problems: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # ForecastBench's verdicts on a forecast set
    rejected: bool = False

    @property
    def dues(self) -> set[str]:
        return {k.due for k in self.probs}


def _reasoning(forecast: dict[str, Any]) -> str | None:
    meta = forecast.get("metadata")
    if isinstance(meta, dict):
        text = meta.get("reasoning") or meta.get("reasoning_summary")
        return str(text) if text else None
    return None


def _take(out: Forecasts, qid: Any, forecast: Any) -> None:
    key = key_of(qid) if isinstance(qid, str) else None
    if key is None:
        out.other += 1
        return
    if not isinstance(forecast, dict) or not isinstance(forecast.get("prob"), (int, float)):
        out.failed += 1
        return
    out.probs[key] = float(forecast["prob"])
    text = _reasoning(forecast)
    if text:
        out.reasoning[key] = text


def read_run(directory: str | Path, name: str | None = None) -> Forecasts:
    """A run directory's forecasts on ForecastBench questions (its journal, else its forecast lines)."""
    from ..accuracy.table import forecaster_name

    directory = Path(directory)
    if not directory.is_dir():
        raise ForecastBenchError(f"{directory}: no such run directory")
    out = Forecasts(name or forecaster_name(directory) or directory.name, str(directory))
    journal = directory / JOURNAL
    if journal.is_file():
        for _, obj in iter_json_lines(journal):
            if isinstance(obj, LineError):
                out.problems.append(str(obj))
                continue
            _take(out, obj.get("question_id"), obj.get("forecast"))
    else:
        for path in forecast_files_in(directory):
            for number, obj in iter_json_lines(path):
                line = obj.get("line") if isinstance(obj, dict) else None
                if not isinstance(line, dict):
                    out.problems.append(
                        str(obj) if isinstance(obj, LineError) else f"{path}:{number}: not a forecast line"
                    )
                    continue
                for entry in line.values():
                    if isinstance(entry, dict) and isinstance(entry.get("question"), dict):
                        _take(out, entry["question"].get("id"), entry.get("forecast"))
    if not out.probs:
        raise ForecastBenchError(
            f"{directory}: no forecasts on ForecastBench questions (ids fb:...) in this run"
            + (f" ({out.other} forecasts on other questions)" if out.other else "")
        )
    return out


def read_forecast_set(doc: dict[str, Any], file: str, questions: set[RowKey] | None = None) -> Forecasts:
    """A forecast set as ForecastBench would keep it; a file it rejects comes back ``rejected``."""
    verdict = validate_forecast_set(doc, questions)
    org, model = doc.get("organization"), doc.get("model")
    name = f"{org} {model}" if org and model else Path(file).stem
    out = Forecasts(str(name), file, findings=verdict.findings, rejected=verdict.rejected)
    out.probs = dict(verdict.rows)
    out.reasoning = dict(verdict.reasoning)
    return out


def read_forecasts(path: str | Path, questions: set[RowKey] | None = None) -> Forecasts:
    """A run directory or a ForecastBench forecast-set file."""
    path = Path(path)
    if path.is_dir():
        return read_run(path)
    with paused_collector():  # a forecast set is thousands of small rows
        found = _forecast_set_file(path, questions)
    if found is None:
        raise ForecastBenchError(f"{path}: not a ForecastBench forecast set (no forecasts) nor a run directory")
    return found


def _forecast_set_file(path: Path, questions: set[RowKey] | None) -> Forecasts | None:
    """The file's forecasts; its document is dropped on return, before the collector runs again, so that
    the collector never walks its thousands of rows (which no cycle holds)."""
    doc = load_document(path)
    return read_forecast_set(doc, str(path), questions) if "forecasts" in doc else None
