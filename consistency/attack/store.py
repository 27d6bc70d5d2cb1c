"""What an attack keeps on disk: an append-only journal (resumable after kill -9) and the results.

The journal records, in order, each forecast the search is charged for (before it is asked), each
answer, each variant a mutation produced and each verifier verdict. A restarted search replays its
own deterministic steps against it: answers are read back instead of asked, and a charge is never
made twice for one question, so the budget holds across any number of restarts.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..checks import Check
from ..errors import InputError
from ..jsonl import AppendLog
from ..models import ForecastingQuestion
from ..store.layout import ATTACK_FILE as CONFIG
from ..store.layout import ATTACK_JOURNAL as JOURNAL
from ..store.layout import GENERATOR_TRANSCRIPT, TRANSCRIPT

__all__ = ["CONFIG", "GENERATOR_TRANSCRIPT", "JOURNAL", "TRANSCRIPT", "Journal", "read_config", "stale_temp"]


def question_key(q: ForecastingQuestion) -> str:
    """What a forecaster is shown (title, body, dates; the options or range of a multiple-choice or numeric
    question): two questions that read alike are one forecast. A yes/no question's key is as it always was."""
    shown = f"{q.title}\x00{q.body}\x00{q.resolution_date}|{q.created_date}"
    if q.options is not None or q.range is not None:
        shape = q.model_dump(mode="json", include={"question_type", "options", "range"})
        shown += "\x00" + json.dumps(shape, sort_keys=True)
    return hashlib.sha256(shown.encode()).hexdigest()[:16]


def tuple_key(check: Check, questions: list[ForecastingQuestion]) -> str:
    return check.name + ":" + hashlib.sha256("|".join(question_key(q) for q in questions).encode()).hexdigest()[:16]


@dataclass
class Journal:
    """The journal of one attack directory, loaded on open."""

    path: Path
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)  # question key -> {"forecast", "error"}
    charged: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # sampler -> question keys
    variants: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)
    _log: AppendLog | None = None

    @classmethod
    def open(cls, directory: Path) -> Journal:
        journal = cls(directory / JOURNAL)
        journal._log = AppendLog(journal.path)
        for record in journal._log.existing:
            kind = record.get("kind")
            if kind == "charge":
                journal.charged[record["sampler"]].update(record["keys"])
            elif kind == "forecast":
                forecast = record.get("forecast")
                if forecast is None and record.get("prob") is not None:  # a journal of a yes/no-only version
                    forecast = {"prob": record["prob"]}
                journal.answers[record["key"]] = {"forecast": forecast, "error": record.get("error")}
            elif kind == "variant":
                journal.variants[record["key"]] = record.get("variant")
            elif kind == "verdict":
                journal.verdicts[record["key"]] = record["verdict"]
        return journal

    def charge(self, sampler: str, keys: list[str]) -> None:
        """Record that ``sampler`` spends budget on ``keys`` (before they are asked: a kill cannot lose a charge)."""
        new = [k for k in keys if k not in self.charged[sampler]]
        if new:
            self._append({"kind": "charge", "sampler": sampler, "keys": new})
            self.charged[sampler].update(new)

    def answer(self, key: str, forecast: dict[str, Any] | None, error: str | None, title: str = "") -> None:
        """The forecast of question ``key`` (``{"prob": ...}``, ``{"probs": [...]}`` or ``{"cdf": [...]}``, as
        :func:`consistency.models.parse_forecast` reads it), or why there is none."""
        record = {"kind": "forecast", "key": key, "forecast": forecast, "error": error, "title": title}
        self._append(record)
        self.answers[key] = {"forecast": forecast, "error": error}

    def variant(self, key: str, value: dict[str, Any] | None, reason: str | None = None) -> None:
        self._append({"kind": "variant", "key": key, "variant": value, "reason": reason})
        self.variants[key] = value

    def verdict(self, key: str, verdict: dict[str, Any]) -> None:
        self._append({"kind": "verdict", "key": key, "verdict": verdict})
        self.verdicts[key] = verdict

    def _append(self, record: dict[str, Any]) -> None:
        assert self._log is not None, "journal not open"
        self._log.append(record)

    def close(self) -> None:
        if self._log is not None:
            self._log.close()


def read_config(directory: Path) -> dict[str, Any] | None:
    path = directory / CONFIG
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{path}: not readable as JSON ({exc})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: holds a JSON {type(data).__name__}, not an attack's settings (an object)")
    return data


def stale_temp(path: Path) -> bool:
    """A temporary file an atomic write leaves behind when its process is killed (``.NAME.XXXXXXXX.tmp``)."""
    return path.name.startswith(".") and path.name.endswith(".tmp") and path.is_file()
