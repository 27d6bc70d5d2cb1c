"""inspect logs to and from ``cc`` files.

:func:`score_log` (``cc score LOG.eval``) turns a log of a ``consistency/...`` task into our
per-check forecast files and scores them as ``cc score`` scores any forecasts: the numbers equal the
task's metrics. :func:`export_run` (``cc export inspect RUN_DIR``) writes a ``cc`` run as an inspect
log for inspect's viewer. inspect_ai is imported inside the functions, so ``cc`` needs the
``[inspect]`` extra only when given a log.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ...checks import get_check
from ...evaluation.scoring import ScoreReport, ScoringError, score_path, write_report, write_stats
from ...extras import install_hint
from ...jsonl import LineError, atomic_write, dump_line
from ...metrics.scoring import ScoreParams
from .answers import Answer
from .dataset import ANSWERS_KEY, TupleMetadata, check_order
from .logzip import UnsafeLog, check_eval_zip

#: The name our scorer has in a log's sample scores.
SCORER = "consistency_scorer"
_SUFFIXES = (".eval", ".json")


class InspectLogError(ScoringError):
    """A file that is not a readable log of a ``consistency/...`` task (one sentence saying why)."""


def local_path(path: str | Path) -> Path:
    """A path as given, or the file a ``file://`` URI names (inspect prints log locations as URIs)."""
    text = str(path)
    if text.startswith("file:"):
        from urllib.parse import unquote, urlparse

        return Path(unquote(urlparse(text.replace("file:/", "file:///", 1) if "://" not in text else text).path))
    return Path(path)


def is_inspect_log(path: str | Path) -> bool:
    """An inspect log by its name and first bytes; never imports inspect_ai."""
    path = local_path(path)
    if not path.is_file() or path.suffix not in _SUFFIXES:
        return False
    if path.suffix == ".eval":
        return True
    with path.open("rb") as fh:
        head = fh.read(4096)
    return head.lstrip().startswith(b"{") and b'"eval"' in head and b'"version"' in head


def _require_inspect() -> None:
    try:
        import inspect_ai  # noqa: F401
    except ImportError:
        raise InspectLogError(f"reading an inspect log needs inspect_ai: {install_hint('inspect')}") from None


@dataclass
class LogForecasts:
    """What a log held: forecast files written, samples that could not be scored, and where it came from."""

    files: list[Path] = field(default_factory=list)
    failures: dict[str, list[LineError]] = field(default_factory=lambda: defaultdict(list))  # by check class name
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def errors(self) -> list[LineError]:
        return [e for errors in self.failures.values() for e in errors]


