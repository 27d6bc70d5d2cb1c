"""Replay recorded forecasts: re-score published or earlier forecasts through the same pipeline."""

from __future__ import annotations

from pathlib import Path

from ..files import FileKind, detect, validate_lines
from ..models import Forecast, ForecastingQuestion, ForecastLine, GroundTruthRecord
from ..store.layout import GROUND_TRUTH, check_of
from .base import Forecaster, ForecastError, current_occurrence


class ReplayForecaster(Forecaster):
    """Answers with the forecasts recorded in ``source``.

    ``source`` is a forecasts file (``<Checker>.jsonl`` lines), a ground-truth results file, or a
    directory of them (the paper's published runs, or a run directory of ours). A question is
    matched by its place in a recorded tuple first (the same question may have been forecast
    differently in two tuples), then by id, then by title and body, then by title.
    """

    name = "replay"
    context_dependent = True

    def __init__(self, source: str) -> None:
        self.source = source
        self._by_place: dict[tuple[str, str, tuple[str, ...]], Forecast] = {}
        self._by_id: dict[str, Forecast] = {}
        self._by_text: dict[tuple[str, str], Forecast] = {}
        self._by_title: dict[str, Forecast] = {}
        for path in _files(Path(source)):
            self._load(path)
        if not self._by_id:
            raise ValueError(f"{source}: no recorded forecasts found")

    @property
    def label(self) -> str:
        return f"replay_{Path(self.source).name}"

    def _remember(self, question: ForecastingQuestion, forecast: Forecast) -> None:
        self._by_id.setdefault(question.id, forecast)
        self._by_text.setdefault((question.title.strip(), question.body.strip()), forecast)
        self._by_title.setdefault(question.title.strip(), forecast)

    def _load(self, path: Path) -> None:
        info = detect(path)
        if info.kind not in (FileKind.FORECASTS, FileKind.GROUND_TRUTH):
            raise ValueError(f"{path}: holds {info.kind}; replay needs forecast lines or ground-truth results")
        for _, item in validate_lines(info):
            if isinstance(item, list):
                raise ValueError(f"cannot replay: {item[0]}")
            if isinstance(item, GroundTruthRecord):
                self._remember(item.question, item.forecast)
                continue
            assert isinstance(item, ForecastLine) and info.check is not None
            ids = tuple(item.line[f].question.id for f in info.check.field_names)
            for field_name in info.check.field_names:
                entry = item.line[field_name]
                self._by_place.setdefault((info.check.class_name, field_name, ids), entry.forecast)
                self._remember(entry.question, entry.forecast)

    async def forecast(self, question: ForecastingQuestion) -> Forecast:
        occurrence = current_occurrence()
        found = None
        if occurrence is not None:
            found = self._by_place.get((occurrence.check, occurrence.field, occurrence.tuple_ids))
        found = (
            found
            or self._by_id.get(question.id)
            or self._by_text.get((question.title.strip(), question.body.strip()))
            or self._by_title.get(question.title.strip())
        )
        if found is None:
            raise ForecastError(f"no recorded forecast in {self.source} for question {question.id}")
        return found.model_copy(deep=True)


def _files(source: Path) -> list[Path]:
    if source.is_file():
        return [source]
    if not source.is_dir():
        raise ValueError(f"{source}: no such file or directory")
    found = sorted(p for p in source.glob("*.jsonl") if check_of(p) is not None or p.name == GROUND_TRUTH)
    if not found:
        raise ValueError(f"{source}: no <Checker>.jsonl or {GROUND_TRUTH} files to replay")
    return found
