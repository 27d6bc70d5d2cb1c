"""The run store: file names declared once, one checked reader of ``run.json`` and the rule for links.

Every way a ``run.json`` can be unusable must be one sentence naming the file and the field, with a
non-zero exit, in every command that reads it (``cc diff``, ``cc report``, ``cc repair``,
``cc evaluate --resume``), and never a traceback or a half-written output.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from consistency.cli import app
from consistency.errors import ConsistencyError, InputError
from consistency.evaluation import evaluate
from consistency.forecasters.simple import ConstantForecaster
from consistency.store import RUN_FILE, RunMetaError, optional_run_meta, read_run_meta, run_meta_of
from consistency.store.meta import MAX_DEPTH, value_problem
from consistency.store.outputs import OutputPathError, no_links_inside, output_dir, output_file

runner = CliRunner()
PACKAGE = Path(__file__).resolve().parents[2] / "consistency"


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """A complete run (NEGATION and PARAPHRASE, 4 tuples each) to damage copies of."""
    root = tmp_path_factory.mktemp("store")
    return evaluate(ConstantForecaster(0.3), checks=["neg", "para"], limit=4, out=root / "base").run_dir


def _damaged(base: Path, where: Path, case: str) -> Path:
    meta = json.loads((base / RUN_FILE).read_text())
    texts = {
        "array": "[1, 2]",
        "null": "null",
        "deep array": "[" * 100_000 + "]" * 100_000,
        "NaN": json.dumps({**meta, "parameters": {**meta["parameters"], "epsilon": math.nan}}),
        "fingerprint": json.dumps({**meta, "benchmark": {**meta["benchmark"], "fingerprint": [1, 2]}}),
        "benchmark": json.dumps({**meta, "benchmark": "bundled"}),
        "forecaster": json.dumps({**meta, "forecaster": None}),
        "invalid JSON": json.dumps(meta)[:-20],
    }
    run = where / case.replace(" ", "_")
    shutil.copytree(base, run)
    (run / RUN_FILE).write_text(texts[case])
    return run


#: What each damage is reported as: the field named, or "not a run record".
NAMED = {
    "array": "not a run record",
    "null": "not a run record",
    "deep array": "not a run record",
    "NaN": "parameters.epsilon",
    "fingerprint": "benchmark.fingerprint",
    "benchmark": "benchmark",
    "forecaster": "forecaster",
    "invalid JSON": "not valid JSON",
}


@pytest.mark.parametrize("case", list(NAMED))
def test_a_damaged_run_json_is_one_error_naming_the_file_and_field(base, tmp_path, case):
    run = _damaged(base, tmp_path, case)
    with pytest.raises(RunMetaError) as caught:
        read_run_meta(run)
    text = str(caught.value)
    assert text.startswith(f"{run / RUN_FILE}: ") and NAMED[case] in text and "\n" not in text
    assert isinstance(caught.value, InputError) and isinstance(caught.value, ValueError)
    assert isinstance(caught.value, ConsistencyError)


def test_a_missing_record_is_one_sentence_and_optional_where_a_run_may_be_bare_files(tmp_path):
    with pytest.raises(RunMetaError, match=r"no run\.json; not a run directory"):
        read_run_meta(tmp_path)
    with pytest.raises(RunMetaError, match="no such directory"):
        read_run_meta(tmp_path / "nope")
    assert optional_run_meta(tmp_path) is None
    (tmp_path / RUN_FILE).write_bytes(b"\xff\xfe{}")
    with pytest.raises(RunMetaError, match="not UTF-8"):
        optional_run_meta(tmp_path)  # present but unreadable is an error, not "no record"


def test_values_json_cannot_write_back_or_nested_too_deep_are_named_at_any_depth():
    why = "inf is not a number JSON can hold (NaN or Infinity)"
    assert value_problem({"a": [1, {"b": math.inf}]}) == ("a.1.b", why)
    deep: dict = {}
    node = deep
    for _ in range(MAX_DEPTH + 5):
        node["x"] = {}
        node = node["x"]
    field, why = value_problem({"repair": deep})
    assert field.startswith("repair.x.x") and f"more than {MAX_DEPTH} levels" in why
    nested = [0]
    for _ in range(50_000):  # far deeper than Python's recursion limit: the walk is iterative
        nested = [nested]
    assert value_problem({"a": nested}) is not None
    with pytest.raises(RunMetaError, match=r"run.json: sessions.0.started: not a date"):
        run_meta_of({"sessions": [{"started": "yesterday"}]})
    with pytest.raises(RunMetaError, match=r"totals: should not be null"):
        run_meta_of({"totals": None})


def test_a_real_record_reads_typed_and_writes_back_whole_with_unknown_keys_kept(base):
    meta = read_run_meta(base)
    assert meta.kind == "consistency" and meta.status == "complete" and meta.file == base / RUN_FILE
    assert meta.fingerprint and meta.forecaster_name == "constant_0.3" and meta.benchmark.limit == 4
    assert meta.totals.calls == 0 and meta.sessions[0].action == "start"
    raw = json.loads((base / RUN_FILE).read_text())
    assert meta.to_dict() == raw
    future = run_meta_of({**raw, "written_by": "a later version", "benchmark": {**raw["benchmark"], "new": 1}})
    assert future.to_dict()["written_by"] == "a later version" and future.to_dict()["benchmark"]["new"] == 1
    assert run_meta_of({}).to_dict() == {}  # an old record with none of the typed fields still reads


def _commands(run: Path, base: Path, tmp_path: Path) -> dict[str, list[str]]:
    return {
        "diff A B": ["diff", str(base), str(run)],
        "diff B A": ["diff", str(run), str(base), "--fail-if-worse"],
        "report": ["report", str(run), "-o", str(tmp_path / "r.html")],
        "repair": ["repair", str(run), "-o", str(tmp_path / "repaired")],
        "evaluate --resume": ["evaluate", "--resume", str(run)],
    }


@pytest.mark.parametrize("case", list(NAMED))
def test_every_command_reading_a_damaged_run_json_exits_2_with_one_sentence(base, tmp_path, case):
    run = _damaged(base, tmp_path, case)
    before = sorted(p.name for p in run.iterdir())
    for name, args in _commands(run, base, tmp_path).items():
        done = runner.invoke(app, args)
        assert done.exit_code == 2 and isinstance(done.exception, SystemExit), (name, done.output)
        text = " ".join(done.output.split())
        assert "Traceback" not in done.output and f"{run.name}/run.json" in text and NAMED[case] in text, (name, text)
    assert sorted(p.name for p in run.iterdir()) == before  # nothing written into the damaged run
    assert not [p.name for p in tmp_path.iterdir() if "repaired" in p.name or "partial" in p.name]
    assert not (tmp_path / "r.html").exists()


def test_without_run_json_a_run_reads_as_forecast_files_and_a_resume_says_why_not(base, tmp_path):
    bare = tmp_path / "bare"
    shutil.copytree(base, bare)
    (bare / RUN_FILE).unlink()
    for args in (["diff", str(base), str(bare)], ["repair", str(bare), "-o", str(tmp_path / "rep")]):
        done = runner.invoke(app, args)
        assert done.exit_code == 0, done.output
    done = runner.invoke(app, ["evaluate", "--resume", str(bare)])
    assert done.exit_code == 2 and "bare: no run.json; not a run directory" in " ".join(done.output.split())


def test_the_file_names_of_a_run_are_spelled_once_in_the_modules_ported_to_the_store():
    ported = ["evaluation/rundir.py", "evaluation/diff.py", "report/gather.py", "repair/runs.py", "repair/sources.py"]
    for name in ported:
        text = (PACKAGE / name).read_text()
        for literal in ('"run.json"', '"ground_truth_results.jsonl"', '"summary.json"', '"forecasts.jsonl"'):
            assert literal not in text, (name, literal)
    defined = [
        p for p in PACKAGE.rglob("*.py") if re.search(r'^RUN_FILE = "run.json"', p.read_text(), flags=re.MULTILINE)
    ]
    assert [p.relative_to(PACKAGE).as_posix() for p in defined] == ["store/layout.py"]


# --------------------------------------------------------------------------- symbolic links


def test_output_paths_follow_a_link_to_a_directory_and_refuse_a_dangling_one_or_a_linked_file(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "to_dir").symlink_to(real)
    (tmp_path / "nowhere").symlink_to(tmp_path / "missing")
    (tmp_path / "page.html").symlink_to(tmp_path / "target.html")
    assert output_dir(tmp_path / "to_dir") == real.resolve()
    assert output_dir(tmp_path / "new") == tmp_path / "new"
    with pytest.raises(OutputPathError, match=r"nowhere is a symbolic link to .*missing, which does not exist"):
        output_dir(tmp_path / "nowhere")
    with pytest.raises(OutputPathError, match="never written through a link"):
        output_file(tmp_path / "page.html")
    assert output_file(tmp_path / "new.html") == tmp_path / "new.html"
    (real / "forecasts.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    with pytest.raises(OutputPathError, match=r"forecasts\.jsonl is a symbolic link"):
        no_links_inside(real)


def test_a_dangling_out_and_a_linked_journal_are_one_sentence_and_nothing_is_written_through_them(
    base, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dangling").symlink_to(tmp_path / "missing")
    done = runner.invoke(app, ["evaluate", "-f", "constant", "-c", "neg", "-n", "2", "-o", "dangling"])
    assert done.exit_code == 2 and "dangling is a symbolic link" in " ".join(done.output.split()), done.output
    assert "Errno" not in done.output and not (tmp_path / "missing").exists()
    done = runner.invoke(app, ["score", str(base), "--out", "dangling"])
    assert done.exit_code == 2 and "dangling is a symbolic link" in " ".join(done.output.split()), done.output
    run = tmp_path / "run"
    shutil.copytree(base, run)
    outside = tmp_path / "outside.jsonl"
    shutil.move(run / "forecasts.jsonl", outside)
    (run / "forecasts.jsonl").symlink_to(outside)
    before = outside.read_bytes()
    done = runner.invoke(app, ["evaluate", "--resume", str(run)])
    assert done.exit_code == 2 and "forecasts.jsonl is a symbolic link" in " ".join(done.output.split())
    assert outside.read_bytes() == before and (run / "forecasts.jsonl").is_symlink()


def test_report_refuses_an_output_file_that_is_a_link_and_writes_nothing_through_it(base, tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    (tmp_path / "report.html").symlink_to(target)
    done = runner.invoke(app, ["report", str(base), "-o", str(tmp_path / "report.html")])
    assert done.exit_code == 2 and "never written through a link" in " ".join(done.output.split()), done.output
    assert target.read_text() == "keep me\n"


def test_an_evaluation_result_carries_its_record_typed(base, tmp_path):
    """What `cc evaluate` prints comes from the typed record, not from the dict's keys."""
    result = evaluate(ConstantForecaster(0.3), checks=["neg"], limit=2, out=tmp_path / "run")
    record = result.record
    assert record.status == "complete" and record.questions == result.meta.to_dict()["questions"]
    assert record.stopped is None and record.answered == result.meta.to_dict()["sessions"][-1]["answered"]
    assert record.session_totals().calls == result.meta.to_dict()["sessions"][-1]["totals"]["calls"]
    assert record.forecaster is not None and record.forecaster.bot is None


