"""Asking a forecaster every distinct question of a run once, journaled so a run can resume."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Annotated, Any

from annotated_doc import Doc
from annotated_types import Ge, Gt

from ..fields import Concurrency
from ..forecasters import Forecaster, ForecastOutcome, Occurrence
from ..jsonl import cut_torn_tail
from ..llm import LLM, LLMSettings
from ..llm.batch import BATCHES, BatchProgress, unfinished
from ..llm.fatal import FatalError
from ..models import ForecastingQuestion
from ..store.meta import RunMeta, RunOptionsRecord
from ..write_errors import fix_for
from . import sessions
from .rundir import TRANSCRIPT, RunDir, RunDirError, now
from .spending import CappedLLM, stopped_record

log = logging.getLogger(__name__)

#: How much of a model's unusable answer a failure record keeps.
RAW_LIMIT = 2000


class RunStopped(RunDirError):
    """The run could not go on (its files cannot be written); it is left resumable."""


@dataclass(frozen=True)
class Ask:
    """One forecast the run needs: a distinct question (or, for context-dependent forecasters, an occurrence)."""

    key: str
    question: ForecastingQuestion
    occurrence: Occurrence | None = None


@dataclass
class RunOptions:
    """How to run: everything that does not change what a score means."""

    concurrency: Concurrency = 32
    timeout: Annotated[float | None, Gt(0), Doc("Seconds per question before it is recorded as failed.")] = 300.0
    llm: LLMSettings = field(default_factory=LLMSettings)
    #: no new model call once the run's recorded spend (all its sessions) reaches it (see .spending)
    max_cost: Annotated[
        float | None,
        Ge(0),
        Doc(
            "Stop the run once its recorded spend reaches this many USD (status interrupted, exit 3); "
            "resume with a higher --max-cost to go on."
        ),
    ] = None
    on_start: Callable[[Tally], None] | None = None
    on_record: Callable[[dict[str, Any]], None] | None = None
    on_batch: Callable[[BatchProgress], None] | None = None  # batch mode: whenever a batch changes


def recorded_options(options: RunOptions) -> dict[str, Any]:
    """How a session runs, as ``run.json`` keeps it: a resume starts from what the last session used."""
    run = RunOptionsRecord(concurrency=options.concurrency, timeout=options.timeout, max_cost=options.max_cost)
    return {"llm": options.llm.model_dump(mode="json"), "run_options": run}


def options_of(meta: RunMeta) -> RunOptions:
    """The options ``run.json`` recorded (runs from before ``run_options`` was kept get the defaults)."""
    run = (meta.run_options or RunOptionsRecord()).model_dump(exclude_unset=True)
    return replace(RunOptions(**run), llm=LLMSettings.model_validate(meta.llm or {}))


@dataclass
class Tally:
    """Live counts for progress displays."""

    total: int = 0
    done: int = 0
    failed: int = 0
    cached: int = 0
    cost: float = 0.0

    def add(self, record: dict[str, Any]) -> None:
        """Count one finished question's journal record: answered or failed, served whole from the cache, its cost."""
        ok = record.get("forecast") is not None
        self.done += ok
        self.failed += not ok
        self.cached += bool(record.get("calls")) and record.get("cache_hits") == record.get("calls")
        self.cost += record.get("cost") or 0.0

    @property
    def finished(self) -> int:
        """Questions with a result, answered or failed."""
        return self.done + self.failed

    def text(self) -> str:
        return f"failed {self.failed}  cached {self.cached}  ${self.cost:.4f}"


def question_key(question: ForecastingQuestion) -> str:
    """Questions are the same when their id and text are: a reused id with new text is a new question."""
    digest = hashlib.sha256(f"{question.title}\x00{question.body}".encode()).hexdigest()[:10]
    return f"{question.id}#{digest}"


def occurrence_key(occurrence: Occurrence) -> str:
    digest = hashlib.sha256("|".join(occurrence.tuple_ids).encode()).hexdigest()[:10]
    return f"{occurrence.check}.{occurrence.field}#{digest}"


def record_of(key: str, outcome: ForecastOutcome) -> dict[str, Any]:
    """A journal line. Call counts ride along while running and are dropped when the run completes."""
    return {
        "key": key,
        "question_id": outcome.question.id,
        "forecast": outcome.forecast.model_dump(mode="json") if outcome.forecast else None,
        "error": outcome.error,
        "raw": outcome.raw[:RAW_LIMIT] if outcome.raw else None,
        "calls": outcome.note.calls,
        "cache_hits": outcome.note.cache_hits,
        "cost": outcome.note.cost,
    }


def canonical(record: dict[str, Any]) -> dict[str, Any]:
    """What stays in a finished run's journal: the same for a resumed and an uninterrupted run."""
    return {k: record.get(k) for k in ("key", "question_id", "forecast", "error", "raw")}


