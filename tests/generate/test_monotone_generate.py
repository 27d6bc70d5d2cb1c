"""MONOTONE chains made from one question: the horizon template, the model instantiator (real HTTP against the
scripted server), verification, `cc generate --check monotone`, and the bundled benchmark's chains."""

from __future__ import annotations

import asyncio
import json

import pytest

from consistency.checks import MONOTONE, monotone_check
from consistency.datasets import benchmark_dir
from consistency.fake_openai import ScriptedServer
from consistency.fake_openai.rules import RULES
from consistency.generate import TemplateInstantiator
from consistency.generate.chains import NoHorizon, find_deadline, horizon_chain, shift_years
from consistency.generate.llm import LLMInstantiator
from consistency.generate.pipeline import GenerateOptions, generate
from consistency.generate.verify import TupleVerifier
from consistency.llm import LLM, LLMSettings
from consistency.models import ForecastingQuestion, tuple_model
from tests.generate.test_generate_cli import cc


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))


def by_date(resolution=None, word="by", day="December 31, 2028", iso="2028-12-31", i=0) -> ForecastingQuestion:
    stated = "December 31, 2027" if word == "before" else day
    return ForecastingQuestion(
        id=f"h{i}",
        title=f"Will agency {i} land a rover on Mars {word} {day}?",
        body=f"Resolves YES if, from March 1, 2026 to {stated}, agency {i} lands a working rover on Mars (per its "
        f"official site). Resolves NO otherwise.",
        resolution_date=iso,
        created_date="2026-03-01",
        metadata={"category": "Space"},
        resolution=resolution,
    )


def threshold(i=0) -> ForecastingQuestion:
    return ForecastingQuestion(
        id=f"t{i}",
        title=f"Will country {i} win at least 40 gold medals at the next Summer Olympics?",
        body=f"Resolves YES if country {i} wins at least 40 gold medals at the next Summer Games, per the IOC.",
        resolution_date="2028-08-31",
        created_date="2026-03-01",
    )


def test_template_moves_title_body_and_resolution_date_together():
    tup = horizon_chain(MONOTONE, by_date())
    tuple_model(MONOTONE).model_validate(tup)
    assert tup["P_1"]["id"] == "h0"  # the source question itself, unchanged
    titles = [tup[f]["title"] for f in MONOTONE.field_names]
    assert [t.rsplit(" ", 1)[-1] for t in titles] == ["2028?", "2029?", "2030?"]
    assert "to December 31, 2030, agency 0" in tup["P_3"]["body"] and "2028" not in tup["P_3"]["body"]
    dates = [tup[f]["resolution_date"][:10] for f in MONOTONE.field_names]
    assert dates == ["2028-12-31", "2029-12-31", "2030-12-31"]
    assert all(tup[f]["created_date"][:10] == "2026-03-01" < tup[f]["resolution_date"] for f in MONOTONE.field_names)
    assert tup["metadata"]["chain"]["resolution_dates"] == dates and tup["metadata"]["instantiator"] == "template"
    assert horizon_chain(MONOTONE, by_date()) == tup  # deterministic, ids included


def test_before_deadlines_shift_the_day_before_in_the_criteria_and_longer_chains_keep_going():
    tup = horizon_chain(monotone_check(5), by_date(word="before", day="January 1, 2028", iso="2028-01-01"))
    assert tup["P_5"]["title"].endswith("before January 1, 2032?")
    assert "to December 31, 2031," in tup["P_5"]["body"]
    assert tup["P_5"]["resolution_date"].startswith("2032-01-01")
    assert shift_years(__import__("datetime").date(2028, 2, 29), 1).isoformat() == "2029-02-28"


