"""The JSON files of a result directory other than ``run.json``, typed where read.

``summary.json`` (``cc score``, ``cc evaluate``, ``cc repair``), ``ground_truth_summary.json`` (ours and the
paper's), ``attack.json`` and ``repair.json``. As with :class:`~.meta.RunMeta`, the fields readers use are
typed and any other key is kept as written, so files of other versions still read; a file that is not a
JSON object, or a typed field of the wrong type, is a :class:`RecordError` naming the file and the field.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import InputError
from ..jsonl import parse_json
from ..metrics.scoring import METRICS
from ..metrics.stats import MetricStats
from .meta import ForecasterRecord, RunMeta

R = TypeVar("R", bound=BaseModel)


class RecordError(InputError):
    """A result file that cannot be read as what its name says; ``str()`` names it and the field."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow")


class CheckSummary(_Record):
    """One check's entry in ``summary.json``: its lines and the statistics of each metric."""

    check: str
    path: str | None = None
    lines: int = 0
    scored: int = 0
    unscorable: int = 0
    default: MetricStats | None = None
    default_scaled: MetricStats | None = None
    frequentist: MetricStats | None = None

    def stats(self, metric: str) -> MetricStats | None:
        """The statistics of ``metric`` (one of :data:`METRICS`)."""
        return getattr(self, metric) if metric in METRICS else None


class LineProblem(_Record):
    """A line that could not be scored (``errors`` of ``summary.json``)."""

    path: str | None = None
    line: int | None = None
    field: str | None = None
    message: str | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}"
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


class QuestionFailure(_Record):
    """A question the forecaster gave no forecast for, and why (``failures`` of a summary)."""

    key: str | None = None
    question_id: str | None = None
    title: str | None = None
    error: str | None = None

    def __str__(self) -> str:
        return f"{self.title or self.question_id}: {self.error}"


class ScoreSummary(_Record):
    """``summary.json``: every check's statistics, the aggregate, unscorable lines and (runs) failed questions."""

    consistency_version: str | None = None
    created: str | None = None
    inputs: list[str] = []
    parameters: dict[str, Any] = {}
    checks: dict[str, CheckSummary] = {}
    aggregate: dict[str, dict[str, Any]] = {}
    errors: list[LineProblem] = []
    failures: list[QuestionFailure] = []
    forecaster: ForecasterRecord | None = None
    repair: dict[str, Any] | None = None


class Interval(_Record):
    mean: float | None = None
    ci95: tuple[float, float] | None = None


class TypeScores(_Record):
    """The scores of one type of non-yes/no question in a ground-truth run (``by_type``): multi-class Brier and log
    score for multiple choice, log score of the density and CRPS for numeric and date (logs in bits)."""

    scored: int = 0
    brier_score: Interval | None = None
    log_score_bits: Interval | None = None
    crps_score: Interval | None = None

    def line(self, kind: str) -> str:
        """``multiple_choice: 4 scored, Brier 0.512, log score 1.203 bits`` (what ``cc evaluate`` prints)."""
        parts = [f"{kind}: {self.scored} scored"]
        for name, value, unit in (("Brier", self.brier_score, ""), ("log score", self.log_score_bits, " bits"),
                                  ("CRPS", self.crps_score, "")):  # fmt: skip
            if value is not None and value.mean is not None:
                parts.append(f"{name} {value.mean:.4f}{unit}")
        return ", ".join(parts)


class TypedQuestion(_Record):
    """The part of a scored question a ranking needs: its id and type (the rest is kept as written)."""

    id: str
    question_type: str


class TypedResult(_Record):
    """One line of a ground-truth run's scored multiple-choice, numeric or date questions: the question, the
    forecast (``probs`` or ``cdf``), the resolution and the forecast's proper scores (logs in bits)."""

    question: TypedQuestion
    forecast: dict[str, Any] = {}
    resolution: Any = None
    brier_score: float | None = None
    log_score_bits: float | None = None
    crps_score: float | None = None