async def ask_all(
    forecaster: Forecaster,
    asks: Iterable[Ask],
    run: RunDir,
    done: dict[str, dict[str, Any]],
    llm: LLM,
    *,
    concurrency: int,
    timeout: float | None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
    did: dict[str, int] | None = None,
) -> None:
    """Forecast every ask not already answered in ``done`` (failures are asked again), journaling each.

    Raises :class:`FatalError` (what finished is journaled) on an error that cannot succeed on retry.
    """
    pending = [a for a in asks if done.get(a.key, {}).get("forecast") is None]
    concurrency = llm.settings.width(concurrency, len(pending))
    if llm.settings.batch:  # a question waits for its batch: no per-question clock
        timeout = None

    stopped: list[OSError] = []

    def journal(outcome: ForecastOutcome) -> None:
        if stopped:  # the journal cannot be written (a full disk): the run is stopping, drop the rest
            return
        key = occurrence_key(outcome.occurrence) if outcome.occurrence else question_key(outcome.question)
        record = record_of(key, outcome)
        try:
            run.append(record)
        except OSError as exc:
            stopped.append(exc)
            raise
        done[key] = record
        if did is not None:
            did["answered" if outcome.ok else "failed"] += 1
        if on_record is not None:
            on_record(record)

    async with llm:
        forecaster.attach(llm)
        forecaster.use_run_dir(run.path)
        try:
            if pending:
                log.info("asking %d question(s), %d already answered", len(pending), len(done))
                await forecaster.forecast_many(
                    [a.question for a in pending],
                    occurrences=[a.occurrence for a in pending],
                    concurrency=concurrency,
                    timeout=timeout,
                    on_outcome=journal,
                )
        finally:
            forecaster.attach(None)
            forecaster.use_run_dir(None)
            run.close()


def _client(options: RunOptions, opened: sessions.Sessions, run: RunDir) -> LLM:
    """The session's LLM client: with a spending cap, one that knows what earlier sessions spent."""
    where = {"transcript": run.path / TRANSCRIPT, "batches": run.path / BATCHES}
    if options.max_cost is None:
        return LLM(options.llm, **where)
    if options.llm.batch:
        log.warning("a spending cap cannot stop requests already sent in batches: the cap applies to direct calls")
    spent = float(opened.totals.cost or 0.0)
    return CappedLLM(options.llm, options.max_cost, spent, **where)


def drive(
    forecaster: Forecaster,
    asks: list[Ask],
    run: RunDir,
    options: RunOptions,
    finish: Callable[[dict[str, dict[str, Any]]], dict[str, Any]],
) -> RunMeta:
    """Ask what is missing, then always ``finish(done)`` (write results, even after Ctrl-C or a
    failure) and record the outcome and this session's counts in ``run.json``; returns its final
    contents. Raises :class:`FatalError` (with ``run_dir`` set) after recording a ``failed`` run."""
    run.acquire()  # (already ours if we just created it) no second process works on this run meanwhile
    done = run.open_journal()
    cut_torn_tail(run.path / TRANSCRIPT)  # a line torn by a kill or a refused write (file-size limit, full disk)
    answered_before = sum(1 for a in asks if (done.get(a.key) or {}).get("forecast") is not None)
    tally = Tally(total=len(asks), done=answered_before)
    if options.on_start is not None:
        options.on_start(tally)
    opened = sessions.begin(run.meta(), run.path / TRANSCRIPT, run.journal)
    if not options.llm.batch and unfinished(run.path / BATCHES):
        log.warning("%s has batches still running: resuming in batch mode to collect them", run.path)
        options = replace(options, llm=options.llm.model_copy(update={"batch": True}))
    run.update(**opened.changes(), status="running", questions=len(asks), stopped=None, **recorded_options(options))
    llm = _client(options, opened, run)
    llm.on_batch = options.on_batch
    status, fatal = "interrupted", None
    did = {"asked": 0, "answered": 0, "failed": 0}
    stopped: OSError | None = None
    try:
        asyncio.run(
            ask_all(
                forecaster,
                asks,
                run,
                done,
                llm,
                concurrency=options.concurrency,
                timeout=options.timeout,
                on_record=options.on_record,
                did=did,
            )
        )
        status = "complete"
        if did["failed"] and not did["answered"] and not answered_before:
            status = "failed"  # not one forecast: nothing was measured (the reasons are in the journal)
        if stopped_record(llm, options.max_cost) is not None:  # questions were left unasked at the cap
            status = "interrupted"
        if llm.write_error is not None:  # the transcript could not be written: questions after it were not asked
            status, stopped = "interrupted", llm.write_error
    except FatalError as exc:
        status, fatal = "failed", exc
    except OSError as exc:  # a full disk, a file-size limit...: what is journaled is safe, stop here
        stopped = exc
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: recorded as interrupted below; the caller names the run
        exc.run_dir = run.path  # type: ignore[attr-defined]
        raise
    finally:
        try:
            extra = finish(done)
            if status == "complete":
                run.rewrite_journal(canonical(done[a.key]) for a in asks if a.key in done)
            did["asked"] = did["answered"] + did["failed"]
            closed = sessions.end(run.meta(), llm.stats.as_dict(), status, did)
            failure = str(fatal) if fatal else ("every question failed" if status == "failed" else None)
            cap = stopped_record(llm, options.max_cost)
            meta = run.update(**closed.changes(), status=status, ended=now(), failure=failure, stopped=cap, **extra)
        except OSError as exc:
            stopped = stopped or exc
            status = "interrupted"
        run.release()
    if stopped is not None:
        saved = sum(1 for r in done.values() if r.get("forecast") is not None)
        raise RunStopped(
            f"cannot write {stopped.filename or run.path}: {stopped.strerror or stopped}; the run stopped with "
            f"{saved} forecast(s) saved: {fix_for(stopped)} and finish it with --resume {run.path}"
        ) from stopped
    log.info("run %s: %s", run.path, status)
    if fatal is not None:
        fatal.run_dir = run.path
        raise fatal
    return meta