@pytest.mark.parametrize(
    ("question", "why"),
    [
        (threshold(), "does not end with"),
        (by_date().model_copy(update={"title": "Will X win the 2028 election by December 31, 2028?"}), "names a year"),
        (by_date().model_copy(update={"title": "Will X, as first published by December 31, 2028?"}), "reported"),
        (ForecastingQuestion.model_validate({**by_date().model_dump(), "resolution_date": "2026-06-30"}), "is not the"),
        (by_date().model_copy(update={"body": "Resolves YES if it happens."}), "do not state the deadline"),
    ],
)
def test_questions_that_are_no_horizon_are_refused_with_a_reason(question, why):
    with pytest.raises(NoHorizon, match=why):
        find_deadline(question)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (True, {"P_1": True, "P_2": True, "P_3": True}),  # happened by d: by every later date too
        (False, {"P_1": False, "P_2": None, "P_3": None}),  # not by d: later dates still open
        (None, {"P_1": None, "P_2": None, "P_3": None}),
    ],
)
def test_resolution_propagates_from_the_source(source, expected):
    tup = TemplateInstantiator().instantiate_sync(MONOTONE, {"P_1": by_date(source)})
    assert {f: tup[f]["resolution"] for f in MONOTONE.field_names} == expected


def _settings() -> LLMSettings:
    return LLMSettings(timeout=5.0, max_backoff=0.05)


def test_model_writes_chains_the_template_cannot_and_the_template_still_takes_horizons():
    async def go(spec):
        async with LLM(_settings()) as llm:
            inst = LLMInstantiator(llm, spec)
            assert inst.bases_for(MONOTONE) == ("P_1",)
            made = [await inst.instantiate(MONOTONE, {"P_1": q}) for q in (threshold(), by_date(True))]
            return made, llm.stats.calls

    with ScriptedServer(RULES["demo"]()) as srv:
        (model, template), calls = asyncio.run(go(srv.model_spec()))
        asked = [r for r in srv.requests if r.tool_name == "ChainText"]
    assert calls == 1 and len(asked) == 1  # the horizon question needed no call
    prompt = asked[0].last_user_text
    assert threshold().title in prompt and "Write 2 new questions" in prompt
    tuple_model(MONOTONE).model_validate(model)
    assert [model[f]["title"] for f in ("P_2", "P_3")] == [
        "Will country 0 win at least 32 gold medals at the next Summer Olympics?",
        "Will country 0 win at least 24 gold medals at the next Summer Olympics?",
    ]
    assert model["metadata"]["instantiator"] == "llm" and model["metadata"]["model"].endswith("::scripted")
    assert model["P_3"]["resolution_date"] == model["P_1"]["resolution_date"]  # thresholds keep the date
    assert template["metadata"]["instantiator"] == "template" and template["P_3"]["resolution"] is True


def test_generate_verifies_each_link_against_the_one_before(tmp_path):
    async def go(spec):
        async with LLM(_settings()) as llm:
            return await generate(
                MONOTONE, [threshold(i) for i in range(3)], LLMInstantiator(llm, spec), tmp_path,
                GenerateOptions(n=2, candidates=10), verifier=TupleVerifier(llm, spec, 6),
            )  # fmt: skip

    with ScriptedServer(RULES["demo"]()) as srv:
        report = asyncio.run(go(srv.model_spec()))
        verdicts = [r.last_user_text for r in srv.requests if r.tool_name == "Verdict"]
    assert report.written == 2
    written = [json.loads(x) for x in (tmp_path / "MonotoneChecker.jsonl").read_text().splitlines()]
    assert all(t["metadata"]["verification"]["score"] == 8 for t in written)
    assert "[P_2] must resolve YES whenever question (a) resolves YES" in verdicts[0]
    assert "[P_3] must resolve YES whenever [P_2] resolves YES" in verdicts[0]


def test_cc_generate_monotone_with_the_template_says_which_questions_do_not_fit(tmp_path):
    qs = tmp_path / "q.jsonl"
    qs.write_text("".join(q.model_dump_json() + "\n" for q in (by_date(i=1), by_date(i=2), threshold())))
    r = cc(tmp_path, "generate", "--check", "mono", "-q", qs, "-n", "3", "--out", "out", "--instantiator", "template")
    assert r.returncode == 0, r.stderr
    assert "MONOTONE: 2 new tuple(s), 2 in out/MonotoneChecker.jsonl" in r.stdout
    assert "skipped 1 question(s): no 'by DATE' deadline the horizon template can move" in r.stdout
    assert "--instantiator llm writes chains for others" in r.stderr
    reject = json.loads((tmp_path / "out" / "rejects" / "MonotoneChecker.jsonl").read_text())
    assert reject["bases"]["P_1"]["id"] == "t0" and "does not end with" in reject["reason"]
    assert "1 skipped: no 'by DATE' deadline" in r.stderr and "were rejected" not in r.stderr


