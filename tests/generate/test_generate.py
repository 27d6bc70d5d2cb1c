"""Tuple generation with the llm instantiator, verification, relevance and resumable output, against the
scripted server (real HTTP; rule-based answers, including bad ones)."""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest

from consistency.checks import all_checks, get_check
from consistency.checks.check import NONE
from consistency.embeddings import LexicalEmbedder
from consistency.fake_openai import Fault, Reply, ScriptedServer, faults_then, schema_rule
from consistency.generate.llm import LLMInstantiator
from consistency.generate.pipeline import GenerateOptions, generate, tuple_key
from consistency.generate.relevance import RelevanceRanker
from consistency.generate.verify import TupleVerifier
from consistency.llm import LLM, LLMSettings
from consistency.models import ForecastingQuestion, tuple_model

GOOD = {"FieldText": {"title": "Will the generated event happen?", "body": "Resolves YES per the criteria given."}}


def answers(verdict: int = 9, relevance: int = 7, field: dict | None = None):
    """A model that writes plausible fields and gives the verifier and relevance scores asked for."""
    base = schema_rule()

    def rule(request):
        if request.tool_name == "FieldText":
            return Reply.json(field or {"title": f"Will {request.last_user_text[-40:]}?", "body": "B" * 30})
        if request.tool_name == "Verdict":
            return Reply.json({"reasons": "scripted verdict", "score": verdict})
        if request.tool_name == "RelevanceAnswer":
            return Reply.json({"reasons": "scripted relevance", "score": relevance})
        return base(request)

    return rule


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))


def question(i: int, resolution=None, year=2028, category="Space") -> ForecastingQuestion:
    return ForecastingQuestion(
        id=f"q{i}",
        title=f"Will space agency {i} launch mission {i} before {year}?",
        body=f"Resolves YES if agency {i} launches mission {i} before January 1, {year}, per its official site.",
        resolution_date=f"{year}-01-01",
        created_date=f"2024-10-0{1 + i % 9}",
        metadata={"category": category},
        resolution=resolution,
    )


def llm_settings(**kw) -> LLMSettings:
    return LLMSettings(**({"timeout": 5.0, "max_backoff": 0.05} | kw))


async def _instantiate_worlds(spec: str):
    out = {}
    async with LLM(llm_settings()) as llm:
        inst = LLMInstantiator(llm, spec)
        for check in all_checks():
            names = inst.bases_for(check)
            for values in itertools.product((True, False, None), repeat=len(names)):
                years = (2027, 2029, 2028)
                bases = {n: question(i, v, years[i]) for i, (n, v) in enumerate(zip(names, values, strict=True))}
                out[check.name, values] = (bases, await inst.instantiate(check, bases))
    return out


def test_every_check_instantiates_with_dates_and_propagated_resolutions():
    with ScriptedServer(answers()) as srv:
        made = asyncio.run(_instantiate_worlds(srv.model_spec()))
    worlds = {c.name: {tuple(w) for w in c.worlds.tolist()} for c in all_checks()}
    for (name, values), (bases, tup) in made.items():
        check = get_check(name)
        tuple_model(check).model_validate(tup)
        assert tup["metadata"]["instantiator"] == "llm" and tup["metadata"]["model"].endswith("::scripted")
        assert {k: v["id"] for k, v in tup["metadata"]["base_sentences"].items()} == {k: q.id for k, q in bases.items()}
        expected = check.resolve({b: q.resolution for b, q in bases.items()})
        for field in check.field_names:
            assert tup[field]["resolution"] == expected[field], (name, values, field)
            assert tup[field]["question_type"] == check.question_types[field]
            atoms = [b for b in check.formulas[field].atoms() if b in bases] or list(bases)
            latest = max(bases[b].resolution_date for b in atoms)
            assert tup[field]["resolution_date"] == latest.isoformat().replace("+00:00", "Z")
        if None not in values:  # resolved bases: a possible world (cons_P stays unknown when P is NO)
            row = [NONE if tup[f]["resolution"] is None else int(tup[f]["resolution"]) for f in check.field_names]
            binary = [check.question_types[f] == "binary" for f in check.field_names]
            assert any(
                all(r == v or (r == NONE and b) for r, v, b in zip(row, w, binary, strict=True)) for w in worlds[name]
            ), (name, values, row)
    # CONSEQUENCE needs only P; the model writes cons_P, which resolves YES when P does
    _, cons = made["CONSEQUENCE", (True,)]
    assert set(cons["metadata"]["base_sentences"]) == {"P"} and cons["cons_P"]["resolution"] is True
    assert made["CONSEQUENCE", (False,)][1]["cons_P"]["resolution"] is None


