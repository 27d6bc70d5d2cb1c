"""One package per lens: the old module names still import, give the same objects and warn; nothing in
the package itself uses them; lazy export tables resolve; the llm client and embedder import alone."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import consistency
import consistency.accuracy.proper
import consistency.accuracy.proxy
import consistency.metrics.forecast_files
from consistency import sources

PACKAGE = Path(consistency.__file__).parent
OLD = ("consistency.scoring", "consistency.scores")


def fresh(code: str) -> str:
    """Run CODE in a new interpreter (old names warn once per interpreter); its stdout."""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def forget_old_names():
    """Drop the aliases from ``sys.modules`` so this test's imports go through the finder again."""
    saved = {
        k: v
        for k, v in sys.modules.items()
        if k.split(".")[:2] in (["consistency", "scoring"], ["consistency", "scores"])
    }
    for name in saved:
        del sys.modules[name]
    yield
    sys.modules.update(saved)


def test_old_names_give_the_same_objects_and_warn_with_the_new_place(forget_old_names):
    with pytest.warns(DeprecationWarning) as caught:
        import consistency.scores.proxy as old_proxy
        from consistency.scores.proper import brier
        from consistency.scoring import score_path
    assert sorted(str(w.message) for w in caught) == [
        "consistency.scores is deprecated: import consistency.accuracy instead",
        "consistency.scores.proper is deprecated: import consistency.accuracy.proper instead",
        "consistency.scores.proxy is deprecated: import consistency.accuracy.proxy instead",
        "consistency.scoring is deprecated: import consistency.metrics.forecast_files instead",
    ]
    assert {w.filename for w in caught} == {__file__}  # pointing at the imports above
    assert score_path is consistency.metrics.forecast_files.score_path
    assert brier is consistency.accuracy.proper.brier
    assert old_proxy is consistency.accuracy.proxy
    assert sys.modules["consistency.scores"] is sys.modules["consistency.accuracy"]
    assert sys.modules["consistency.scoring"] is consistency.metrics.forecast_files
    # the aliased module keeps its own identity (pickling and reload use __spec__.name)
    assert consistency.accuracy.proxy.__spec__.name == "consistency.accuracy.proxy"
    assert consistency.metrics.forecast_files.__name__ == "consistency.metrics.forecast_files"


def test_old_names_in_a_fresh_interpreter_warn_at_the_import_and_load_no_copy():
    out = fresh(
        "import sys, warnings\n"
        "warnings.simplefilter('always')\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    import consistency.scoring\n"
        "    from consistency.scores import ranking\n"
        "    import consistency.scores.proxy\n"
        "import consistency.metrics.forecast_files as new, consistency.accuracy.ranking as new_ranking\n"
        "print(consistency.scoring is new, ranking is new_ranking)\n"
        "print(sorted({str(w.message) for w in caught}))\n"
        "print({w.filename for w in caught})\n"
        "print(sorted(m for m in sys.modules if m.startswith('consistency.scor')))\n"
    ).splitlines()
    assert out[0] == "True True"
    assert "consistency.scores is deprecated: import consistency.accuracy instead" in out[1]
    assert "consistency.scores.proxy is deprecated: import consistency.accuracy.proxy instead" in out[1]
    assert "consistency.scoring is deprecated: import consistency.metrics.forecast_files instead" in out[1]
    assert out[2] == "{'<string>'}"  # the warning points at the caller's import, not at the import machinery
    # `from old import sub` imports the submodule by the parent's real name: one module object either way
    assert out[3] == "['consistency.scores', 'consistency.scores.proxy', 'consistency.scoring']"


def test_importing_the_package_loads_neither_lens():
    """The aliases cost nothing until used: ``import consistency`` loads no numpy and no lens."""
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
    assert consistency.score_path is consistency.metrics.forecast_files.score_path
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