def test_cc_generate_takes_a_list_and_skips_what_the_questions_cannot_make(tmp_path):
    qs = tmp_path / "q.jsonl"
    qs.write_text("".join(q.model_dump_json() + "\n" for q in (by_date(i=1), by_date(i=2))))
    r = cc(tmp_path, "generate", "--check", "neg, mono,condcond", "-q", qs, "-n", "1", "--out", "out")
    assert r.returncode == 0, r.stderr
    assert "NEGATION: 1 new tuple(s)" in r.stdout and "MONOTONE: 1 new tuple(s)" in r.stdout
    assert "CONDCOND: not generated: need at least 3 base questions, got 2" in r.stderr
    everything = cc(tmp_path, "generate", "--check", "all", "-q", qs, "-n", "1", "--out", "all")
    assert everything.returncode == 0, everything.stderr
    assert len(list((tmp_path / "all").glob("*Checker.jsonl"))) == 10  # all but CONDCOND
    assert "CONDCOND: not generated" in everything.stderr
    bad = cc(tmp_path, "generate", "--check", "neg,nope", "-q", qs, "-n", "1", "--out", "bad")
    assert bad.returncode != 0 and "unknown check 'nope'" in bad.stderr


def test_bundled_benchmark_has_24_template_chains_over_bundled_questions():
    path = benchmark_dir() / "tuples" / "MonotoneChecker.jsonl"
    chains = [json.loads(x) for x in path.read_text().splitlines()]
    bundled = {q["id"]: q for q in map(json.loads, (benchmark_dir() / "questions.jsonl").read_text().splitlines())}
    assert len(chains) == 24 and len({t["P_1"]["id"] for t in chains}) == 24
    for tup in chains:
        tuple_model(MONOTONE).model_validate(tup)
        assert tup["P_1"] == bundled[tup["P_1"]["id"]]
        assert tup == horizon_chain(MONOTONE, ForecastingQuestion.model_validate(tup["P_1"]))
        years = [int(tup[f]["resolution_date"][:4]) for f in MONOTONE.field_names]
        assert years[1] == years[0] + 1 and years[2] == years[0] + 2


def test_the_template_skips_sources_it_cannot_chain_and_counts_them():
    """instantiate_all (the benchmarks', cc attack's and make_benchmark's path) used to raise NoHorizon."""
    from consistency.generate import instantiate_all

    pool = [by_date(i=1), threshold(1), by_date(i=2), threshold(2), threshold(3)]
    made = asyncio.run(instantiate_all(TemplateInstantiator(), MONOTONE, pool, 5, seed=1))
    assert sorted(t["P_1"]["id"] for t in made.tuples) == ["h1", "h2"]
    assert (made.skipped, made.pool) == (3, 5)
    assert (
        made.note(MONOTONE)
        == "MONOTONE: skipped 3 of 5 question(s): no 'by DATE' deadline the horizon template can move"
    )
    with pytest.raises(ValueError, match="need at least 1 base question"):
        asyncio.run(instantiate_all(TemplateInstantiator(), MONOTONE, [threshold(1)], 5))


def test_cc_attack_says_how_many_questions_the_template_could_not_chain(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    qs = tmp_path / "q.jsonl"
    qs.write_text("".join(q.model_dump_json() + "\n" for q in (by_date(i=1), by_date(i=2), threshold(1))))
    r = cc(tmp_path, "attack", "-f", "constant", "-q", qs, "-c", "mono", "-b", "6", "-o", "att", "--no-baseline")
    assert r.returncode == 0, r.stderr
    assert (
        "Seeds: MONOTONE: skipped 1 of 3 question(s): no 'by DATE' deadline the horizon template can move." in r.stdout
    )
    assert "skipped 1 of 3" in (tmp_path / "att" / "report.md").read_text()
