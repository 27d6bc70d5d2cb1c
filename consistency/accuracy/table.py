"""Forecasts as one long table: the input of every ranking method, from any of our sources.

A row is one forecaster's forecast on one question, with what is known about the question:
its resolution (if resolved), an optional weight, batch, market probability, the time it
resolved and the time it was scheduled to. Sources: a CSV or JSONL long table, the paper's
``ground_truth_results.jsonl`` files, and run directories of ``<Checker>.jsonl`` forecast lines
(one forecaster each, named as its ``run.json`` records, else after the directory). Problems are reported with the file
and line: by default the first bad row is an error; given a ``skipped`` list, each bad row is left out and
recorded there (a :class:`~consistency.jsonl.LineError`), so that one bad row does not cost the rest. A
(forecaster, question) pair given twice with different forecasts (the paper re-asked
questions) is an error unless the caller picks a policy (``duplicates``: mean, first or last);
the table then counts how many pairs the policy merged.
"""

from __future__ import annotations

import csv
import io
import logging
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from ..jsonl import LineError, iter_json_lines, parse_json, utf16_encoding
from ..models import ForecastLine
from ..store import layout
from ..store.runs import find_files, ground_truth_records, one_line, recorded_forecaster
from .inputs import ScoreInputError, outcomes
from .settings import DUPLICATES

log = logging.getLogger(__name__)

#: Columns of the long table; only the first three are required.
COLUMNS = (
    "forecaster",
    "question_id",
    "prob",
    "resolution",
    "weight",
    "batch",
    "market_prob",
    "resolved_at",
    "scheduled_resolution",
)


@dataclass
class ForecastTable:
    """Column arrays of equal length; ``resolution`` is NaN where a question is unresolved."""

    forecaster: np.ndarray  # str
    question_id: np.ndarray  # str
    prob: np.ndarray  # float in [0, 1]
    resolution: np.ndarray  # 0.0 / 1.0 / NaN
    weight: np.ndarray  # float, default 1
    batch: np.ndarray  # str, default ""
    market_prob: np.ndarray  # float or NaN
    resolved_at: np.ndarray  # datetime64[s] or NaT
    scheduled_resolution: np.ndarray  # datetime64[s] or NaT
    sources: list[str] = field(default_factory=list)
    duplicates: int = 0  # (forecaster, question) pairs with differing forecasts merged by the duplicates policy

    def __len__(self) -> int:
        return len(self.prob)

    @property
    def forecasters(self) -> list[str]:
        return sorted(set(self.forecaster.tolist()))

    def codes(self) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
        """Integer codes of forecasters and questions (for sparse and matrix methods)."""
        f_names, f_idx = np.unique(self.forecaster, return_inverse=True)
        q_names, q_idx = np.unique(self.question_id, return_inverse=True)
        return f_idx, q_idx, f_names.tolist(), q_names.tolist()

    def matrix(self) -> tuple[np.ndarray, list[str], list[str]]:
        """Forecasts as an (n_forecasters, n_questions) matrix, NaN where a forecaster did not answer."""
        f_idx, q_idx, f_names, q_names = self.codes()
        out = np.full((len(f_names), len(q_names)), np.nan)
        out[f_idx, q_idx] = self.prob
        return out, f_names, q_names

    def select(self, mask: np.ndarray) -> ForecastTable:
        return ForecastTable(
            **{name: getattr(self, name)[mask] for name in COLUMNS},
            sources=list(self.sources),
            duplicates=self.duplicates,
        )


def _check_policy(duplicates: str) -> None:
    if duplicates not in DUPLICATES:
        raise ScoreInputError(f"unknown duplicates policy {duplicates!r}; expected one of: {', '.join(DUPLICATES)}")


def _merge(first: dict, probs: list[float], duplicates: str) -> dict:
    """One row standing for a pair forecast several times, by the policy (never called with "error")."""
    values = [_float(p) for p in probs]
    prob = {"mean": sum(values) / len(values), "first": values[0], "last": values[-1]}[duplicates]
    return {**first, "prob": prob, "_merged": int(len(set(values)) > 1)}