class GroundTruthSummary(_Record):
    """``ground_truth_summary.json``: a ground-truth run's averages (ours), or the paper's, which names the
    forecaster by its class (``forecaster``) and configuration."""

    total_questions: int | None = None
    answered: int | None = None
    failed: int | None = None
    scored: int | None = None
    unresolved: int | None = None
    fraction_failed: float | None = None
    avg_brier_score: float | None = None
    avg_log_score: float | None = None
    brier_score: Interval | None = None
    base_rate: float | None = None
    calibration_error: float | None = None
    failures: list[QuestionFailure] = []
    unreadable_lines: list[str] = []
    by_type: dict[str, TypeScores] = {}  # multiple_choice, numeric, date: their own scores
    forecaster: str | None = None  # the paper's: the forecaster's class
    full_forecaster_config: dict[str, Any] | None = None

    def recorded_forecaster(self) -> ForecasterRecord | None:
        """The paper's class and configuration as a forecaster record (ours keep it in ``run.json``)."""
        if not self.forecaster:
            return None
        return ForecasterRecord(forecaster_class=self.forecaster, full_forecaster_config=self.full_forecaster_config)


def truth_summary_of(meta: RunMeta) -> GroundTruthSummary:
    """A ground-truth run's ``summary`` (its averages, as in ``ground_truth_summary.json``), typed; a bad
    value is a :class:`~.meta.RunMetaError` naming ``summary.field``."""
    return meta.part("summary", GroundTruthSummary)


class ViolationStats(_Record):
    """The violations of some tuples of one check: how many, their mean and largest, how many above the threshold."""

    n: int = 0
    mean: float | None = None
    max: float | None = None
    above_threshold: int = 0


class CheckFinds(_Record):
    """One check in an attack's summary: the returned tuples, all it searched, and the uniform baseline's."""

    found: ViolationStats = ViolationStats()
    searched: ViolationStats = ViolationStats()
    uniform: ViolationStats = ViolationStats()


class FamilyFinds(_Record):
    """What one candidate family of an attack cost and found."""

    tuples: int = 0
    forecasts: int = 0
    rejected: int = 0
    returned: int = 0
    mean_violation: float | None = None
    above_threshold: int = 0


class TopField(_Record):
    """A field of a most violated tuple: its question's title and forecast (``prob`` for a yes/no field; ``columns``,
    the check's columns of a categorical field: one value per outcome; ``quantiles`` of a numeric field over its
    whole grid, in the question's unit)."""

    field: str
    title: str = ""
    prob: float | None = None
    columns: dict[str, float] | None = None
    quantiles: dict[str, float] | None = None
    date: bool = False  # the quantiles are dates (POSIX seconds)

    def shown(self) -> str:
        """The forecast as a report writes it: ``0.300``, ``X[0] 0.300, X[1] 0.700`` or ``quartiles 1.2, 1.4, 1.6``."""
        if self.columns is not None:
            return ", ".join(f"{name} {value:.3f}" for name, value in self.columns.items())
        if self.quantiles is not None:
            return "quartiles " + ", ".join(map(self._value, self.quantiles.values()))
        return "—" if self.prob is None else f"{self.prob:.3f}"

    def _value(self, x: float) -> str:
        if self.date:
            return datetime.fromtimestamp(x, UTC).date().isoformat()
        return f"{float(f'{x:.4g}'):.15g}"  # four significant digits: 95510 and 2030000, not 9.551e+04


class TopTuple(_Record):
    check: str
    violation: float | None = None
    family: str = ""
    lineage: dict[str, Any] = {}
    fields: list[TopField] = []

    @property
    def how(self) -> str:
        """The mutation that made it, ``seed`` for a seed tuple, else empty."""
        mutation = self.lineage.get("mutation")
        return str(mutation) if mutation else ("seed" if "seed" in self.lineage else "")


