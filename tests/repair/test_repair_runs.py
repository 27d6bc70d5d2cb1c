"""``cc repair`` on real runs (scripted server over HTTP) and on files in the paper's layout.

The repaired directory must be read by every command as a run, carry its guarantee (checked here
against a brute force over each check's worlds), never score worse on resolved questions, and keep
every original forecast in its metadata.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from consistency.checks import get_check
from consistency.cli import app
from consistency.fake_openai import ScriptedServer, hypocritical_rule
from consistency.jsonl import iter_json_lines
from consistency.repair.runs import repair_forecasts, repair_run
from consistency.repair.sources import RepairInputError, read_graph
from tests.support.reference import FORECASTS as PAPER_RUN
from tests.support.reference import needs_reference
from tests.support.repair_fixtures import write_forecast_lines, write_tuples

runner = CliRunner()


pytestmark = pytest.mark.usefixtures("in_tmp_dir")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    """Complete ``cc evaluate`` runs on resolved tuples over shared questions: a hypocritical forecaster, and
    an ArbitrageForecaster (depth 1, NEGATION and PARAPHRASE) over it."""
    root = tmp_path_factory.mktemp("repair")
    tuples = write_tuples(root / "tuples")
    with ScriptedServer(hypocritical_rule()) as srv:
        spec = srv.model_spec()
        for out, forecaster in (
            ("run", [spec]),
            ("arb", ["arbitrage", "-F", f"base={spec}", "-F", "checks=neg; para"]),
        ):
            args = ["--forecaster", *forecaster, "--tuples", str(tuples), "--out", str(root / out), "--no-cache"]
            if out == "arb":
                args += ["-F", "depth=1", "-F", "instantiator=template"]
            done = runner.invoke(app, ["evaluate", *args])
            assert done.exit_code == 0, done.output
    return root / "run", root / "arb"


@pytest.fixture
def run(runs) -> Path:
    return runs[0]


def cc(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def forecasts(directory: Path, check: str) -> tuple[np.ndarray, list[dict]]:
    """A check file's forecasts (rows in file order) and its raw lines."""
    chk = get_check(check)
    lines = [obj for _, obj in iter_json_lines(directory / f"{chk.class_name}.jsonl")]
    probs = np.array([[obj["line"][f]["forecast"]["prob"] for f in chk.field_names] for obj in lines])
    return probs, lines