def _deduplicate(rows: Sequence[dict], where: list[str], duplicates: str) -> tuple[list[dict], list[str], int]:
    """Rows with each (forecaster, question) pair once; differing repeats raise or are merged by the policy."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault((str(r["forecaster"]), str(r["question_id"])), []).append(i)
    if all(len(g) == 1 for g in groups.values()):
        return list(rows), where, sum(int(r.get("_merged", 0)) for r in rows)
    out_rows, out_where, merged = [], [], 0
    for key, idx in groups.items():
        first = rows[idx[0]]
        if len(idx) > 1 and duplicates == "error":
            raise ScoreInputError(
                f"{where[idx[1]]}: forecaster {key[0]!r} has a second forecast on question {key[1]!r} "
                f"(first at {where[idx[0]]}); choose --duplicates mean, first or last to merge repeats"
            )
        if len(idx) > 1:
            first = _merge(first, [rows[i]["prob"] for i in idx], duplicates)
        merged += int(first.get("_merged", 0))
        out_rows.append(first)
        out_where.append(where[idx[0]])
    return out_rows, out_where, merged


class NoForecastsError(ScoreInputError):
    """Nothing to put in a table: the paths hold no yes/no forecast (they may hold other types' results)."""


def _skip(skipped: list[LineError] | None, error: LineError) -> None:
    """Record a bad row in ``skipped``, or (strict: no list given) stop with it."""
    if skipped is None:
        raise ScoreInputError(str(error))
    skipped.append(error)


def _row_error(where: str, message: str) -> LineError:
    """``file:line`` (maybe followed by `` (slot)``, a question of a tuple) and a reason as a :class:`LineError`."""
    path, _, rest = where.rpartition(":")
    number, _, slot = rest.partition(" ")
    if not (path and number.isdigit()):
        return LineError(where, 0, None, message)
    return LineError(path, int(number), f"line.{slot.strip('()')}" if slot else None, message)


#: The usual resolutions, read without numpy (a row at a time adds up over millions of rows).
_RESOLUTIONS = {"yes": 1.0, "no": 0.0, "true": 1.0, "false": 0.0, "1": 1.0, "0": 0.0, 1: 1.0, 0: 0.0}


def _row(r: dict) -> tuple | str:
    """One row's typed values, or why it cannot be used."""
    for name in ("forecaster", "question_id", "prob"):
        if r.get(name) in (None, ""):
            return f"missing {name}"
    prob = _float(r["prob"])
    if not 0.0 <= prob <= 1.0:
        return "prob must be a probability in [0, 1]"
    resolution, value = np.nan, r.get("resolution")
    if value not in (None, "", "null", "None"):
        key = value.strip().lower() if isinstance(value, str) else value
        resolution = _RESOLUTIONS.get(key) if isinstance(key, (str, int, float)) else None
        if resolution is None:  # numpy scalars and the like: the general (slower) reading
            try:
                resolution = outcomes([value])[0]
            except ScoreInputError:
                return f"resolution {value!r} is not yes/no, true/false or 1/0"
    weight = _float(r.get("weight"), 1.0)
    if not (math.isfinite(weight) and weight >= 0):
        return "weight must be a non-negative number"
    market = _float(r.get("market_prob"), np.nan)
    if market < 0 or market > 1:
        return "market_prob must be a probability in [0, 1]"
    try:
        times = [_time(r.get(name)) for name in ("resolved_at", "scheduled_resolution")]
    except ValueError as exc:
        return str(exc)
    return (
        str(r["forecaster"]),
        str(r["question_id"]),
        prob,
        resolution,
        weight,
        str(r.get("batch") or ""),
        market,
        *times,
    )


def build_table(
    rows: Sequence[dict],
    sources: Iterable[str] = (),
    duplicates: str = "error",
    skipped: list[LineError] | None = None,
) -> ForecastTable:
    """Validate rows (dicts with the columns above) into a table; errors name the row's origin.

    Each row may carry ``_where`` (e.g. ``file:line``) used in error messages. A bad row is an error, or,
    given a ``skipped`` list, left out and recorded there. A pair forecast twice is an error, or merged by
    ``duplicates`` (``mean``, ``first``, ``last``; counted in ``table.duplicates``).
    """
    _check_policy(duplicates)
    good_rows, good_where = [], []
    for i, r in enumerate(rows):
        w = r.get("_where", f"row {i + 1}")
        parsed = _row(r)
        if isinstance(parsed, str):
            if skipped is None:
                raise ScoreInputError(f"{w}: {parsed}")
            skipped.append(_row_error(w, parsed))
        else:
            good_rows.append({**r, "_parsed": parsed})
            good_where.append(w)
    rows, _, merged = _deduplicate(good_rows, good_where, duplicates)
    if not rows:
        where_from = ", ".join(sources) or "the input"
        why = f"all {len(skipped)} row(s) are bad" if skipped else "it holds no rows"
        raise ScoreInputError(f"no usable forecasts in {where_from}: {why}")
    # a merged pair's prob is the policy's, not the first row's
    columns = list(zip(*((*r["_parsed"][:2], _float(r["prob"]), *r["_parsed"][3:]) for r in rows), strict=True))
    return ForecastTable(
        forecaster=np.array(columns[0], dtype=object),
        question_id=np.array(columns[1], dtype=object),
        prob=np.array(columns[2], dtype=float),
        resolution=np.array(columns[3], dtype=float),
        weight=np.array(columns[4], dtype=float),
        batch=np.array(columns[5], dtype=object),
        market_prob=np.array(columns[6], dtype=float),
        resolved_at=np.array(columns[7], dtype="datetime64[s]"),
        scheduled_resolution=np.array(columns[8], dtype="datetime64[s]"),
        sources=list(sources),
        duplicates=merged,
    )


def _float(value, default: float = np.nan) -> float:
    if value in (None, ""):
        return default
    try:
        return float(value)
    except (TypeError, ValueError):
        return np.nan


def _time(value) -> np.datetime64:
    if value in (None, ""):
        return np.datetime64("NaT", "s")
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"cannot read the date {value!r}") from None
    if parsed.tzinfo is not None:  # compare everything in UTC
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    return np.datetime64(parsed, "s")