def write_forecasts(log_path: str | Path, out_dir: str | Path) -> LogForecasts:
    """``<Checker>.jsonl`` forecast lines, one per scored sample, into ``out_dir``.

    A sample without a usable answer for every field (a malformed answer, or an error that stopped
    it) is not a line: it is returned as a :class:`LineError` naming the tuple's source line and why.
    """
    _require_inspect()
    from inspect_ai.log import read_eval_log

    log_path = local_path(log_path)
    try:
        log = _read(log_path, read_eval_log)
    except UnsafeLog as exc:
        raise InspectLogError(f"{log_path}: refused before reading it: {exc}") from None
    except Exception as exc:  # inspect raises many kinds for an unreadable file
        raise InspectLogError(f"{log_path}: not a readable inspect log ({type(exc).__name__}: {exc})") from None
    if not log.samples:
        raise InspectLogError(f"{log_path}: the log holds no samples (status {log.status})")
    lines: dict[str, list[tuple[int, int, dict[str, Any]]]] = defaultdict(list)
    result = LogForecasts(info=_log_info(log, log_path))
    for position, sample in enumerate(log.samples, 1):
        try:
            meta = TupleMetadata.model_validate(sample.metadata or {})
        except ValidationError:
            raise InspectLogError(
                f"{log_path}: sample {sample.id} is not a consistency tuple (no check in its metadata)"
            ) from None
        check = get_check(meta.check)
        line = position if meta.line is None else meta.line
        source = str(log_path) if meta.source is None else meta.source
        answers = _answers(sample)
        problems = {
            f: (answers[f].error if f in answers else None) or "not asked"
            for f in check.field_names
            if f not in answers or not answers[f].ok
        }
        if sample.error is not None and not problems:
            problems = dict.fromkeys(check.field_names, f"the sample failed: {sample.error.message}")
        if problems:
            result.failures[check.class_name] += [
                LineError(source, line, f, f"no forecast: {why}") for f, why in problems.items()
            ]
            lines.setdefault(check.class_name, [])  # the check is still part of the run
            continue
        entry = {
            f: {
                "question": meta.questions[f],
                "forecast": {**answers[f].forecast_data(), "metadata": _forecast_metadata(answers[f], sample)},
            }
            for f in check.field_names
        }
        lines[check.class_name].append((line, sample.epoch, {"line": entry}))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for check in (get_check(name) for name in sorted(lines, key=check_order)):
        target = out / f"{check.class_name}.jsonl"
        with atomic_write(target) as fh:
            for _, _, obj in sorted(lines[check.class_name], key=lambda item: item[:2]):
                fh.write(dump_line(obj))
        result.files.append(target)
    return result


def _read(path: Path, read_eval_log: Any) -> Any:
    """The log at ``path``; an ``.eval`` archive is checked first (:mod:`.logzip`) and then read through
    Python's ``zipfile``, the view of the archive the check had, so no read exceeds the sizes it checked."""
    if path.suffix != ".eval":
        return read_eval_log(str(path))
    check_eval_zip(path)
    with path.open("rb") as fh:
        return read_eval_log(fh, format="eval")


def _answers(sample: Any) -> dict[str, Answer]:
    score = (sample.scores or {}).get(SCORER)
    recorded = (score.metadata or {}).get("answers") if score is not None else None
    if recorded is None:
        recorded = (sample.store or {}).get(ANSWERS_KEY, {})
    return {f: Answer.model_validate(a) for f, a in recorded.items()}


def _forecast_metadata(answer: Answer, sample: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"inspect_sample": sample.id, "inspect_epoch": sample.epoch}
    if answer.reasoning is not None:
        out["reasoning"] = answer.reasoning
    return out


def _log_info(log: Any, path: Path) -> dict[str, Any]:
    return {
        "log": str(path),
        "task": log.eval.task,
        "model": log.eval.model,
        "status": log.status,
        "created": log.eval.created,
        "task_args": log.eval.task_args,
    }


def score_log(
    log_path: str | Path, out_dir: str | Path, params: ScoreParams | None = None, check: str | None = None
) -> ScoreReport:
    """Score a log's answers as ``cc score`` scores forecast files, writing the same outputs into ``out_dir``."""
    params = params or ScoreParams()
    log_path = local_path(log_path)
    with tempfile.TemporaryDirectory(prefix="cc-inspect-") as tmp:
        found = write_forecasts(log_path, tmp)
        if not found.files:
            raise InspectLogError(f"{log_path}: no sample of the log has a forecast for every field")
        report = score_path(Path(tmp), params, check)
        by_check = {f.check.class_name: f for f in report.files}
        for name, errors in found.failures.items():
            if name in by_check:
                by_check[name].errors.extend(errors)
        report.inputs = [str(log_path)]
        write_report(report, out_dir)
        for scored in report.files:  # the files named in summaries are the log, not the temporary copies
            scored.path = Path(str(log_path))
        write_stats(report, Path(out_dir), report.summary() | {"inspect": found.info})
    return report