def test_prompts_state_the_fields_meaning():
    inst = LLMInstantiator(None, "x")  # type: ignore[arg-type]
    bases = {"P": question(1), "Q": question(2)}
    user = inst.messages(get_check("expev"), "P_given_not_Q", bases)[1]["content"]
    assert "assume that question (b) resolves NO" in user and "question (a) resolves YES" in user
    assert bases["P"].body in user and bases["Q"].body in user
    user = inst.messages(get_check("but"), "Q_and_not_P", bases)[1]["content"]
    assert "question (b) resolves YES and question (a) resolves NO" in user


def _run(spec, questions, out, check="cond", n=4, verdict_threshold=6, relevance=True, **opts):
    async def go():
        async with LLM(llm_settings()) as llm:
            ranker = RelevanceRanker(LexicalEmbedder(), llm, spec) if relevance else None
            report = await generate(
                get_check(check),
                questions,
                LLMInstantiator(llm, spec),
                out,
                GenerateOptions(n=n, candidates=60, **opts),
                ranker=ranker,
                verifier=TupleVerifier(llm, spec, verdict_threshold),
            )
            return report, llm.stats

    return asyncio.run(go())


def lines(path):
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def test_failing_verifier_sends_tuples_to_rejects(tmp_path):
    pool = [question(i) for i in range(8)]
    with ScriptedServer(answers(verdict=2)) as srv:
        report, _ = _run(srv.model_spec(), pool, tmp_path, n=3)
    assert report.written == 0 and report.rejected["verify: below threshold"] > 0
    rejects = lines(tmp_path / "rejects" / "CondChecker.jsonl")
    assert len(rejects) == report.rejected["verify: below threshold"]
    assert all(r["step"] == "verify" and r["score"] == 2 and r["reason"] == "scripted verdict" for r in rejects)
    tuple_model(get_check("cond")).model_validate(rejects[0]["tuple"])  # the rejected tuple is kept whole
    assert not (tmp_path / "CondChecker.jsonl").read_text()


def test_verified_tuples_carry_verdict_and_relevance(tmp_path):
    pool = [question(i) for i in range(8)]
    with ScriptedServer(answers(verdict=8, relevance=9)) as srv:
        report, stats = _run(srv.model_spec(), pool, tmp_path, n=3)
        prompts = [json.dumps(r.messages) for r in srv.requests]
    assert report.written == 3
    written = lines(tmp_path / "CondChecker.jsonl")
    assert [t["metadata"]["verification"]["score"] for t in written] == [8, 8, 8]
    assert all(t["metadata"]["relevance"]["score"] == 9 for t in written)
    assert len(prompts) == len(set(prompts)) == stats.calls  # no prompt sent twice


def test_malformed_answers_are_retried_then_recorded(tmp_path):
    pool = [question(i) for i in range(4)]
    bad = answers(field={"title": "", "body": ""})  # never validates: re-asked, then recorded
    with ScriptedServer(bad) as srv:
        report, stats = _run(srv.model_spec(), pool, tmp_path, check="neg", n=2)
    assert report.written == 0 and report.rejected["instantiate: model answer unusable"] == 4
    reject = lines(tmp_path / "rejects" / "NegChecker.jsonl")[0]
    assert reject["step"] == "instantiate" and "not_P" in reject["reason"] and '"title": ""' in reject["raw"]
    assert stats.calls == 4 * 3  # each field asked once and re-asked twice

    flaky = faults_then(answers(), Fault.malformed(), Fault.server_error(503))  # transient: retried, not recorded
    with ScriptedServer(flaky) as srv:
        report, stats = _run(srv.model_spec(), pool, tmp_path / "flaky", check="neg", n=2)
    assert report.written == 2 and stats.retries >= 2 and not report.rejected


