"""The offline demos: the scripted server's ``demo`` rule makes every question pipeline produce
sensible output, and the fixture web server's Metaculus 401 says what is wrong."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import date

import pytest

from consistency.fake_openai import ScriptedServer
from consistency.fake_openai.rules import RULES, probability_rule
from consistency.fake_openai.web import TOKEN, WebFixture
from tests.generate.test_generate_cli import cc


@pytest.fixture(scope="module")
def demo():
    with ScriptedServer(RULES["demo"]()) as server:
        yield server


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_rules_by_name_and_on_the_command_line():
    assert {"default", "demo", "hypocritical"} <= set(RULES)
    assert RULES["default"] is probability_rule
    proc = subprocess.run([sys.executable, "-m", "consistency.fake_openai", "--rule", "nope"], capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip
    assert proc.returncode == 2 and "invalid choice: 'nope'" in proc.stderr and "demo" in proc.stderr


def test_news_fill_synth_generate_and_resolve_offline(tmp_path, demo):
    model = demo.model_spec()
    with WebFixture() as web:
        news = cc(tmp_path, "questions", "news", "--feed", f"{web.url_for('feeds')}/world.xml", "--out", "news.jsonl",
                  "--model", model)  # fmt: skip
    assert news.returncode == 0, news.stderr
    got = lines(tmp_path / "news.jsonl")
    assert got, news.stdout + news.stderr
    for q in got:  # inside the default 90-day horizon of its article, after it
        made, due = date.fromisoformat(q["created_date"][:10]), date.fromisoformat(q["resolution_date"][:10])
        assert 0 < (due - made).days <= 90 and q["metadata"]["verification"]["score"] >= 6
    resolved = cc(tmp_path, "questions", "resolve", "news.jsonl", "--model", model, "--as-of", "2030-01-01")
    assert resolved.returncode == 0, resolved.stderr
    assert all(q["resolution"] in (True, False) for q in lines(tmp_path / "news.resolved.jsonl"))

    window = ["--created", "2026-01-01", "--resolve-by", "2028-12-31", "--model", model]
    synth = cc(tmp_path, "questions", "synth", "--category", "Economics", "--tags", "Brazil,India,Tariffs",
               "-n", 3, "--out", "synth.jsonl", *window)  # fmt: skip
    (tmp_path / "titles.txt").write_text("Will the EU adopt a carbon border tax on steel imports before 2029?\n")
    fill = cc(tmp_path, "questions", "fill", "--titles", "titles.txt", "--out", "fill.jsonl", *window)
    assert synth.returncode == 0 and fill.returncode == 0, synth.stderr + fill.stderr
    for name, expected in (("synth.jsonl", 3), ("fill.jsonl", 1)):
        made = lines(tmp_path / name)
        assert len(made) == expected
        assert all("2026-01-01" < q["resolution_date"][:10] <= "2028-12-31" for q in made)

    gen = cc(tmp_path, "generate", "--check", "cond", "--questions", "synth.jsonl", "-n", 2, "--out", "bench",
             "--model", model, "--instantiator", "llm")  # fmt: skip
    assert gen.returncode == 0, gen.stderr
    tuples = lines(tmp_path / "bench" / "CondChecker.jsonl")
    assert len(tuples) == 2 and all(t["metadata"]["verification"]["passed"] for t in tuples)
    assert all(t["P"]["title"] in t["Q_given_P"]["title"] for t in tuples)  # the field spells out its relation


def test_metaculus_401_names_the_real_problem(tmp_path, monkeypatch):
    with WebFixture() as web:
        args = ("questions", "scrape", "metaculus", "--base-url", web.url_for("metaculus"), "--out", "q.jsonl")
        monkeypatch.delenv("METACULUS_TOKEN", raising=False)
        unset = cc(tmp_path, *args)
        monkeypatch.setenv("METACULUS_TOKEN", "wrong-token")
        wrong = cc(tmp_path, *args)
        monkeypatch.setenv("METACULUS_TOKEN", TOKEN)
        right = cc(tmp_path, *args)
    assert unset.returncode == 1 and "set METACULUS_TOKEN" in unset.stderr
    assert wrong.returncode == 1 and "refused the token in METACULUS_TOKEN" in wrong.stderr
    assert "set METACULUS_TOKEN" not in wrong.stderr and "wrong-token" not in wrong.stderr + wrong.stdout
    assert right.returncode == 0, right.stderr