def brier_gain_in_every_world(check: str, before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """Per tuple, the least Brier improvement over the check's worlds (brute force, resolving fields only)."""
    worlds = get_check(check).worlds
    gains = []
    for w in worlds:
        resolves, outcome = w >= 0, (w == 1).astype(float)
        loss_before = np.where(resolves, (before - outcome) ** 2, 0).sum(axis=1)
        gains.append(loss_before - np.where(resolves, (after - outcome) ** 2, 0).sum(axis=1))
    return np.min(gains, axis=0)


@pytest.mark.parametrize("mode", ["--joint", "--per-tuple"])
def test_repaired_run_is_read_by_score_diff_report_and_leaderboard(run, tmp_path, mode):
    out = tmp_path / "repaired"
    done = cc("repair", run, mode, "--out", out)
    assert done.exit_code == 0, done.output
    assert "0 model calls" in done.output
    meta = json.loads((out / "run.json").read_text())
    assert meta["kind"] == "repair" and meta["repair"]["model_calls"] == 0 and meta["totals"]["calls"] == 0
    assert meta["repair"]["source"] == str(run) and meta["repair"]["joint"] == (mode == "--joint")
    assert meta["benchmark"]["fingerprint"] == json.loads((run / "run.json").read_text())["benchmark"]["fingerprint"]
    scored = cc("score", out, "--json", "--out", tmp_path / "scored")
    assert scored.exit_code == 0, scored.output
    summary = json.loads((tmp_path / "scored" / "summary.json").read_text())
    assert summary["aggregate"]["default"]["avg_violation"] < 1e-6  # binary checks only: coherent after Brier
    before = json.loads((run / "summary.json").read_text())["aggregate"]["default"]["avg_violation"]
    assert before > 0.05
    diff = cc("diff", run, out, "--json")
    assert diff.exit_code == 0, diff.output
    assert json.loads(diff.stdout[diff.stdout.index("{") :])["overall"]["diff"] < 0
    report = cc("report", run, out, "--out", tmp_path / "r.html")
    assert report.exit_code == 0, report.output
    assert "+repair-brier" in (tmp_path / "r.html").read_text()
    board = cc("leaderboard", run, out, "--json", "--duplicates", "mean")
    assert board.exit_code == 0, board.output
    names = [s["forecaster"] for s in json.loads(board.stdout)["standings"]]
    assert sorted(names) == sorted(["basic_scripted", f"basic_scripted+repair-brier-{mode[2:]}"])


def test_per_tuple_brier_repair_keeps_its_guarantee_on_the_run(run, tmp_path):
    report = repair_run(run, "brier", joint=False, out=tmp_path / "r")
    for check in ("neg", "para", "and", "or"):
        before, _ = forecasts(run, check)
        after, lines = forecasts(tmp_path / "r", check)
        moved = ((after - before) ** 2).sum(axis=1)
        assert np.all(brier_gain_in_every_world(check, before, after) >= moved - 1e-9)
        row = next(c for c in report.checks if c.check == get_check(check).name)
        assert row.moved == pytest.approx(moved.sum()) and row.guaranteed >= row.moved - 1e-9
        for obj, original in zip(lines, before, strict=True):
            kept = [obj["line"][f]["forecast"]["metadata"]["repair"]["original_prob"] for f in obj["line"]]
            assert kept == pytest.approx(original.tolist())
    assert report.total.guaranteed >= report.total.moved - 1e-9 and report.total.moved > 0


@pytest.mark.parametrize("joint", [True, False])
def test_realized_brier_on_resolved_questions_never_gets_worse(run, joint):
    report = repair_forecasts(run, "brier", joint).report
    unit = report.total.realized_questions if joint else report.total.realized
    assert unit.n > 0 and unit.brier_after <= unit.brier_before + 1e-12
    if not joint:  # every tuple's resolutions are a world of its check: each check improves
        for c in report.checks:
            assert c.contradictory_resolutions == 0
            assert c.realized.brier_after <= c.realized.brier_before + 1e-12


def test_log_repair_is_the_arbitrage_price_and_its_gain_the_profit(run, tmp_path):
    from consistency.metrics import arbitrage

    report = repair_run(run, "log", joint=False, out=tmp_path / "log")
    before, _ = forecasts(run, "neg")
    after, _ = forecasts(tmp_path / "log", "neg")
    prices = arbitrage(before, get_check("neg").worlds)
    assert after == pytest.approx(prices.prices, abs=1e-9)
    assert report.checks[0].moved == pytest.approx(prices.violation.sum(), abs=1e-9)


def test_a_malformed_line_is_skipped_with_its_file_and_line(run, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(run, broken)
    with (broken / "NegChecker.jsonl").open("a") as fh:
        fh.write('{"line": {"P": {"question": {"title": "x"}, "forecast": {"prob": 1.5}}}}\n')
    n = sum(1 for _ in (broken / "NegChecker.jsonl").open())
    done = cc("repair", broken, "--per-tuple", "--out", tmp_path / "out")
    assert done.exit_code == 0, done.output
    assert f"NegChecker.jsonl:{n}" in done.output
    assert sum(1 for _ in (tmp_path / "out" / "NegChecker.jsonl").open()) == n - 1
    saved = json.loads((tmp_path / "out" / "repair.json").read_text())
    assert any(f"NegChecker.jsonl:{n}" in e for e in saved["errors"])


def test_nothing_to_repair_and_overwriting_are_refused(run, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    done = cc("repair", empty)
    assert done.exit_code == 2 and "no <Checker>.jsonl" in done.output
    (empty / "NegChecker.jsonl").write_text('{"line": {"P": {"question": {"title": "x"}, "forecast": {"prob": 2}}}}\n')
    done = cc("repair", empty)
    assert done.exit_code == 1 and "nothing to repair" in done.output and "NegChecker.jsonl:1" in done.output
    first = cc("repair", run, "--out", tmp_path / "r")
    assert first.exit_code == 0, first.output
    again = cc("repair", run, "--out", tmp_path / "r")
    assert again.exit_code == 2 and "--force" in again.output
    assert cc("repair", run, "--out", tmp_path / "r", "--force").exit_code == 0
    refused = cc("repair", run, "--out", run.parent / "tuples", "--force")  # not a repair: never replaced
    assert refused.exit_code == 2 and "not a repair" in refused.output
    assert cc("repair", run, "--out", run).exit_code == 2
    assert cc("repair", run, "--score", "spherical").exit_code == 2
    # A joint log repair of conditional checks (refused before; test_repair_log_conditional.py) writes the run.
    conditional = write_forecast_lines(
        tmp_path / "cond", [("COND", ["Will A?", "Will B, given A?", "Will A and B?"], [0.5] * 3)]
    )
    joint_log = cc("repair", conditional, "--score", "log", "--joint", "--out", tmp_path / "jl")
    assert joint_log.exit_code == 0, joint_log.output
    report = json.loads((tmp_path / "jl" / "repair.json").read_text())
    assert report["total"]["guaranteed"] == pytest.approx(report["total"]["moved"], abs=1e-8)
    assert report["total"]["moved"] > 0
    assert not any(p.name.endswith(".partial") for p in tmp_path.iterdir())


def test_default_out_is_next_to_the_source(run, tmp_path):
    copy = tmp_path / "mine"
    shutil.copytree(run, copy)
    done = cc("repair", copy, "--score", "log", "--json")  # per tuple: the default with the log score
    assert done.exit_code == 0, done.output
    printed = json.loads(done.stdout[done.stdout.index("{") :])
    assert printed["model_calls"] == 0 and printed["score"] == "log" and printed["joint"] is False
    assert (tmp_path / "mine-repaired-log-per-tuple" / "repair.json").is_file()


def test_paper_shaped_files_share_questions_by_text_and_joint_repair_lowers_brier(tmp_path):
    source = write_tuples(tmp_path / "paper", forecasts=True)
    graph = read_graph(source)
    assert graph.n_questions == 8 * 3 + 16 * 2  # bases, their negations and paraphrases; ANDs, ORs
    assert graph.n_disagreeing() > 0  # a base question re-asked in several tuples, with different answers
    report = repair_run(source, "brier", joint=True, out=tmp_path / "out")
    q = report.total.realized_questions
    assert q.n == graph.n_questions and q.brier_after < q.brier_before
    after = report.total.violation_after
    assert after is not None and after < report.total.violation_before


def test_resolutions_from_another_file_are_matched_by_text(tmp_path):
    source = write_tuples(tmp_path / "paper", forecasts=True)
    for path in source.glob("*.jsonl"):  # the forecasts without resolutions, as a 2028 benchmark run would be
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        for row in rows:
            for entry in row["line"].values():
                entry["question"]["resolution"] = None
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert repair_forecasts(source).report.resolved_questions == 0
    questions = tmp_path / "resolved.jsonl"
    truth = write_tuples(tmp_path / "truth")
    lines = [json.loads(x) for x in (truth / "NegChecker.jsonl").read_text().splitlines()]
    questions.write_text("".join(json.dumps(row["P"]) + "\n" for row in lines))
    assert repair_forecasts(source, resolutions=questions).report.resolved_questions == 8


def test_a_missing_directory_is_one_sentence():
    with pytest.raises(RepairInputError, match="not a directory"):
        read_graph("no/such/run")


@needs_reference
def test_the_papers_scraped_tuples_joint_brier_repair_lowers_brier(tmp_path):
    report = repair_run(PAPER_RUN, "brier", joint=True, out=tmp_path / "out")
    assert report.total.tuples == 2000 and report.total.violation_after < 0.1 * report.total.violation_before
    q = report.total.realized_questions
    assert q.n > 1000 and q.brier_after < q.brier_before


def test_report_compares_base_repairs_and_the_arbitrage_forecaster(runs, tmp_path):
    base, arb = runs
    plain = cc("report", base, "--out", tmp_path / "plain.html")
    assert plain.exit_code == 0 and 'id="repair"' not in (tmp_path / "plain.html").read_text()
    done = cc("report", base, "--arbitrage-run", arb, "--out", tmp_path / "r.html")
    assert done.exit_code == 0, done.output
    html = (tmp_path / "r.html").read_text()
    section = html[html.index('id="repair"') :]
    for name in ("basic_scripted+repair-brier-joint", "basic_scripted+repair-brier-per-tuple", "arbitrage-NP1"):
        assert name in section and name in done.output
    calls = next(line for line in done.output.splitlines() if line.startswith("│ model calls")).split("│")[2:-1]
    base_calls, joint, per_tuple, arbitrage = (int(c) for c in calls)
    assert (joint, per_tuple) == (0, 0) and arbitrage > base_calls > 0
    per_tuple_violation = next(line for line in done.output.splitlines() if "mean violation" in line).split("│")[4]
    assert float(per_tuple_violation) < 1e-6
    assert 'id="summary"' in html or "<h2>" in html  # the report's own sections stay


@pytest.mark.parametrize(("score", "joint"), [("brier", True), ("brier", False), ("log", False)])
def test_every_check_of_the_bundled_sample_is_coherent_after_a_repair(tmp_path, score, joint):
    from consistency.datasets import sample_dir

    report = repair_run(sample_dir() / "forecasts", score, joint=joint, out=tmp_path / "out")
    assert len(report.checks) == 10 and report.disagreeing_questions > 0
    for c in report.checks:
        assert c.violation_after < 1e-6 < c.violation_before or c.violation_before < 1e-6
    assert report.total.guaranteed >= -1e-9 and report.total.moved > 0
    done = cc("score", tmp_path / "out", "--out", tmp_path / "scored")
    assert done.exit_code == 0, done.output


def test_the_python_api_takes_the_commands_defaults_and_checks(run, tmp_path):
    """``repair_run`` and ``cc repair`` share RepairOptions: per tuple is the default with the log score
    (it was joint in Python only), and an unknown score is refused in the same sentence."""
    from consistency.errors import InputError

    report = repair_run(run, "log", out=tmp_path / "log")
    assert report.joint is False and report.score == "log"
    assert repair_run(run, out=tmp_path / "brier").joint is True
    with pytest.raises(InputError, match="--score must be brier or log, not spherical"):
        repair_run(run, "spherical", out=tmp_path / "never")
    assert not (tmp_path / "never").exists()


# --------------------------------------------------------------------------- where the output may go


def test_an_out_that_holds_is_or_lies_inside_an_input_is_refused_and_the_input_survives(tmp_path):
    earlier = tmp_path / "repaired"
    source = write_tuples(tmp_path / "paper", forecasts=True)
    assert cc("repair", source, "-o", earlier).exit_code == 0
    inside = earlier / "copied-run"  # a run copied into an earlier repair's directory, then repaired over it
    shutil.copytree(source, inside)
    files = sorted(p.name for p in inside.iterdir())
    done = cc("repair", inside, "-o", earlier, "--force")
    assert done.exit_code == 2 and "contains the input" in " ".join(done.output.split()), done.output
    assert sorted(p.name for p in inside.iterdir()) == files
    done = cc("repair", source, "-o", source / "sub")
    assert done.exit_code == 2 and "lies inside the input" in done.output
    (tmp_path / "alias").symlink_to(earlier)  # the same directory under another name
    done = cc("repair", inside, "-o", tmp_path / "alias", "--force")
    assert done.exit_code == 2 and "contains the input" in " ".join(done.output.split())
    resolutions = earlier / "resolved.jsonl"
    resolutions.write_text("")
    done = cc("repair", source, "-o", earlier, "--force", "--resolutions", resolutions)
    assert done.exit_code == 2 and "contains the input" in " ".join(done.output.split())
    assert resolutions.exists() and inside.is_dir()


def test_a_dangling_or_linked_out(tmp_path):
    source = write_tuples(tmp_path / "paper", forecasts=True)
    (tmp_path / "dangling").symlink_to(tmp_path / "missing")
    done = cc("repair", source, "-o", tmp_path / "dangling")
    assert done.exit_code == 2 and "is a symbolic link to" in done.output and "Errno" not in done.output
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)  # a link to an (empty) directory is followed
    done = cc("repair", source, "-o", tmp_path / "link")
    assert done.exit_code == 0, done.output
    assert (real / "repair.json").is_file() and (tmp_path / "link").is_symlink()


#: Runs ``cc repair SRC -o OUT`` in a process of its own that stops once the partial copy is being written
#: (touching MARKER), so a test can signal or kill it there.
SLOW_REPAIR = """
import sys, time
import consistency.repair.runs as runs

marker = sys.argv[1]

def stuck(*args, **kwargs):
    open(marker, "w").close()
    time.sleep(120)

runs.write_stats = stuck
sys.argv = ["cc", "repair", sys.argv[2], "-o", sys.argv[3]]
from consistency.__main__ import main
main()
"""


def _slow_repair(tmp_path: Path, source: Path, out: Path):
    import subprocess
    import sys
    import time

    marker = tmp_path / f"marker-{out.name}"
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_REPAIR, str(marker), str(source), str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the repair never reached its writing step"
        time.sleep(0.02)
    return proc


def _partials(out: Path) -> list[Path]:
    return sorted(out.parent.glob(f".{out.name}.*partial"))


@pytest.mark.parametrize(
    ("signal_name", "code", "said"), [("SIGTERM", 143, "stopped by SIGTERM"), ("SIGINT", 130, "interrupted")]
)
def test_a_signal_during_a_repair_says_so_and_leaves_no_partial_copy(tmp_path, signal_name, code, said):
    import signal

    source = write_tuples(tmp_path / "paper", forecasts=True)
    out = tmp_path / "out"
    proc = _slow_repair(tmp_path, source, out)
    assert len(_partials(out)) == 1
    proc.send_signal(getattr(signal, signal_name))
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == code, stderr
    assert said in stderr and "nothing was written" in stderr and "Traceback" not in stderr
    assert _partials(out) == [] and not out.exists()


def test_a_partial_copy_of_a_killed_repair_is_removed_by_the_next_and_a_live_one_is_left_alone(tmp_path, caplog):
    import signal

    source = write_tuples(tmp_path / "paper", forecasts=True)
    out = tmp_path / "out"
    killed = _slow_repair(tmp_path, source, out)
    killed.send_signal(signal.SIGKILL)
    killed.communicate(timeout=60)
    [left] = _partials(out)
    live = _slow_repair(tmp_path, source, out)  # another repair into the same place, writing right now
    try:
        mine = [p for p in _partials(out) if p != left]
        with caplog.at_level("WARNING"):
            done = cc("repair", source, "-o", out)
        assert done.exit_code == 0, done.output
        assert not left.exists() and f"removed {left}" in caplog.text and "killed" in caplog.text
        assert _partials(out) == mine and (out / "repair.json").is_file()  # the live one's copy untouched
    finally:
        live.send_signal(signal.SIGTERM)
        live.communicate(timeout=60)
    assert _partials(out) == []