def test_relevance_prefilters_then_scores_each_group_once(tmp_path):
    pool = [question(i) for i in range(6)] + [
        ForecastingQuestion(id=f"x{i}", title=f"Will the rice harvest of province {i} grow by 40%?", body="b")
        for i in range(6)
    ]
    with ScriptedServer(answers()) as srv:

        async def go():
            async with LLM(llm_settings()) as llm:
                ranker = RelevanceRanker(LexicalEmbedder(), llm, srv.model_spec())
                groups = [{"P": a, "Q": b} for a, b in itertools.permutations(pool, 2)]
                return await ranker.rank(groups, top=10, prefilter=20), ranker.stats

        ranked, stats = asyncio.run(go())
        scored = [r for r in srv.requests if r.tool_name == "RelevanceAnswer"]
    assert len(ranked) == 10 and stats.prefiltered_out == 132 - 20
    assert len(scored) == stats.scored < 20  # ordered pairs of one group share a call
    assert len({json.dumps(r.messages) for r in scored}) == len(scored)
    for r in ranked:  # similar wording wins the prefilter: no space/rice mixes
        assert len({q.id[0] for q in r.bases.values()}) == 1


def test_around_a_question_takes_every_position(tmp_path):
    pool = [question(i) for i in range(6)]
    with ScriptedServer(answers()) as srv:
        report, _ = _run(srv.model_spec(), pool, tmp_path, n=6, around=pool[0])
    written = lines(tmp_path / "CondChecker.jsonl")
    assert report.written == 6
    positions = {name for t in written for name, q in t["metadata"]["base_sentences"].items() if q["id"] == "q0"}
    assert all("q0" in {q["id"] for q in t["metadata"]["base_sentences"].values()} for t in written)
    assert positions == {"P", "Q"}


def test_resume_skips_done_bases_and_a_partial_line(tmp_path):
    pool = [question(i) for i in range(8)]
    with ScriptedServer(answers()) as srv:
        first, _ = _run(srv.model_spec(), pool, tmp_path, n=2)
        path = tmp_path / "CondChecker.jsonl"
        with path.open("a") as fh:
            fh.write('{"P": {"id": "trunc')  # killed mid-write
        again, _ = _run(srv.model_spec(), pool, tmp_path, n=4)
    written = lines(path)
    keys = [tuple_key(get_check("cond"), t["metadata"]["base_sentences"]) for t in written]
    assert first.written == 2 and again.already == 2 and again.written == 2
    assert len(keys) == len(set(keys)) == 4


def test_tuples_are_written_in_the_order_of_their_candidates(tmp_path):
    """Tuples that finish together are written in ranking order, not in the order of a set of tasks (which
    follows memory addresses: the same command wrote another file after an unrelated change of the code)."""
    from consistency.generate import TemplateInstantiator
    from consistency.generate.pipeline import candidate_bases

    check, pool = get_check("and"), [question(i) for i in range(8)]
    options = GenerateOptions(n=20, concurrency=32)
    inst = TemplateInstantiator()
    order = [tuple_key(check, b) for b in candidate_bases(check, inst.bases_for(check), pool, options)]
    report = asyncio.run(generate(check, pool, inst, tmp_path, options))
    keys = [tuple_key(check, t["metadata"]["base_sentences"]) for t in lines(tmp_path / "AndChecker.jsonl")]
    assert report.written == len(keys) >= 10
    assert keys == sorted(keys, key=order.index)
