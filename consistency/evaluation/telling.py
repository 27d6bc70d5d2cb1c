"""What a finished (or priced, or capped) run says about itself, as plain sentences.

The command line prints them; a script or a notebook can log them. Keeping the wording here means
``cc evaluate`` only chooses where each sentence goes (stdout or stderr), not what it says.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..store.layout import SUMMARY
from ..store.meta import Totals
from ..store.records import truth_summary_of

if TYPE_CHECKING:
    from .estimation import Estimate
    from .runner import EvaluationResult

#: Failures listed one by one at the end of a run; the rest are counted (all are in the summary file).
SHOWN_FAILURES = 5


def scores_text(result: EvaluationResult) -> str | None:
    """A ground-truth run's scores, a line per other question type (None for a consistency run: its table)."""
    if result.report is not None:
        return None
    s = truth_summary_of(result.record)
    lines = [
        f"questions {s.total_questions}  scored {s.scored}  failed {s.failed} ({_fmt(s.fraction_failed, 3)})",
        f"Brier score {_fmt(s.avg_brier_score)}  log score {_fmt(s.avg_log_score)} bits  "
        f"calibration error {_fmt(s.calibration_error)}",
    ]
    lines += [scores.line(kind) for kind, scores in s.by_type.items()]  # multiple-choice, numeric, date questions
    return "\n".join(lines)


def totals_lines(result: EvaluationResult) -> list[str]:
    """Questions, failures, calls and cost over every session (and this one's, when resumed); answered
    questions that could not be scored for want of a resolution."""
    record = result.record
    totals, session, count = record.totals or Totals(), record.session_totals(), len(record.sessions or [])
    part = (
        f" over {count} sessions (this one: {session.calls or 0} calls, {session.cache_hits or 0} "
        f"cache hits, ${session.cost or 0:.4f})"
        if count > 1
        else ""
    )
    bot = record.forecaster is not None and record.forecaster.bot
    lines = [
        f"{record.questions or 0} questions, {len(result.failures)} failed; {totals.calls or 0} model calls, "
        f"{totals.cache_hits or 0} cache hits, ${totals.cost or 0:.4f}{part}"
        + (" (a bot's own LLM calls go through litellm and are not counted here)" if bot else "")
    ]
    summary = truth_summary_of(record) if result.report is None else None
    if summary is not None and summary.unresolved and summary.scored:
        lines.append(f"{summary.unresolved} answered question(s) have no resolution: forecast, not scored")
    return lines


def closing_lines(result: EvaluationResult) -> list[str]:
    """The first failures with their errors, the run directory and its status, and how to finish it."""
    failures = result.failures
    lines = [f"  failed {f['question_id']}: {f['error']}" for f in failures[:SHOWN_FAILURES]]
    if len(failures) > SHOWN_FAILURES:
        lines.append(f"  ... and {len(failures) - SHOWN_FAILURES} more (listed in {SUMMARY})")
    lines.append(f"run directory: {result.run_dir} ({result.record.status})")
    if result.record.status != "complete" or failures:
        lines.append(f"retry what is missing with: cc evaluate --resume {result.run_dir}")
    return lines


def after_stop(exc: BaseException, resume_dir: Path | None = None) -> str | None:
    """Where a run stopped by ``exc`` (an error carrying ``run_dir``, or Ctrl-C) is, and how to finish it."""
    interrupted = isinstance(exc, KeyboardInterrupt)
    run_dir = getattr(exc, "run_dir", None) or (resume_dir if interrupted else None)
    if run_dir is None:
        return "before the run directory was made: nothing to resume" if interrupted else None
    if interrupted:
        return f"finished forecasts are saved in {run_dir}; resume with: cc evaluate --resume {run_dir}"
    return f"run directory: {run_dir} (failed); once fixed, resume it with: cc evaluate --resume {run_dir}"


def cap_sentence(result: EvaluationResult) -> str:
    """A run stopped by its spending cap: what it spent, what is saved where, and how to go on."""
    record, where = result.record, result.run_dir
    stopped = record.stopped
    assert stopped is not None  # asked only when the cap stopped the run
    return (
        f"spending cap reached: ${stopped.spent or 0:.4f} recorded against --max-cost "
        f"{stopped.max_cost or 0:g}; {record.answered} of {record.questions or 0} forecasts are saved in {where} "
        f"(interrupted); go on with a higher cap: cc evaluate --resume {where} --max-cost USD"
    )


def estimate_notes(found: Estimate, max_cost: float | None = None) -> list[str]:
    """What a dry run's figures leave out or imply: how tokens were counted, the cap, unpriced models,
    forecasts the simulation could not follow."""
    done = f", {found.answered} already answered" if found.answered else ""
    lines = [f"{found.forecasts} forecasts{done}; no model was called and no run directory written"]
    for m in found.models:
        lengths = "; ".join(f"{shape}: {how}" for shape, how in m.answers.items())
        lines.append(f"{m.model}: tokens counted with {m.tokenizer}; answer lengths: {lengths}")
    if max_cost is not None and found.cost >= max_cost:
        lines.append(
            f"the estimate (${found.cost:.4f}) reaches --max-cost {max_cost:g}: the run would stop at the cap, "
            "resumable"
        )
    if found.unpriced:
        lines.append(f"no price for {', '.join(found.unpriced)}: add it to CC_PRICES to see dollars")
    if found.not_simulated:
        lines.append(
            f"{found.not_simulated} forecast(s) failed in the dry run, so their later calls are not counted "
            f"({'; '.join(found.reasons)})"
        )
    return lines


def _fmt(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"