def test_a_ground_truth_runs_summary_reads_typed_and_a_bad_field_is_named():
    from consistency.store.records import truth_summary_of

    record = run_meta_of({"kind": "ground_truth", "summary": {"scored": 3, "unresolved": 1, "fraction_failed": 0.25}})
    summary = truth_summary_of(record)
    assert (summary.scored, summary.unresolved, summary.fraction_failed) == (3, 1, 0.25)
    with pytest.raises(RunMetaError, match=r"summary\.scored"):
        truth_summary_of(run_meta_of({"summary": {"scored": "many"}}))
    stopped = run_meta_of({"stopped": {"reason": "max_cost", "max_cost": 0.01, "spent": 0.0107}}).stopped
    assert stopped is not None and stopped.spent == 0.0107


def test_typed_results_read_typed_from_a_run_a_tree_or_the_file_and_a_bad_line_is_named(tmp_path):
    from consistency.jsonl import LineError
    from consistency.store import layout
    from consistency.store.records import TypedResult
    from consistency.store.runs import read_run, typed_result_runs

    run = tmp_path / "tree" / "gt"
    run.mkdir(parents=True)
    (run / layout.GROUND_TRUTH).write_text("")
    good = {
        "question": {"id": "m", "question_type": "multiple_choice", "options": ["a", "b"]},
        "forecast": {"probs": [0.25, 0.75]},
        "resolution": "b",
        "brier_score": 0.125,
        "log_score_bits": 0.415,
    }
    (run / layout.GROUND_TRUTH_TYPED).write_text(json.dumps(good) + "\n" + '{"question": {"id": "x"}}\n')
    for found in (
        read_run(run),
        *typed_result_runs(tmp_path / "tree"),
        *typed_result_runs(run / layout.GROUND_TRUTH_TYPED),
    ):
        assert found.typed_file == run / layout.GROUND_TRUTH_TYPED
        (n1, first), (n2, second) = list(found.typed_results())
        assert isinstance(first, TypedResult) and first.question.id == "m" and first.brier_score == 0.125
        assert first.question.model_extra == {"options": ["a", "b"]}  # the rest of the question kept as written
        assert isinstance(second, LineError) and (n1, n2) == (1, 2) and "question_type" in str(second)
    assert (
        typed_result_runs(tmp_path / "nothing") == [] and read_run(run).ground_truth_file == run / layout.GROUND_TRUTH
    )
