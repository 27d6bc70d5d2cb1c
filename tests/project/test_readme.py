"""The README stays a short front page: the two quick-start commands, a screen of examples, links.

Its examples (and the site's) are executed by ``test_docs_examples.py``; here, what must not drift.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
INSTALL_AND_RUN = (
    'python3 -m venv .venv && .venv/bin/pip install -e ".[local]" && .venv/bin/cc evaluate --forecaster local --limit 1'
)
TESTS = (
    "python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 && "
    '.venv/bin/pip install -e ".[dev,local,embeddings]" && .venv/bin/pytest'
)


def test_readme_is_short_and_keeps_the_two_commands():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    quick_start = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)\n```", quick_start, flags=re.S)
    assert commands == [INSTALL_AND_RUN, TESTS]
    assert TESTS in (ROOT / ".ci" / "run").read_text(encoding="utf-8")  # CI runs the README's test command


def test_readme_links_resolve():
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(((?:docs/)[^)#]+)", text)
    assert links, "the README links into the documentation site"
    missing = [link for link in links if not (ROOT / link).exists()]
    assert not missing, f"README links to missing pages: {missing}"


def test_readme_python_example_defines_a_forecaster():
    """The snippet runs as a script and, imported, only defines the class (its evaluate() is behind a main guard)."""
    block = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)[0]
    namespace: dict = {"__name__": "imported"}
    exec(compile(block, str(README), "exec"), namespace)
    forecaster = namespace["Contrarian"](lean=0.1)
    assert forecaster.forecast_sync("Will it not rain?").prob == 0.4
    assert "run" not in namespace