def export_run(run_dir: str | Path, target: str | Path, params: ScoreParams | None = None) -> dict[str, float]:
    """Write the forecasts of a ``cc`` run (any directory of ``<Checker>.jsonl`` forecast files) as an
    inspect log at ``target`` (``.eval`` or ``.json``), scored as the inspect task scores; returns its metrics."""
    _require_inspect()
    from inspect_ai.log import write_eval_log

    from .scorer import check_metrics

    params = params or ScoreParams()
    run, target = Path(run_dir), Path(target)
    if target.suffix not in _SUFFIXES:
        raise InspectLogError(f"{target}: an inspect log ends in .eval or .json")
    exported = _export_samples(run, params)
    if not exported.samples:
        raise InspectLogError(f"{run}: no forecast line to export")
    metrics = check_metrics(exported.rows, params)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_eval_log(_eval_log(run, exported, metrics, params), str(target))
    return metrics


@dataclass
class _Exported:
    """A run's forecast lines as inspect samples, each line's score by check, and the lines left out."""

    samples: list[Any] = field(default_factory=list)
    rows: list[tuple[str, Any]] = field(default_factory=list)
    skipped: int = 0


def _export_samples(run: Path, params: ScoreParams) -> _Exported:
    """Every forecast line of the run as a scored sample, in file and line order; a bad line is counted, not kept."""
    from inspect_ai.log import EvalSample

    from ...evaluation.scoring import forecast_files
    from ...files import FileKind, detect, validate_lines
    from ...models import ForecastLine
    from .dataset import describe, tuple_metadata
    from .scorer import tuple_score

    out = _Exported()
    for path in forecast_files([run]):
        info = detect(path)
        if info.kind is not FileKind.FORECASTS or info.check is None:
            raise InspectLogError(f"{path}: holds {info.kind}, not forecast lines")
        check = info.check
        for number, item in validate_lines(info):
            if not isinstance(item, ForecastLine):
                out.skipped += 1
                continue
            questions = {f: item.line[f].question for f in check.field_names}
            answers = {f: Answer.of(item.line[f].forecast) for f in check.field_names}
            score = tuple_score(check.class_name, answers, params, questions)
            out.rows.append((check.class_name, score.value))
            out.samples.append(
                EvalSample(
                    id=f"{check.class_name}:{number}",
                    epoch=1,
                    input=describe(check.name, questions),
                    target="",
                    metadata=tuple_metadata(check.class_name, number, str(path), questions),
                    scores={SCORER: score},
                    store={ANSWERS_KEY: {f: a.model_dump() for f, a in answers.items()}},
                )
            )
    return out


def _eval_log(run: Path, exported: _Exported, metrics: dict[str, float], params: ScoreParams) -> Any:
    """The log inspect's viewer reads: a finished ``consistency/all`` task over the run, its samples and metrics."""
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalMetric, EvalResults, EvalScore, EvalSpec

    n = len(exported.samples)
    recorded = {"exported_from": str(run), "forecaster": _forecaster_of(run), "skipped": exported.skipped}
    return EvalLog(
        status="success",
        eval=EvalSpec(
            created=_now(),
            task="consistency/all",
            dataset=EvalDataset(name=str(run), samples=n),
            model=f"cc/{run.name}",
            config=EvalConfig(),
            task_args={"tuples": str(run), "epsilon": params.epsilon},
            metadata={"consistency": recorded},
        ),
        results=EvalResults(
            total_samples=n,
            completed_samples=n,
            scores=[
                EvalScore(
                    name=SCORER,
                    scorer=SCORER,
                    metrics={k: EvalMetric(name=k, value=v) for k, v in metrics.items()},
                )
            ],
        ),
        samples=exported.samples,
    )


def _forecaster_of(run: Path) -> dict[str, Any] | None:
    """What the run records of its forecaster (a ``cc evaluate`` run), as written; None when nothing."""
    from ...store.runs import recorded_forecaster

    recorded = recorded_forecaster(run)
    return recorded.model_dump(exclude_unset=True) if recorded else None


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds")
