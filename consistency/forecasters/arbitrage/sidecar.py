"""The ArbitrageForecaster's sidecar file: the call trees below a run's top level, written and read back.

In a run directory the forecaster keeps nested trees out of ``forecasts.jsonl``: ``arbitrage_steps.jsonl``
(:data:`~consistency.store.layout.SIDECAR`) has one line per (depth, question) holding that node's
one-level tree, and a parent's ``elicitation_metadata`` is a *reference* to that line
(``{"arbitrage_steps": SIDECAR, "depth": r, "key": text_key(question)}``). The forecaster writes it
(:class:`SidecarWriter`), ``cc arbitrage replay`` reads it (:class:`Sidecar`); both sides live here
so the format is declared once.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from consistency.errors import InputError
from consistency.jsonl import AppendLog, LineError, iter_json_lines
from consistency.models import ForecastingQuestion
from consistency.prompts import question_block
from consistency.store.layout import SIDECAR

__all__ = ["SIDECAR", "ReplayError", "Sidecar", "SidecarWriter", "is_reference", "reference", "text_key"]


class ReplayError(InputError, ValueError):
    """A file or tree that cannot be replayed; the message names the file and line."""


def text_key(question: ForecastingQuestion) -> str:
    """Questions are the same (for the memo and the sidecar) when forecasters see the same text."""
    return hashlib.sha256(question_block(question).encode()).hexdigest()[:16]


def reference(depth: int, question: ForecastingQuestion) -> dict[str, Any]:
    """What a parent tree holds in place of the child tree kept on the sidecar's line."""
    return {"arbitrage_steps": SIDECAR, "depth": depth, "key": text_key(question)}


def is_reference(value: Any) -> bool:
    """Our run directories keep trees below the top level in the sidecar, referred to by (depth, key)."""
    return isinstance(value, dict) and value.get("arbitrage_steps") == SIDECAR and {"depth", "key"} <= set(value)


class SidecarWriter:
    """Appends each (depth, question) tree once; a resumed run finds the lines it already wrote."""

    def __init__(self, directory: Path) -> None:
        self._log = AppendLog(Path(directory) / SIDECAR, lock=False)  # the run directory's lock covers it
        self._written = {(line["depth"], line["key"]) for line in self._log.existing}

    def write(self, depth: int, question: ForecastingQuestion, prob: float, tree: list[dict[str, Any]]) -> None:
        key = text_key(question)
        if (depth, key) in self._written:
            return
        self._written.add((depth, key))
        line = {"depth": depth, "key": key, "question_id": question.id, "title": question.title, "prob": prob}
        self._log.append(line | {"tree": tree})

    def close(self) -> None:
        self._log.close()


class Sidecar:
    """The one-level trees of a run directory's sidecar, by (depth, key); read when first needed."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / SIDECAR
        self._trees: dict[tuple[int, str], Any] | None = None

    def tree(self, ref: dict[str, Any]) -> Any:
        if self._trees is None:
            if not self.path.is_file():
                raise ReplayError(f"the tree refers to {self.path}, which does not exist")
            self._trees = {}
            for number, obj in iter_json_lines(self.path):
                if isinstance(obj, LineError) or not {"depth", "key", "tree"} <= set(obj):
                    raise ReplayError(f"{self.path}:{number}: not an arbitrage step line")
                self._trees[(obj["depth"], obj["key"])] = obj["tree"]
        found = self._trees.get((ref["depth"], ref["key"]))
        if found is None:
            raise ReplayError(f"{self.path} has no line for depth {ref['depth']}, key {ref['key']}")
        return found
