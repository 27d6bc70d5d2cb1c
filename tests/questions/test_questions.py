"""Base-question pipelines against the scripted server: titles (de-duplicated), bodies and dates, verification,
rejects and resuming; and the ``cc questions`` commands."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from consistency.embeddings import LexicalEmbedder
from consistency.fake_openai import Reply, ScriptedServer
from consistency.llm import LLM, LLMSettings
from consistency.models import ForecastingQuestion
from consistency.questions import Window, build_questions, related_titles, synthetic_titles, verify_questions
from tests.generate.test_generate_cli import cc

TITLES = [
    "Will Brazil's central bank cut its policy rate below 9% before 2028?",
    "Will Brazil's central bank cut its policy rate below 9% before the year 2028?",  # a rewording
    "Will the NBA expand to 32 teams before 2028?",
    "Will the bad question happen?",
]


def rule(request):
    text = request.last_user_text
    if request.tool_name == "Titles":
        return Reply.json({"titles": TITLES})
    if request.tool_name == "QuestionBody":
        late = "NBA" in text
        body = "Resolves YES if the event in the title happens, as reported by official sources, before the date."
        return Reply.json({"body": body, "resolution_date": "2029-06-01" if late else "2027-12-31"})
    if request.tool_name == "QuestionVerdict":
        return Reply.json({"reasons": "vague" if "bad" in text else "clear", "score": 2 if "bad" in text else 8})
    raise AssertionError(f"unexpected request {request.tool_name}")


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))


WINDOW = Window(*map(__import__("datetime").date.fromisoformat, ("2024-10-01", "2028-01-01")))


def test_titles_are_deduplicated_and_bodies_checked(tmp_path):
    out = tmp_path / "q.jsonl"
    with ScriptedServer(rule) as srv:
        spec = srv.model_spec()

        async def go():
            async with LLM(LLMSettings(timeout=5)) as llm:
                titles = await synthetic_titles(llm, spec, category="Economics", tags=["Brazil", "NBA"], examples=[],
                                                created="2024-10-01", resolve_by="2028-01-01", n=10,
                                                embedder=LexicalEmbedder(), threshold=0.8, max_calls=2)  # fmt: skip
                first = await build_questions(titles, out, llm, spec, WINDOW, verifier_model=spec, metadata={"c": 1})
                again = await build_questions(titles, out, llm, spec, WINDOW, verifier_model=spec)
                return titles, first, again

        titles, first, again = asyncio.run(go())
        prompts = [r.last_user_text for r in srv.requests]
    assert titles == [TITLES[0], TITLES[2], TITLES[3]]
    assert "Category: Economics" in prompts[0] and "2024-10-01" in prompts[0]
    assert first.written == 1 and dict(first.rejected) == {"body": 1, "verify": 1}
    q = ForecastingQuestion.model_validate_json(out.read_text().splitlines()[0])
    assert q.title == TITLES[0] and q.metadata["c"] == 1 and q.metadata["verification"]["score"] == 8
    assert q.resolution_date.date().isoformat() == "2027-12-31" and q.created_date.date().isoformat() == "2024-10-01"
    rejects = [json.loads(x) for x in (tmp_path / "q.rejects.jsonl").read_text().splitlines()]
    assert {r["step"] for r in rejects} == {"body", "verify"} and any("2029-06-01" in r["reason"] for r in rejects)
    assert again.written == 0 and again.already == 1 and not again.rejected  # resumed: nothing asked twice


def test_related_titles_exclude_the_source_and_verification_keeps_good_ones(tmp_path):
    source = ForecastingQuestion(id="src", title=TITLES[2], body="Resolves YES if the NBA has 32 teams.")
    with ScriptedServer(rule) as srv:
        spec = srv.model_spec()

        async def go():
            async with LLM(LLMSettings(timeout=5)) as llm:
                titles = await related_titles(llm, spec, source, examples=[], resolve_by="2028-01-01", n=5,
                                              embedder=LexicalEmbedder(), threshold=0.8)  # fmt: skip
                pool = [ForecastingQuestion(id=str(i), title=t, body="b") for i, t in enumerate(titles)]
                report = await verify_questions(pool, tmp_path / "v.jsonl", llm, spec, threshold=6)
                return titles, report

        titles, report = asyncio.run(go())
        prompt = srv.requests[0].last_user_text
    assert TITLES[2] not in titles and TITLES[0] in titles
    assert "Source question:" in prompt and source.body in prompt
    assert report.written == 1 and report.rejected["verify"] == 1


def test_questions_commands(tmp_path):
    titles = tmp_path / "titles.txt"
    titles.write_text("\n".join(TITLES[:1] + TITLES[2:]) + "\n")
    with ScriptedServer(rule) as srv:
        common = ["--model", srv.model_spec(), "--created", "2024-10-01", "--resolve-by", "2028-01-01"]
        r = cc(tmp_path, "questions", "fill", "--titles", titles, "--out", tmp_path / "filled.jsonl", *common)
        assert r.returncode == 0, r.stderr
        assert (
            "1 new question(s)" in r.stdout
            and "rejected at body: 1" in r.stdout
            and "rejected at verify: 1" in r.stdout
        )
        args = [
            "--category",
            "Economics",
            "--tags",
            "Brazil,NBA",
            "--embeddings",
            "lexical",
            "--dedupe",
            "0.8",
            "-n",
            "3",
        ]
        r = cc(tmp_path, "questions", "synth", *args, "--out", tmp_path / "synth.jsonl", *common, "--no-verify")
        assert r.returncode == 0, r.stderr
        assert re.search(r"3 distinct title", r.stderr) and "2 new question(s)" in r.stdout
        r = cc(tmp_path, "questions", "verify", "-q", tmp_path / "synth.jsonl", "--out", tmp_path / "ok.jsonl",
               "--model", srv.model_spec())  # fmt: skip
        assert r.returncode == 0 and "1 new question(s)" in r.stdout and "rejected at verify: 1" in r.stdout
        r = cc(tmp_path, "questions", "fill", "--titles", titles, "--out", tmp_path / "x.jsonl", "--created", "bad")
        assert r.returncode == 2 and "Invalid isoformat" in r.stderr
