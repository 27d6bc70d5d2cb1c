"""``cc generate`` as a subprocess: instantiator choice, bad input, progress report, and resuming after SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import consistency
from consistency.checks import get_check
from consistency.fake_openai import ScriptedServer
from consistency.generate.pipeline import tuple_key
from tests.generate.test_generate import answers, question

ROOT = Path(consistency.__file__).resolve().parent.parent


def env(tmp_path: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if k not in {"COLUMNS", "FORCE_COLOR"}}
    return e | {"PYTHONPATH": str(ROOT), "CC_CACHE_DIR": str(tmp_path / "cache"), "NO_COLOR": "1", "COLUMNS": "200"}


def cc(tmp_path: Path, *args: object, **kw) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "consistency", *map(str, args)]
    return subprocess.run(argv, cwd=tmp_path, env=env(tmp_path), capture_output=True, text=True, timeout=120, **kw)


def write_questions(path: Path, n: int) -> Path:
    path.write_text("".join(question(i).model_dump_json() + "\n" for i in range(n)))
    return path


def test_auto_uses_template_with_the_local_model(tmp_path):
    qs = write_questions(tmp_path / "q.jsonl", 6)
    r = cc(tmp_path, "generate", "--check", "neg", "--questions", qs, "-n", "3", "--out", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    assert "instantiator: template (the only model is the bundled local one" in r.stderr
    assert "LLM: 0 calls" in r.stderr and "NEGATION: 3 new tuple(s)" in r.stdout
    tuples = [json.loads(x) for x in (tmp_path / "out" / "NegChecker.jsonl").read_text().splitlines()]
    assert len(tuples) == 3 and all(t["metadata"]["instantiator"] == "template" for t in tuples)


def test_bad_questions_file_names_file_and_line(tmp_path):
    qs = write_questions(tmp_path / "q.jsonl", 2)
    with qs.open("a") as fh:
        fh.write('{"title": ""}\n')
    r = cc(tmp_path, "generate", "--check", "neg", "--questions", qs, "--out", tmp_path / "out")
    assert r.returncode == 2 and f"{qs}:3: title:" in r.stderr
    r = cc(tmp_path, "generate", "--check", "nope", "--questions", qs, "--out", tmp_path / "out")
    assert r.returncode == 2 and "nope" in r.stderr


def test_llm_run_reports_calls_and_rejections(tmp_path):
    qs = write_questions(tmp_path / "q.jsonl", 8)
    with ScriptedServer(answers(verdict=5)) as srv:
        args = ["generate", "--check", "cond", "--questions", qs, "-n", "2", "--out", tmp_path / "out"]
        r = cc(tmp_path, *args, "--model", srv.model_spec(), "--embeddings", "lexical", "--candidates", "30")
    assert r.returncode == 1, r.stderr  # nothing passes a threshold of 6
    assert "instantiator: llm" in r.stderr and "LLM: " in r.stderr and "calls" in r.stderr
    assert (
        "rejected at verify: below threshold" in r.stdout and "rejected at relevance: below the embedding" in r.stdout
    )


def test_killed_generation_resumes_without_duplicates(tmp_path):
    qs = write_questions(tmp_path / "q.jsonl", 12)
    out = tmp_path / "out"
    path = out / "CondChecker.jsonl"
    with ScriptedServer(answers(), latency=0.1) as srv:
        args = ["generate", "--check", "cond", "--questions", qs, "-n", "16", "--out", out, "--model", srv.model_spec()]
        args += ["--embeddings", "lexical", "--relevance", "embeddings", "--max-connections", "2"]
        argv = [sys.executable, "-m", "consistency", *map(str, args)]
        proc = subprocess.Popen(
            argv, cwd=tmp_path, env=env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not path.exists() or path.read_text().count("\n") < 3):
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        before = path.read_text().count("\n")
        assert 3 <= before < 16
        calls_first = srv.count
        r = cc(tmp_path, *args)
    assert r.returncode == 0, r.stderr
    assert f"({before} from an earlier run)" in r.stdout
    tuples = [json.loads(x) for x in path.read_text().splitlines()]
    keys = [tuple_key(get_check("cond"), t["metadata"]["base_sentences"]) for t in tuples]
    assert len(tuples) == 16 and len(set(keys)) == 16
    assert srv.count - calls_first <= (16 - before + 2) * 3  # only the missing tuples were asked for (+ in flight)
