"""Reading ForecastBench as published: question sets, resolution sets, combination questions, bad entries."""

from __future__ import annotations

import json
import os
from collections import Counter
from datetime import date
from pathlib import Path

import pytest

from consistency.forecastbench import ForecastBenchError, load
from consistency.forecastbench.formats import MARKET_SOURCES
from consistency.forecastbench.keys import RowKey, key_of, question_id
from consistency.forecastbench.synthetic import Shape, make_round, sample_dir, write_round
from tests.support.reference import REFERENCE

FB = REFERENCE / "forecastbench"
needs_forecastbench = pytest.mark.skipif(
    not FB.is_dir(),
    reason=f"ForecastBench's published sets are not at {FB} (put ../shared/reference-data beside the repository "
    "or set CC_REFERENCE_DATA)",
)
SETS = ("2024-07-21-human", "2025-10-26-llm", "2026-08-02-llm")


def _raw(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _expected(qset: dict, rset: dict) -> tuple[Counter, Counter, int]:
    """Independently of the reader: questions per source (a dataset question once per resolution date), the
    outcomes a resolution set gives those questions, and the unresolved market rows among them."""
    questions, outcomes, unresolved = Counter(), Counter(), 0
    wanted = set()
    for q in qset["questions"]:
        dates = q["resolution_dates"] if q["resolution_dates"] != "N/A" else [None]
        questions[q["source"]] += len(dates)
        wanted |= {(q["id"], q["source"], d) for d in dates}
    for r in rset["resolutions"]:
        if isinstance(r["id"], list):
            continue
        key = (r["id"], r["source"], None if r["source"] in MARKET_SOURCES else r["resolution_date"])
        if key in wanted and r["resolved"]:
            outcomes[r["source"]] += 1
        elif key in wanted and r["source"] in MARKET_SOURCES:
            unresolved += 1
    return questions, outcomes, unresolved


@needs_forecastbench
@pytest.mark.parametrize("name", SETS)
def test_every_question_of_the_reference_sets_is_read_with_its_outcomes(name):
    qpath = FB / "question_sets" / f"{name}.json"
    rpath = FB / "resolution_sets" / f"{name[:10]}_resolution_set.json"
    loaded = load([str(qpath)])  # the resolution set is found beside it, where the datasets repository keeps it
    imported = loaded.imported
    questions, outcomes, unresolved = _expected(_raw(qpath), _raw(rpath))
    assert imported.problems == []
    assert loaded.sets == [(str(qpath), name[:10], str(rpath))]
    assert imported.per_source == questions
    assert Counter(q.metadata["forecastbench"]["source"] for q in imported.questions) == questions
    assert imported.outcomes == outcomes
    assert (
        Counter(q.metadata["forecastbench"]["source"] for q in imported.questions if q.resolution is not None)
        == outcomes
    )
    assert imported.unresolved_markets == unresolved
    for q in imported.questions:
        fb = q.metadata["forecastbench"]
        key = key_of(q.id)
        assert key is not None and key.due == name[:10] and key.source == fb["source"]
        assert "{resolution_date}" not in q.title + q.body and "{forecast_due_date}" not in q.title + q.body
        if key.market:
            assert fb["horizon"] is None
            row = fb.get("resolution")
            if row is not None and not row["resolved"]:  # the current price: information, never an outcome
                assert q.resolution is None and 0.0 <= row["resolved_to"] <= 1.0
            assert 0.0 <= q.metadata["market_prob"] <= 1.0  # the freeze-date market value, kept as the crowd's
        else:
            assert fb["horizon"] == (date.fromisoformat(key.resolution_date) - date.fromisoformat(key.due)).days
            assert fb["horizon"] in (7, 30, 90, 180, 365, 1095, 1825, 3650)
            assert key.resolution_date in q.title or key.resolution_date in q.body


@needs_forecastbench
def test_the_three_reference_sets_at_once_and_by_reference():
    loaded = load([str(FB)])
    assert len(loaded.imported.questions) == 968 + 2246 + 2248
    by_ref = load(["fb:latest"], datasets=FB)  # no latest-llm.json pointer there: the newest LLM set
    assert by_ref.sets[0][1] == "2026-08-02" and len(by_ref.imported.questions) == 2248
    human = load(["fb:2024-07-21-human"], datasets=FB)
    assert len(human.imported.questions) == 968 and human.imported.outcomes


def test_ids_carry_the_forecastbench_row_and_read_back():
    keys = [
        RowKey("2026-08-02", "manifold", ("yfyPBZNkCMZiffCyICSj",)),
        RowKey("2026-08-02", "dbnomics", ("meteofrance_TEMPERATURE_celsius.07460.D",), "2026-08-09"),
        RowKey("2024-07-21", "acled", ("a:b+c", "d@e/f"), "2024-07-28", (1, -1)),
        RowKey("2024-07-21", "polymarket", ("0x2c", "0x57"), None, (-1, -1)),
    ]
    for key in keys:
        assert key_of(question_id(key)) == key
    assert key_of("8f2a1c9e-uuid") is None and key_of("fb:not-a-date:x:y") is None
    assert (
        keys[1].horizon == 7 and keys[1].question_pk == "2026-08-02_dbnomics_meteofrance_TEMPERATURE_celsius.07460.D_7"
    )
    assert keys[0].question_pk == "2026-08-02_manifold_yfyPBZNkCMZiffCyICSj"


def _round_dir(tmp_path: Path, shape: Shape) -> tuple[Path, Path]:
    rnd = make_round(date(2025, 3, 2), date(2025, 11, 1), shape, seed=1)
    return write_round(rnd, tmp_path)


def test_combination_questions_are_read_one_per_direction_with_their_outcomes(tmp_path):
    shape = Shape({"manifold": 4}, {"acled": 4}, market_rows=1.0, market_resolved=1.0, combinations=1)
    qpath, rpath = _round_dir(tmp_path, shape)
    imported = load([str(qpath)]).imported
    combos = [q for q in imported.questions if key_of(q.id).combination]
    assert len(combos) == 4 + 4 * 8  # a market combination once per direction; a dataset one per date too
    raw = _raw(rpath)["resolutions"]
    combo_rows = {(tuple(r["id"]), tuple(r["direction"]), r["resolution_date"] if r["source"] == "acled" else None):
                  r["resolved_to"] for r in raw if isinstance(r["id"], list)}  # fmt: skip
    for q in combos:
        k = key_of(q.id)
        expected = combo_rows.get((k.ids, k.direction, k.resolution_date))
        assert (q.resolution is None) == (expected is None)
        if expected is not None:
            assert q.resolution == (expected == 1.0)
    assert "resolve NO" in next(q.title for q in combos if key_of(q.id).direction == (1, -1))
    # COMBINATION tuples: P and Q are the set's own questions (with their outcomes), then the four joint ones.
    assert len(imported.tuples) == 1 + 8
    by_id = {q.id: q for q in imported.questions}
    for t in imported.tuples:
        assert by_id[t["P"]["id"]].resolution == (t["P"]["resolution"])
        for name in ("P_and_Q", "P_and_not_Q", "not_P_and_Q", "not_P_and_not_Q"):
            assert key_of(t[name]["id"]).ids == (key_of(t["P"]["id"]).ids[0], key_of(t["Q"]["id"]).ids[0])
        if t["P"]["resolution"] is not None and t["Q"]["resolution"] is not None:
            assert by_id[t["P_and_Q"]["id"]].resolution == (t["P"]["resolution"] and t["Q"]["resolution"])


def test_bad_entries_are_named_with_their_reason_and_the_rest_is_read(tmp_path):
    qpath, rpath = _round_dir(tmp_path, Shape({"metaculus": 3}, {"fred": 2}, 1.0, 1.0))
    qset, rset = _raw(qpath), _raw(rpath)
    qset["questions"][0]["source"] = "kalshi"
    qset["questions"][1]["question"] = "  "
    qset["questions"][3]["resolution_dates"][2] = "2025-03-05"
    qset["questions"].append({**qset["questions"][2]})
    qset["questions"].append({"id": ["1", "2"], "source": "metaculus", "question": "Both?", "resolution_dates": "N/A"})
    rset["resolutions"][0]["resolved_to"] = 0.5
    rset["resolutions"][1]["direction"] = [1, 1]
    qpath.write_text(json.dumps(qset))
    rpath.write_text(json.dumps(rset))
    loaded = load([str(qpath)])
    reasons = [str(p) for p in loaded.imported.problems]
    assert any("questions[0] (id met" in r and "unknown source 'kalshi'" in r for r in reasons)
    assert any("questions[1]" in r and "question text is empty" in r for r in reasons)
    assert any("questions[3]" in r and "2025-03-05 is not the due date 2025-03-02 plus one of" in r for r in reasons)
    assert any("questions[5]" in r and "repeats questions[2]" in r for r in reasons)
    assert any("questions[6]" in r and "combination_of" in r for r in reasons)
    assert any("resolutions[0]" in r and "to 0.5 (not 0 or 1)" in r for r in reasons)
    assert any("resolutions[1]" in r and "direction on a single question" in r for r in reasons)
    assert all(str(qpath) in r or str(rpath) in r for r in reasons)
    assert loaded.imported.per_source == Counter({"metaculus": 1, "fred": 8})


@pytest.mark.parametrize(
    "content, reason",
    [
        ("not json", "not JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"forecast_due_date": "soon", "questions": []}', "forecast_due_date must be a date"),
        ("version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 12\n", "Git LFS pointer"),
        ('{"hello": 1}', "not a ForecastBench question, resolution or forecast set"),
    ],
)
def test_a_file_that_is_no_forecastbench_set_is_one_sentence(tmp_path, content, reason):
    path = tmp_path / "2025-01-01-llm.json"
    path.write_text(content)
    with pytest.raises(ForecastBenchError, match=reason) as info:
        load([str(path)])
    assert str(path) in str(info.value)


def test_references_resolve_against_a_local_datasets_folder(tmp_path):
    root = tmp_path / "forecastbench-datasets"
    for due in (date(2025, 3, 2), date(2025, 3, 16)):
        write_round(make_round(due, date(2025, 4, 1), Shape({"infer": 2}, {"yfinance": 1}), seed=2), root / "datasets")
    assert load(["fb:latest"], datasets=root).sets[0][1] == "2025-03-16"  # newest, without a pointer
    (root / "datasets" / "question_sets" / "latest-llm.json").write_text("2025-03-02-llm.json\n")
    latest = load(["fb:latest"], datasets=root)
    assert latest.sets[0][1] == "2025-03-02" and latest.sets[0][2].endswith("2025-03-02_resolution_set.json")
    assert load(["fb:2025-03-16"], datasets=root / "datasets").sets[0][1] == "2025-03-16"
    without = load(["fb:2025-03-16"], datasets=root, resolutions=False)
    assert without.sets[0][2] is None and not without.imported.outcomes
    with pytest.raises(ForecastBenchError, match=r"no 2025-04-01-llm\.json in"):
        load(["fb:2025-04-01"], datasets=root)


def test_the_bundled_sample_regenerates_identically(tmp_path):
    from consistency.forecastbench.synthetic import make_sample

    made = make_sample(tmp_path)
    for path in made:
        bundled = sample_dir() / path.relative_to(tmp_path)
        assert bundled.read_bytes() == path.read_bytes(), (
            f"{bundled} differs: run python -m consistency.forecastbench.synthetic"
        )
    assert os.path.basename(made[-1]) == "latest-llm.json"