def _csv_text(path: Path) -> str:
    """The CSV's text: UTF-8 (with or without Excel's byte-order mark), UTF-16 as Windows tools write
    it, or, when the bytes are not UTF-8, Latin-1 (said in a warning, since that is a guess)."""
    data = path.read_bytes()
    encoding = utf16_encoding(data)
    if encoding:
        try:
            return data.decode("utf-16" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else _utf16_order(data))
        except UnicodeDecodeError as exc:
            raise ScoreInputError(f"{path}: the file looks {encoding} but is not valid UTF-16 ({exc.reason})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        log.warning("%s:%d: not UTF-8 (byte 0x%02x); reading the file as Latin-1", path, line, data[exc.start])
        return data.decode("latin-1")


def _utf16_order(data: bytes) -> str:
    return "utf-16-le" if data[1::2][:32].count(0) >= data[0::2][:32].count(0) else "utf-16-be"


def read_long_table(path: str | Path, skipped: list[LineError] | None = None) -> list[dict]:
    """Rows of a CSV (with a header) or JSONL long table, each tagged with ``file:line``; a malformed line is
    an error, or recorded in ``skipped`` and left out."""
    path = Path(path)
    rows: list[dict] = []
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(_csv_text(path), newline=""))
        header = reader.fieldnames or []
        missing = {"forecaster", "question_id", "prob"} - set(header)
        if missing:
            raise ScoreInputError(f"{path}: the header lacks column(s) {', '.join(sorted(missing))}")
        for row in reader:
            if None in row or None in row.values():  # DictReader's marks of a row longer or shorter than the header
                n = len(header) + len(row.get(None) or ()) - sum(v is None for v in row.values())
                _skip(
                    skipped,
                    LineError(str(path), reader.line_num, None, f"{n} field(s) where the header has {len(header)}"),
                )
                continue
            rows.append({**row, "_where": f"{path}:{reader.line_num}"})
        return rows
    for number, obj in iter_json_lines(path):
        if isinstance(obj, LineError):
            _skip(skipped, obj)
            continue
        rows.append({**obj, "_where": f"{path}:{number}"})
    return rows


def forecaster_name(directory: str | Path) -> str | None:
    """The forecaster name a run directory's ``run.json`` records (``cc evaluate`` runs), if any.

    Naming a run by it, not by its time-stamped directory, lets a forecaster's tuple run and its
    ground-truth run meet under one name.
    """
    recorded = recorded_forecaster(directory)
    return recorded.name if recorded is not None and recorded.name else None


def read_ground_truth(
    path: str | Path, forecaster: str | None = None, skipped: list[LineError] | None = None
) -> list[dict]:
    """Rows from the paper's ``ground_truth_results.jsonl`` (forecaster named as its run records, else after
    its folder); a bad line is an error, or recorded in ``skipped`` and left out."""
    path = Path(path)
    name = forecaster or forecaster_name(path.parent) or path.parent.name
    rows = []
    for number, record in ground_truth_records(path):
        if isinstance(record, LineError):
            _skip(skipped, record)
            continue
        q = record.question
        rows.append(
            {
                "forecaster": name,
                "question_id": q.id,
                "prob": record.forecast.prob,
                "resolution": record.resolution if record.resolution is not None else q.resolution,
                "market_prob": (q.metadata or {}).get("market_prob"),
                "scheduled_resolution": q.resolution_date.isoformat() if q.resolution_date else None,
                "_where": f"{path}:{number}",
            }
        )
    return rows


