"""What the ForecastBench commands write besides a forecast set: the imported questions, their COMBINATION
tuples and the forecast sets' COMBINATION forecast lines (``cc questions import forecastbench``); and the
questions a run forecast, read back for its export (``cc export forecastbench``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..models import ForecastingQuestion
from .formats import ForecastBenchError
from .importing import Loaded

#: The file of COMBINATION tuples (and forecast lines) in a tuples or run folder.
COMBINATION_FILE = "CombinationChecker.jsonl"


@dataclass(frozen=True)
class CombinationRun:
    """A forecast set's COMBINATION forecast lines, written to ``folder``; ``incomplete``: combinations lacking
    one of their six forecasts."""

    name: str
    lines: int
    folder: Path
    incomplete: int


def write_import(
    loaded: Loaded, out: Path, tuples: Path | None = None, runs: Path | None = None
) -> list[CombinationRun | str]:
    """Write the questions to ``out``, the COMBINATION tuples into ``tuples``, and each forecast set among the
    sources as COMBINATION forecast lines into a folder of ``runs``; per forecast set what was written, or one
    sentence on why nothing was."""
    from ..jsonl import write_jsonl

    imported = loaded.imported
    if not imported.questions and not loaded.forecast_sets:
        raise InputError("no question could be read from the sources")
    if imported.questions:
        write_jsonl(out, imported.questions)
    if tuples is not None and imported.tuples:
        write_jsonl(tuples / COMBINATION_FILE, imported.tuples)
    if not loaded.forecast_sets:
        return []
    if runs is None:
        return [f"{len(loaded.forecast_sets)} forecast set(s) among the sources: give --runs DIR to measure their "
                "combination rows"]  # fmt: skip
    if not imported.tuples:
        return ["no combination questions in the question sets given, so the forecast sets' combination rows "
                "have nothing to be measured against (give the question set they answer)"]  # fmt: skip
    from .combination import combination_lines
    from .forecasts import read_forecast_set

    written: list[CombinationRun | str] = []
    for document in loaded.forecast_sets:
        forecasts = read_forecast_set(document.doc, document.file)
        lines, incomplete = combination_lines(imported.tuples, forecasts.probs)
        folder = runs / Path(document.file).stem
        write_jsonl(folder / COMBINATION_FILE, lines)
        written.append(CombinationRun(forecasts.name, len(lines), folder, incomplete))
    return written


def run_questions(run: Path, given: Path | None = None) -> list[ForecastingQuestion]:
    """The imported questions a run forecast: ``given``, or the questions file the run records."""
    from ..evaluation.ground_truth import load_questions
    from ..store.runs import recorded_questions_file

    path = given
    if path is None:
        recorded = recorded_questions_file(run)
        if not recorded:
            raise ForecastBenchError(
                f"{run} records no questions file (a run on tuples): give --questions with the imported questions"
            )
        path = Path(recorded)
    try:
        questions, _ = load_questions(path)
    except (OSError, InputError) as exc:
        raise ForecastBenchError(f"{path}: {exc}") from None
    return questions
