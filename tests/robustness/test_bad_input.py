"""Bad input files: every bad line is reported with file, line and field, by the library and by ``cc``.

Forecast files are copies of the packaged sample (``<Checker>.jsonl``, 3 lines each) with one line
corrupted. The CLI runs as a subprocess (the installed ``cc`` script) in ``tmp_path``. Unless a test is
about output to a pipe at the default width, ``COLUMNS`` is set wide so that rich never wraps a line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import consistency
from consistency.evaluation.scoring import ScoringError, score_file, score_path, write_report
from consistency.files import DetectionError, FileKind, detect, validate_file
from consistency.jsonl import LineError

CC = Path(sys.executable).parent / "cc"
SAMPLE = Path(consistency.__file__).parent / "datasets" / "sample"
FORECASTS = SAMPLE / "forecasts"
TUPLES = SAMPLE / "tuples"
METRIC_KEYS = {"default", "default_scaled", "frequentist"}
WIDE = 400


def cc(*args: object, cwd: Path, columns: int | None = WIDE) -> subprocess.CompletedProcess[str]:
    """Run the installed ``cc`` script; ``columns=None`` leaves rich at its width for pipes."""
    env = {k: v for k, v in os.environ.items() if k not in {"COLUMNS", "LINES", "FORCE_COLOR", "TTY_COMPATIBLE"}}
    env["NO_COLOR"] = "1"
    env["PYTHONIOENCODING"] = "utf-8"
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run(
        [str(CC), *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        check=False,
    )


def sample_lines(name: str, kind: str = "forecasts") -> list[str]:
    return (SAMPLE / kind / name).read_text(encoding="utf-8").splitlines()


def write_text(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    return path


def join_lines(lines: list[str]) -> str:
    return "".join(f"{line}\n" for line in lines)


def edit_line(number: int, mutate: Callable[[Any], None]) -> Callable[[list[str]], str]:
    """A corruption that parses line ``number``, mutates the object and writes it back (NaN kept as ``NaN``)."""

    def corrupt(lines: list[str]) -> str:
        obj = json.loads(lines[number - 1])
        mutate(obj)
        lines[number - 1] = json.dumps(obj)
        return join_lines(lines)

    return corrupt


def set_path(*keys: str, value: Any) -> Callable[[Any], None]:
    def mutate(obj: Any) -> None:
        for key in keys[:-1]:
            obj = obj[key]
        obj[keys[-1]] = value

    return mutate


def delete_path(*keys: str) -> Callable[[Any], None]:
    def mutate(obj: Any) -> None:
        for key in keys[:-1]:
            obj = obj[key]
        del obj[keys[-1]]

    return mutate


def truncate_last_line(lines: list[str]) -> str:
    last = lines[-1]
    return join_lines(lines[:-1]) + last[: len(last) // 2]  # no trailing newline


def replace_line(number: int, text: str) -> Callable[[list[str]], str]:
    def corrupt(lines: list[str]) -> str:
        lines[number - 1] = text
        return join_lines(lines)

    return corrupt


@dataclass(frozen=True)
class Case:
    id: str
    checker: str  # the sample file copied, e.g. NegChecker.jsonl
    corrupt: Callable[[list[str]], str]
    line: int  # the bad line
    field: str | None  # the field the error must name (None: the line as a whole)
    substrings: tuple[str, ...]  # what the message must say

    @property
    def rel(self) -> str:
        """Path of the corrupted file relative to the directory holding all cases."""
        return f"{self.id}/{self.checker}"

    def write(self, root: Path) -> Path:
        return write_text(root / self.rel, self.corrupt(sample_lines(self.checker)))


NEG, COND = "NegChecker.jsonl", "CondChecker.jsonl"
CASES = [
    Case(
        "a_prob_out_of_range",
        NEG,
        edit_line(2, set_path("line", "P", "forecast", "prob", value=1.7)),
        2,
        "line.P.forecast.prob",
        ("[0, 1]", "1.7"),
    ),
    Case(
        "b_prob_nan",
        NEG,
        edit_line(2, set_path("line", "P", "forecast", "prob", value=float("nan"))),
        2,
        "line.P.forecast.prob",
        ("[0, 1]", "nan"),
    ),
    Case(
        "c_missing_field",
        NEG,
        edit_line(2, delete_path("line", "not_P")),
        2,
        "line",
        ("missing", "not_P"),
    ),
    Case(
        "d_missing_prob",
        NEG,
        edit_line(2, delete_path("line", "P", "forecast", "prob")),
        2,
        "line.P.forecast.prob",
        ("missing",),
    ),
    Case(
        "e_conditional_in_binary_slot",
        NEG,
        edit_line(2, set_path("line", "P", "question", "question_type", value="conditional_binary")),
        2,
        "line.P.question.question_type",
        ("expects a binary question", "got conditional_binary"),
    ),
    Case(
        "e_binary_in_conditional_slot",
        COND,
        edit_line(2, set_path("line", "Q_given_P", "question", "question_type", value="binary")),
        2,
        "line.Q_given_P.question.question_type",
        ("expects a conditional_binary question", "got binary"),
    ),
    Case("f_truncated_last_line", NEG, truncate_last_line, 3, None, ("truncated",)),
    Case("g_not_an_object", NEG, replace_line(2, "[1, 2]"), 2, None, ("JSON object", "list")),
    Case(
        "h_bad_date",
        NEG,
        edit_line(2, set_path("line", "P", "question", "resolution_date", value="31/12/2027")),
        2,
        "line.P.question.resolution_date",
        ("date",),
    ),
]
CASE_IDS = [c.id for c in CASES]


def error_prefix(rel: str, line: int, field: str | None) -> str:
    return f"{rel}:{line}: {field}: " if field else f"{rel}:{line}: "


def output_line(text: str, prefix: str) -> str:
    """The one output line holding ``prefix`` (fails if there is none)."""
    found = [line for line in text.splitlines() if prefix in line]
    assert found, f"no line containing {prefix!r} in output:\n{text}"
    return found[0]


def assert_says(message: str, substrings: tuple[str, ...]) -> None:
    for sub in substrings:
        assert sub.lower() in message.lower(), f"{sub!r} not in {message!r}"


@pytest.fixture(scope="module")
def cases_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bad_cases")
    for case in CASES:
        case.write(root)
    return root


@pytest.fixture(scope="module")
def validate_all(cases_root: Path) -> subprocess.CompletedProcess[str]:
    """One ``cc validate`` over every corrupted file (one subprocess for all cases)."""
    return cc("validate", *(case.rel for case in CASES), cwd=cases_root)


def test_corruptions_are_what_they_claim(cases_root: Path) -> None:
    nan_text = (cases_root / "b_prob_nan" / NEG).read_text(encoding="utf-8")
    assert '"prob": NaN' in nan_text
    truncated = (cases_root / "f_truncated_last_line" / NEG).read_bytes()
    assert not truncated.endswith(b"\n")
    assert truncated.count(b"\n") == 2


# --- library: every corruption is reported at its line and field ---------------------------------------


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_library_validate_names_file_line_field(case: Case, cases_root: Path) -> None:
    path = cases_root / case.rel
    report = validate_file(path)
    assert report.info.kind is FileKind.FORECASTS
    assert report.info.check is not None
    assert report.info.check.class_name == Path(case.checker).stem
    assert report.n_lines == 3
    assert report.n_bad_lines == 1
    assert {e.line for e in report.errors} == {case.line}
    assert all(isinstance(e, LineError) and e.path == str(path) for e in report.errors)
    matching = [e for e in report.errors if e.field == case.field]
    assert matching, f"no error on field {case.field!r}: {report.errors}"
    error = matching[0]
    assert_says(error.message, case.substrings)
    assert str(error).startswith(error_prefix(str(path), case.line, case.field))


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_library_score_skips_only_the_bad_line(case: Case, cases_root: Path) -> None:
    path = cases_root / case.rel
    before = path.read_bytes()
    scored = score_file(path)
    assert scored.line_numbers == [n for n in (1, 2, 3) if n != case.line]
    assert {e.line for e in scored.errors} == {case.line}
    assert any(e.field == case.field for e in scored.errors)
    assert scored.n_lines == 3
    for stats in scored.stats().values():
        assert stats.num_samples == 2
        assert stats.num_samples_including_errors == 3
    assert path.read_bytes() == before


# --- CLI: cc validate -----------------------------------------------------------------------------------


def test_cli_validate_exits_1_on_bad_files(validate_all: subprocess.CompletedProcess[str]) -> None:
    assert validate_all.returncode == 1, validate_all.stderr
    assert "Traceback" not in validate_all.stderr


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_cli_validate_names_file_line_field(case: Case, validate_all: subprocess.CompletedProcess[str]) -> None:
    stdout = validate_all.stdout
    header = output_line(stdout, f"{case.rel}: forecasts")
    assert "3 lines" in header
    assert "1 bad" in header
    line = output_line(stdout, error_prefix(case.rel, case.line, case.field))
    assert_says(line, case.substrings)
    # no other line of this file is blamed
    for other in {1, 2, 3} - {case.line}:
        assert f"{case.rel}:{other}:" not in stdout


def test_cli_validate_prints_every_bad_line(tmp_path: Path) -> None:
    lines = sample_lines(NEG)
    text = edit_line(1, set_path("line", "not_P", "forecast", "prob", value=-0.2))(lines)
    text = edit_line(3, delete_path("line", "P", "forecast", "prob"))(text.splitlines())
    path = write_text(tmp_path / NEG, text)

    report = validate_file(path)
    assert report.n_bad_lines == 2
    assert {e.line for e in report.errors} == {1, 3}

    result = cc("validate", NEG, cwd=tmp_path)
    assert result.returncode == 1
    assert "2 bad" in result.stdout
    first = output_line(result.stdout, f"{NEG}:1: line.not_P.forecast.prob: ")
    assert "[0, 1]" in first
    assert "-0.2" in first
    third = output_line(result.stdout, f"{NEG}:3: line.P.forecast.prob: ")
    assert "missing" in third
    assert f"{NEG}:2:" not in result.stdout


def test_cli_validate_untouched_samples_exit_0(tmp_path: Path) -> None:
    files = sorted(FORECASTS.glob("*.jsonl")) + sorted(TUPLES.glob("*.jsonl"))
    assert len(files) == 20
    for path in files:
        assert validate_file(path).errors == [], path
    result = cc("validate", *files, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("all valid") == 20
    assert "bad" not in result.stdout


def test_cli_validate_missing_path(tmp_path: Path) -> None:
    with pytest.raises(DetectionError, match="no such file"):
        detect(tmp_path / "nope.jsonl")
    result = cc("validate", "nope.jsonl", cwd=tmp_path)
    assert result.returncode != 0
    message = result.stdout + result.stderr
    assert "nope.jsonl" in message
    assert "no such file" in message
    assert "Traceback" not in message


def test_cli_validate_directory_says_it_is_a_directory(tmp_path: Path) -> None:
    """An existing directory is not "no such file": the error must say it is a directory."""
    (tmp_path / "forecasts").mkdir()
    result = cc("validate", "forecasts", cwd=tmp_path)
    assert result.returncode != 0
    message = result.stdout + result.stderr
    assert "forecasts" in message
    assert "Traceback" not in message
    assert "directory" in message.lower(), message


def test_cli_validate_unrecognised_objects(tmp_path: Path) -> None:
    path = write_text(tmp_path / "odd.jsonl", join_lines(['{"foo": 1, "bar": 2}', '{"foo": 3}']))
    with pytest.raises(DetectionError, match="cannot tell what this file holds"):
        detect(path)
    result = cc("validate", "odd.jsonl", cwd=tmp_path)
    assert result.returncode != 0
    message = result.stdout + result.stderr
    assert "odd.jsonl" in message
    assert "cannot tell what this file holds" in message
    assert "Traceback" not in message


def test_cli_validate_invalid_utf8_names_file_and_line(tmp_path: Path) -> None:
    """A line with bytes that are not UTF-8 is a bad line like any other: reported as file:line."""
    raw = (FORECASTS / NEG).read_bytes().split(b"\n")
    raw[1] = raw[1][:40] + b"\xff\xfe" + raw[1][40:]
    (tmp_path / NEG).write_bytes(b"\n".join(raw))
    result = cc("validate", NEG, cwd=tmp_path)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"{NEG}:2:" in result.stdout + result.stderr, result.stdout + result.stderr


def test_cli_validate_error_lines_not_wrapped_in_pipes(tmp_path: Path) -> None:
    """Each error stays on one ``file:line: field: message`` line when stdout is a pipe (default width)."""
    lines = sample_lines(NEG)
    write_text(tmp_path / NEG, edit_line(2, set_path("line", "P", "forecast", "prob", value=1.7))(lines))
    result = cc("validate", NEG, cwd=tmp_path, columns=None)
    assert result.returncode == 1
    line = output_line(result.stdout, f"{NEG}:2: line.P.forecast.prob: ")
    assert "got 1.7" in line, result.stdout


def test_cli_validate_paths_with_brackets_are_shown_verbatim(tmp_path: Path) -> None:
    """Paths are data, not rich markup: ``run[old]/...`` must be printed as it is."""
    lines = sample_lines(NEG)
    write_text(tmp_path / "run[old]" / NEG, edit_line(2, set_path("line", "P", "forecast", "prob", value=1.7))(lines))
    result = cc("validate", f"run[old]/{NEG}", "run[old]/missing.jsonl", cwd=tmp_path)
    assert result.returncode == 1
    assert f"run[old]/{NEG}: forecasts" in result.stdout, result.stdout
    assert "run[old]/missing.jsonl" in result.stdout + result.stderr, result.stderr


# --- CLI and library: cc score on a file with one bad line -----------------------------------------------


def test_cli_score_one_bad_line_of_three(tmp_path: Path) -> None:
    case = CASES[0]  # probability 1.7 on line 2
    src = write_text(tmp_path / "in" / NEG, case.corrupt(sample_lines(NEG)))
    before = {p.name: p.read_bytes() for p in src.parent.iterdir()}
    good = [json.loads(text) for n, text in enumerate(sample_lines(NEG), start=1) if n != case.line]

    result = cc("score", f"in/{NEG}", "--out", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"in/{NEG}:2" in result.stderr
    assert "line.P.forecast.prob" in result.stderr

    out = tmp_path / "out"
    scored = [json.loads(text) for text in (out / NEG).read_text(encoding="utf-8").splitlines()]
    assert len(scored) == 2
    for got, want in zip(scored, good, strict=True):
        assert set(got["violation_data"]) == METRIC_KEYS
        assert {k: v for k, v in got.items() if k != "violation_data"} == {
            k: v for k, v in want.items() if k != "violation_data"
        }
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]

    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert len(summary["errors"]) == 1
    error = summary["errors"][0]
    assert set(error) >= {"path", "line", "field", "message"}
    assert Path(error["path"]).name == NEG
    assert error["line"] == 2
    assert error["field"] == "line.P.forecast.prob"
    assert "[0, 1]" in error["message"]
    neg = summary["checks"]["NegChecker"]
    assert (neg["lines"], neg["scored"], neg["unscorable"]) == (3, 2, 1)

    stats = json.loads((out / "stats_NegChecker.json").read_text(encoding="utf-8"))
    assert set(stats["overall"]) == METRIC_KEYS
    for metric in METRIC_KEYS:
        for data in (stats["overall"][metric], neg[metric]):
            assert data["num_samples"] == 2
            assert data["num_samples_including_errors"] == 3

    assert {p.name: p.read_bytes() for p in src.parent.iterdir()} == before


@pytest.mark.parametrize(
    "case",
    [c for c in CASES if c.id in {"e_binary_in_conditional_slot", "f_truncated_last_line"}],
    ids=lambda c: c.id,
)
def test_cli_score_reports_bad_line_and_keeps_the_rest(case: Case, tmp_path: Path) -> None:
    src = case.write(tmp_path)
    before = src.read_bytes()
    result = cc("score", case.rel, "--out", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"{case.rel}:{case.line}" in result.stderr
    scored = (tmp_path / "out" / case.checker).read_text(encoding="utf-8").splitlines()
    assert len(scored) == 2
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert [(e["line"], e["field"]) for e in summary["errors"] if e["field"] == case.field] == [(case.line, case.field)]
    assert src.read_bytes() == before


def test_score_refuses_out_equal_to_input_dir(tmp_path: Path) -> None:
    src = write_text(tmp_path / "in" / NEG, CASES[0].corrupt(sample_lines(NEG)))
    before = {p.name: p.read_bytes() for p in src.parent.iterdir()}

    report = score_path(src.parent)
    with pytest.raises(ScoringError, match="--out"):
        write_report(report, src.parent)

    for args in ((f"in/{NEG}", "--out", "in"), ("in", "--out", "./in/")):
        result = cc("score", *args, cwd=tmp_path)
        assert result.returncode == 2, (args, result.stderr)
        assert "input" in result.stderr
        assert "--out" in result.stderr
        assert "Traceback" not in result.stderr
    assert {p.name: p.read_bytes() for p in src.parent.iterdir()} == before


def test_score_nan_in_metadata_is_not_fatal(tmp_path: Path) -> None:
    """A line whose forecast metadata holds NaN passes validation, so scoring must not crash on it.

    At the least the failure must name the file and line, and no temporary file may be left in --out.
    """
    lines = sample_lines(NEG)
    write_text(
        tmp_path / NEG, edit_line(1, set_path("line", "P", "forecast", "metadata", value={"x": float("nan")}))(lines)
    )
    assert validate_file(tmp_path / NEG).errors == []
    result = cc("score", NEG, "--out", "out", cwd=tmp_path)
    leftovers = [p.name for p in (tmp_path / "out").glob(".*")] if (tmp_path / "out").is_dir() else []
    assert leftovers == []
    assert result.returncode == 0 or f"{NEG}:1" in result.stderr, result.stderr


# --- questions and tuples files ----------------------------------------------------------------------------


def _questions(tmp_path: Path, name: str, number: int, key: str, value: Any) -> Path:
    questions = [json.loads(text)["P"] for text in sample_lines(NEG, "tuples")]
    questions[number - 1][key] = value
    return write_text(tmp_path / name, join_lines([json.dumps(q) for q in questions]))


def test_questions_file_with_a_bad_line(tmp_path: Path) -> None:
    title = _questions(tmp_path, "q_title.jsonl", 2, "title", "")
    qtype = _questions(tmp_path, "q_type.jsonl", 3, "question_type", "multiple_choice")

    report = validate_file(title)
    assert report.info.kind is FileKind.QUESTIONS
    assert [(e.line, e.field) for e in report.errors] == [(2, "title")]
    report = validate_file(qtype)
    assert report.info.kind is FileKind.QUESTIONS
    assert [(e.line, e.field) for e in report.errors] == [(3, "question_type")]
    assert_says(report.errors[0].message, ("binary", "conditional_binary"))

    result = cc("validate", "q_title.jsonl", "q_type.jsonl", cwd=tmp_path)
    assert result.returncode == 1
    assert "1 bad" in output_line(result.stdout, "q_title.jsonl: questions")
    assert "1 bad" in output_line(result.stdout, "q_type.jsonl: questions")
    output_line(result.stdout, "q_title.jsonl:2: title: ")
    line = output_line(result.stdout, "q_type.jsonl:3: question_type: ")
    assert_says(line, ("binary", "conditional_binary"))


def _tuples(tmp_path: Path, checker: str, number: int, field: str, question_type: str) -> Path:
    lines = sample_lines(checker, "tuples")
    return write_text(
        tmp_path / checker, edit_line(number, set_path(field, "question_type", value=question_type))(lines)
    )


def test_tuples_file_with_a_wrong_question_type(tmp_path: Path) -> None:
    cond = _tuples(tmp_path, COND, 3, "Q_given_P", "binary")
    neg = _tuples(tmp_path, NEG, 1, "not_P", "conditional_binary")

    for path, line, field, types in (
        (cond, 3, "Q_given_P", ("conditional_binary", "got binary")),
        (neg, 1, "not_P", ("binary", "got conditional_binary")),
    ):
        report = validate_file(path)
        assert report.info.kind is FileKind.TUPLES
        assert report.info.check is not None and report.info.check.class_name == path.stem
        assert {e.line for e in report.errors} == {line}
        # the field is named (in the error's field or its message) and both types are stated
        assert any(field in f"{e.field} {e.message}" for e in report.errors)
        assert_says(" ".join(str(e) for e in report.errors), types)

    result = cc("validate", COND, NEG, cwd=tmp_path)
    assert result.returncode == 1
    assert "tuples of COND" in result.stdout
    assert "tuples of NEGATION" in result.stdout
    line = output_line(result.stdout, f"{COND}:3: ")
    assert_says(line, ("Q_given_P", "conditional_binary", "got binary"))
    line = output_line(result.stdout, f"{NEG}:1: ")
    assert_says(line, ("not_P", "got conditional_binary"))


def test_score_on_a_tuples_file_is_refused(tmp_path: Path) -> None:
    path = write_text(tmp_path / "tuples" / NEG, join_lines(sample_lines(NEG, "tuples")))
    with pytest.raises(ScoringError, match="tuples"):
        score_file(path)
    result = cc("score", f"tuples/{NEG}", "--out", "out", cwd=tmp_path)
    assert result.returncode == 2
    assert f"tuples/{NEG}" in result.stderr
    assert "tuples" in result.stderr
    assert "forecast" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()