def read_run_rows(
    directory: str | Path,
    forecaster: str | None = None,
    duplicates: str = "error",
    skipped: list[LineError] | None = None,
) -> list[dict]:
    """Rows from a run directory of ``<Checker>.jsonl`` forecast lines (ours, or the paper's).

    Every field of every tuple is a forecast on a question; a question met in several tuples with
    the same forecast is one row; with different forecasts (the paper re-asked questions) it is an
    error naming both places, or one row merged by ``duplicates`` (marked ``_merged``). A line that is not a
    forecast line is an error, or recorded in ``skipped`` and left out.
    """
    _check_policy(duplicates)
    directory = Path(directory)
    name = forecaster or forecaster_name(directory) or directory.name
    rows: dict[str, dict] = {}
    probs: dict[str, list[float]] = {}
    for path in layout.forecast_files_in(directory):
        for number, obj in _lines_of(path):
            if isinstance(obj, LineError):
                _skip(skipped, obj)
                continue
            if not isinstance(obj.get("line"), dict):
                _skip(skipped, LineError(str(path), number, None, "not a forecast line"))
                continue
            try:
                line = ForecastLine.model_validate(obj)
            except ValueError as exc:
                _skip(skipped, LineError(str(path), number, None, one_line(exc)))
                continue
            for slot, entry in line.line.items():
                q = entry.question
                row = {
                    "forecaster": name,
                    "question_id": q.id,
                    "prob": entry.forecast.prob,
                    "resolution": q.resolution,
                    "scheduled_resolution": q.resolution_date.isoformat() if q.resolution_date else None,
                    "_where": f"{path}:{number} ({slot})",
                }
                seen = rows.get(q.id)
                if seen is not None and seen["prob"] != row["prob"] and duplicates == "error":
                    raise ScoreInputError(
                        f"{row['_where']}: question {q.id} was forecast {row['prob']} here but {seen['prob']} "
                        f"at {seen['_where']}; choose --duplicates mean, first or last to merge repeats"
                    )
                rows.setdefault(q.id, row)
                probs.setdefault(q.id, []).append(row["prob"])
    if not rows and not skipped:  # lines there were all bad: they are listed, and other paths may be fine
        raise ScoreInputError(f"{directory}: no <Checker>.jsonl forecast lines in this directory")
    return [_merge(row, probs[qid], duplicates) if len(set(probs[qid])) > 1 else row for qid, row in rows.items()]


def _lines_of(path: Path) -> Iterator[tuple[int, dict | LineError]]:
    """:func:`iter_json_lines`; a file that cannot be opened (a dangling or looping symbolic link) is one sentence."""
    try:
        yield from iter_json_lines(path)
    except OSError as exc:
        from ..write_errors import cannot_read

        raise ScoreInputError(cannot_read(exc)) from None


def json_kind(path: str | Path) -> str | None:
    """What a (pretty-printed) ``.json`` file holds, for errors that name it; ``None`` when it is not JSON."""
    try:
        obj = parse_json(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(obj, dict):
        return f"JSON {type(obj).__name__}"
    if "avg_brier_score" in obj:
        return "ground-truth summary (one forecaster's averages)"
    if "checks" in obj and "aggregate" in obj:
        return "`cc score` summary (mean violations per check)"
    if "overall" in obj:
        return "per-check statistics file"
    return "JSON object"


def _per_question_only(path: Path) -> ScoreInputError:
    kind = json_kind(path) or "JSON file"
    return ScoreInputError(
        f"{path}: a {kind}, not per-question forecasts; this command needs {layout.GROUND_TRUTH}, "
        "a run directory or a long table (CSV/JSONL)"
    )


def load_table(
    paths: Sequence[str | Path], duplicates: str = "error", skipped: list[LineError] | None = None
) -> ForecastTable:
    """Read long tables, ground-truth files and run directories into one validated table.

    ``duplicates`` says what to do with a question forecast twice by one forecaster (see :data:`DUPLICATES`).
    Without ``skipped`` the first bad row is an error; with it, bad rows are left out and appended there,
    and only a missing or unreadable file, or no usable row at all, is an error.
    """
    _check_policy(duplicates)
    rows: list[dict] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = find_files(path, layout.GROUND_TRUTH)
            if found:
                for file in found:
                    rows += read_ground_truth(file, skipped=skipped)
            elif summaries := find_files(path, layout.GROUND_TRUTH_SUMMARY):
                raise _per_question_only(summaries[0])
            else:
                rows += read_run_rows(path, duplicates=duplicates, skipped=skipped)
        elif path.name == layout.GROUND_TRUTH:
            rows += read_ground_truth(path, skipped=skipped)
        elif path.name == layout.GROUND_TRUTH_TYPED:
            continue  # multiple-choice, numeric and date results: no yes/no row (their boards: accuracy.typed)
        elif path.suffix.lower() == ".json" and path.is_file():
            raise _per_question_only(path)
        elif path.is_file():
            rows += read_long_table(path, skipped)
        else:
            raise ScoreInputError(f"{path}: no such file or directory")
    if not rows and not skipped:
        raise NoForecastsError("no forecasts found in " + ", ".join(map(str, paths)))
    return build_table(rows, [str(p) for p in paths], duplicates, skipped)
