"""One package per lens: the old module names are gone and nothing in the package uses them; lazy export
tables resolve; the llm client and embedder import alone."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import consistency
import consistency.accuracy.proper
import consistency.accuracy.proxy
import consistency.evaluation.scoring
from consistency import sources

PACKAGE = Path(consistency.__file__).parent
OLD = ("consistency.scoring", "consistency.scores")


def fresh(code: str) -> str:
    """Run CODE in a new interpreter (old names warn once per interpreter); its stdout."""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_old_module_names_are_gone():
    """The aliases of 0.1.0's pre-release names (``consistency.scoring``, ``consistency.scores``) are removed:
    importing them fails like any unknown module, and no import hook sits on ``sys.meta_path``."""
    out = fresh(
        "import sys, consistency\n"
        "for old in ('consistency.scoring', 'consistency.scores.proper'):\n"
        "    try:\n"
        "        __import__(old)\n"
        "    except ModuleNotFoundError as exc:\n"
        "        print(exc.name)\n"
        "print([type(f).__module__ for f in sys.meta_path if type(f).__module__.startswith('consistency')])\n"
    ).splitlines()
    assert out == ["consistency.scoring", "consistency.scores", "[]"]


def test_importing_the_package_loads_neither_lens():
    """``import consistency`` loads no numpy and no lens: names resolve on first use."""
    out = fresh(
        "import sys, consistency\n"
        "print([m for m in ('numpy', 'consistency.metrics', 'consistency.accuracy') if m in sys.modules])\n"
    )
    assert out.strip() == "[]"


def _imports(path: Path) -> list[str]:
    """Absolute module names imported by one file of the package (relative imports resolved)."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(p for p in (base, node.module) if p)
            names += [module] + [f"{module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names += [node.value]  # lazy export tables and import_module("...") name modules in strings
    return names


def test_no_module_of_the_package_uses_the_old_names():
    used = {
        f"{path.relative_to(PACKAGE.parent)}: {name}"
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py" or path.parent != PACKAGE  # the alias table itself names them
        for name in _imports(path)
        if any(name == old or name.startswith(old + ".") for old in OLD)
    }
    assert not used


def test_lazy_export_tables_resolve_every_name():
    for name in consistency.__all__:
        assert getattr(consistency, name) is not None, name
    assert consistency.score_path is consistency.evaluation.scoring.score_path
    assert set(sources.SOURCES) == {"metaculus", "manifold", "polymarket"}
    assert sources.scrape is sources.scraper.scrape
    with pytest.raises(AttributeError, match=r"module 'consistency\.sources' has no attribute 'nope'"):
        sources.nope  # noqa: B018
    with pytest.raises(AttributeError, match="module 'consistency' has no attribute 'nope'"):
        consistency.nope  # noqa: B018


@pytest.mark.parametrize("module", ["consistency.llm.client", "consistency.llm.embed"])
def test_llm_client_and_embedder_each_import_alone(module):
    """The client imports the embedder lazily and the embedder never imports the client: no cycle."""
    assert fresh(f"import {module}\nprint('ok')\n").strip() == "ok"
    embed = ast.parse((PACKAGE / "llm" / "embed.py").read_text(encoding="utf-8"))
    assert not [n for n in ast.walk(embed) if isinstance(n, ast.ImportFrom) and n.module and "client" in n.module]