class Spent(_Record):
    """Forecasts of the target charged to the search and to the uniform baseline (None: no baseline)."""

    search: int = 0
    baseline: int | None = None
    asked_this_session: int | None = None


class ModelUse(_Record):
    calls: int = 0
    cache_hits: int = 0
    cost: float = 0.0


class AttackSummary(_Record):
    """An attack's ``summary`` (in ``attack.json``; ``cc attack`` prints it, ``cc report`` shows it)."""

    threshold: float
    budget: int
    keep: int
    rounds: int = 0
    forecasts: Spent = Spent()
    target_llm: ModelUse = ModelUse()
    generator_llm: ModelUse | None = None
    tuples_evaluated: int = 0
    attack_mean_violation: float | None = None
    random_mean_violation: float | None = None
    random_all_mean_violation: float | None = None
    attack_over_random: float | None = None
    found_above_threshold: int = 0
    per_check: dict[str, CheckFinds] = {}
    families: dict[str, FamilyFinds] = {}
    top: list[TopTuple] = []
    seeds_skipped: list[str] = []


class AttackRecord(_Record):
    """``attack.json``: an attack's target, settings, status and, once finished, its ``summary``."""

    forecaster: ForecasterRecord | None = None
    forecaster_spec: str | None = None
    checks: list[str] = []
    status: str | None = None
    budget: int | None = None
    summary: AttackSummary | None = None


class SearchLogRecord(_Record):
    """One line of an attack's ``search_log.jsonl``: a tuple the search (or the uniform baseline) scored."""

    key: str
    sampler: str  # "search" or "baseline"
    check: str
    round: int | None = None
    family: str | None = None
    lineage: dict[str, Any] = {}  # how it was made: its parent, the mutation, or the seed
    cost: int = 0
    violation: float | None = None  # arbitrage; None when it could not be scored
    frequentist: float | None = None
    titles: list[str] = []
    error: str | None = None
    returned: bool = False


class RealizedRecord(_Record):
    """Mean scores on resolved questions before and after a repair (``realized`` of ``repair.json``)."""

    n: int = 0
    brier_before: float | None = None
    brier_after: float | None = None
    log_before: float | None = None
    log_after: float | None = None


class RepairTotalRecord(_Record):
    """The totals of ``repair.json``."""

    tuples: int = 0
    moved: float = 0.0
    guaranteed: float = 0.0
    violation_before: float | None = None
    violation_after: float | None = None
    realized: RealizedRecord = RealizedRecord()


class RepairCheckRecord(RepairTotalRecord):
    """One check of ``repair.json`` (written by :class:`consistency.repair.report_model.RepairReport`): its
    totals, and which check."""

    check: str
    class_name: str | None = None


class RepairRecord(_Record):
    """``repair.json``: what a repair did, per check and in total (the fields readers use)."""

    source: str | None = None
    score: str | None = None
    joint: bool | None = None
    questions: int | None = None
    checks: list[RepairCheckRecord] = []
    total: RepairTotalRecord = RepairTotalRecord()
    seconds: float | None = None


def read_record(path: Path, model: type[R]) -> R:
    """The JSON object in ``path`` checked as ``model``; a :class:`RecordError` with one sentence otherwise."""
    try:
        data = parse_json(path.read_bytes().decode("utf-8").removeprefix("\ufeff"))
    except OSError as exc:
        raise RecordError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise RecordError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except ValueError as exc:
        raise RecordError(f"{path}: cannot read it as JSON ({exc})") from None
    if not isinstance(data, dict):
        raise RecordError(f"{path}: expected a JSON object, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top)"
        raise RecordError(f"{path}: {where}: {first['msg']}") from None


def optional_record(path: Path, model: type[R]) -> R | None:
    """:func:`read_record` when ``path`` is a file, else None."""
    return read_record(path, model) if path.is_file() else None
