"""Every example in the documentation runs offline and prints what the page shows.

Console examples run against the scripted server (``demo`` rule; ``coherent`` and ``incoherent`` beside it) and the
fixture web server; their
output is compared with the page after normalising times, durations, ports and paths (see
``docs_examples``). Python examples run in order, one namespace per page. A changed output fails
the test; ``CC_DOCS_UPDATE=1`` rewrites the pages' outputs from the runs instead (then review the diff).
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
from pathlib import Path

import numpy as np
import pytest

from consistency.fake_openai import ScriptedServer
from consistency.fake_openai.rules import RULES
from consistency.fake_openai.web import WebFixture
from tests.support.docs_examples import (
    DOCS,
    RULE_SERVERS,
    SHOWN_DEMO_PORT,
    SHOWN_WEB_PORT,
    blocks,
    environment,
    normalised,
    pages_with_examples,
    prepare,
    presentable,
    run_command,
)

UPDATE = os.environ.get("CC_DOCS_UPDATE") == "1"
SAVE_AS = re.compile(r"# ([\w.-]+\.py)\n")


@pytest.fixture(scope="module")
def servers():
    with ScriptedServer(RULES["demo"]()) as demo, WebFixture() as web, contextlib.ExitStack() as stack:
        rules = {rule: stack.enter_context(ScriptedServer(RULES[rule]())) for rule in RULE_SERVERS}
        yield demo, web, rules


def _web_url(web: WebFixture) -> str:
    return f"http://{web.host}:{web.port}"


@pytest.mark.parametrize("page", pages_with_examples(), ids=lambda p: str(p.relative_to(DOCS.parent)))
def test_page_examples(page: Path, servers, tmp_path, monkeypatch):
    demo, web, rules = servers
    prepare(tmp_path)
    specs = {rule: server.model_spec() for rule, server in rules.items()}
    env = environment(tmp_path, demo.model_spec(), demo.base_url, _web_url(web), specs)
    ports = {demo.port: SHOWN_DEMO_PORT, web.port: SHOWN_WEB_PORT}
    ports |= {server.port: RULE_SERVERS[rule] for rule, server in rules.items()}
    text = page.read_text(encoding="utf-8")
    namespace: dict = {"__name__": "__docs__"}
    failures: list[str] = []
    replacements: list[tuple[int, int, str]] = []
    for block in blocks(page):
        if block.kind == "python":
            monkeypatch.chdir(tmp_path)
            monkeypatch.syspath_prepend(str(tmp_path))  # as `python` run there: the page's saved files import
            if saved := SAVE_AS.match(block.body):  # "# name.py" first: the page asks to save it as that file
                (tmp_path / saved.group(1)).write_text(block.body, encoding="utf-8")
            for key, value in env.items():
                monkeypatch.setenv(key, value)
            exec(compile(block.body, f"{page}:python", "exec"), namespace)
            continue
        rewritten = []
        for step in block.steps():
            actual = run_command(step.command, tmp_path, env)
            shown = presentable(actual, tmp_path, ports)
            same = normalised(shown) == normalised(step.expected)
            output = step.expected if same else shown  # an update leaves equal outputs as they are (no churn)
            rewritten.append(f"$ {step.command}" + (f"\n{output}" if output else ""))
            if not same:
                page_lines, run_lines = normalised(step.expected).splitlines(), normalised(shown).splitlines()
                diff = "\n".join(difflib.unified_diff(page_lines, run_lines, "page", "run", lineterm=""))
                failures.append(f"$ {step.command}\n{diff}")
        replacements.append((block.start, block.end, "\n".join(rewritten) + "\n"))
    if UPDATE and replacements:
        for start, end, body in reversed(replacements):
            text = text[:start] + body + text[end:]
        page.write_text(text, encoding="utf-8")
        return
    assert not failures, f"{page.relative_to(DOCS.parent)}: output differs from the page\n" + "\n\n".join(failures)
    if page.name == "python-api.md":
        _check_python_api(namespace)


def _check_python_api(ns: dict) -> None:
    """The API page's examples compute what its comments say."""
    np.testing.assert_allclose(ns["result"].arbitrage.violation, [0.0243, 0.0], atol=1e-4)
    np.testing.assert_allclose(ns["result"].frequentist, [0.2376, 0.0], atol=1e-4)
    assert ns["res"].violation[0] > 0
    np.testing.assert_allclose(ns["score_forecasts"]("symand", [[0.2, 0.3]]).arbitrage.violation, [0.0135], atol=1e-4)


def test_the_harness_notices_a_changed_output():
    """The comparison is not vacuous: a different number or a missing line is a difference."""
    page = "run directory: runs/2026-11-23T10-58-55_basic_local_bundled (complete)\n0.030 in 0.40s"
    assert normalised(page) == normalised(page.replace("10-58-55", "11-00-01").replace("0.40s", "1.2s"))
    assert normalised(page) != normalised(page.replace("0.030", "0.031"))
    assert normalised(page) != normalised(page.split("\n")[0])
    assert len(pages_with_examples()) >= 5
