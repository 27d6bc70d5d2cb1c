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

    def __str__(self) -> str:
        missing = f"; {self.incomplete} combination(s) lack one of their six forecasts" if self.incomplete else ""
        return f"{self.name}: {self.lines} COMBINATION forecast line(s) in {self.folder}{missing}"


#: Entries left out of an import listed one by one; the rest are counted.
SHOWN_PROBLEMS = 20


def left_out_lines(problems: list[object]) -> list[str]:
    """The first entries an import left out, with their reasons, then how many there were."""
    lines = [f"  left out {p}" for p in problems[:SHOWN_PROBLEMS]]
    if problems:
        more = f" (the first {SHOWN_PROBLEMS} are listed)" if len(problems) > SHOWN_PROBLEMS else ""
        lines.append(f"{len(problems)} entr{'y' if len(problems) == 1 else 'ies'} left out{more}")
    return lines


def set_lines(loaded: Loaded) -> list[str]:
    """Each question set read, its due date and where its outcomes came from."""
    return [
        f"{Path(file).name} (due {due}): " + (f"outcomes from {Path(res).name}" if res else "no resolution set")
        for file, due, res in loaded.sets
    ]


def source_rows(loaded: Loaded) -> tuple[list[tuple[str, int, int]], tuple[str, int, int]]:
    """Questions and outcomes per source (markets first) and their total: the import's table."""
    from .formats import MARKET_SOURCES

    imported = loaded.imported
    order = sorted(imported.per_source, key=lambda s: (s not in MARKET_SOURCES, s))
    rows = [(source, imported.per_source[source], imported.outcomes[source]) for source in order]
    return rows, ("total", sum(imported.per_source.values()), sum(imported.outcomes.values()))


def written_lines(loaded: Loaded, out: Path, tuples: Path | None, written: list[CombinationRun | str]) -> list[str]:
    """What :func:`write_import` wrote: the questions (and the market rows kept as information only), the
    COMBINATION tuples, and each forecast set's lines or why none were written."""
    imported, lines = loaded.imported, []
    if imported.questions:
        repeated = f" ({loaded.repeated} met twice, kept once)" if loaded.repeated else ""
        lines.append(f"{len(imported.questions)} questions written to {out}{repeated}")
    if imported.questions and imported.unresolved_markets:
        lines.append(
            f"{imported.unresolved_markets} unresolved market rows: their current value is kept as information "
            "(metadata.forecastbench.resolution), not as an outcome"
        )
    if tuples is not None:
        lines.append(f"{len(imported.tuples)} COMBINATION tuple(s)" + (
            f" in {tuples / COMBINATION_FILE}" if imported.tuples else ""))  # fmt: skip
    return lines + [str(run) for run in written]


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
