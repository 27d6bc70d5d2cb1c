"""The package as a user gets it: a name of its own, one version, a wheel that installs and runs.

The distribution is ``forecast-consistency`` (PyPI's ``consistency`` is an unrelated project). The slow
test builds the sdist and wheel with ``python -m build`` from a copy of the source tree, checks them with
``twine check``, installs the WHEEL (not this editable tree) into a clean virtual environment and runs
``cc`` from there, outside the repository. Nothing is published.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

import consistency
from consistency.extras import DISTRIBUTION, install_hint

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "consistency"
#: Files of the package that are data, not code: every one must be in the wheel.
DATA_SUFFIXES = {".jsonl", ".json", ".csv", ".md", ".txt", ".html", ".typed"}
#: Where install lines live: the README, the site, CI's script and the package's own messages.
DOCUMENTS = [ROOT / "README.md", ROOT / ".ci" / "run", *sorted((ROOT / "docs").rglob("*.md"))]
_PIP_INSTALL = re.compile(r"pip install ([^\n`]*)")


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_distribution_has_its_own_name_and_one_version():
    project = _pyproject()["project"]
    assert project["name"] == DISTRIBUTION == "forecast-consistency"
    assert "version" not in project and project["dynamic"] == ["version"]
    assert _pyproject()["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "consistency.__version__"}
    assert project["scripts"] == {"cc": "consistency.__main__:main"}
    # the installed metadata (this editable install) carries the version the package declares
    assert importlib.metadata.version(DISTRIBUTION) == consistency.__version__
    assert f"## {consistency.__version__}" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


def _installs_pypis_consistency(line: str) -> bool:
    """Whether a ``pip install`` argument list names the distribution ``consistency`` (PyPI's other project)."""
    return any(re.fullmatch(r"consistency(\[[\w,\s]*\])?", tok.strip("\"'`(),;")) for tok in line.split())


def test_no_install_line_fetches_pypis_unrelated_consistency():
    assert _installs_pypis_consistency('"consistency[bots]"') and _installs_pypis_consistency("-U consistency")
    assert _installs_pypis_consistency("""'consistency[inspect]'") from None""")  # as a message in code had it
    assert not _installs_pypis_consistency('-e ".[bots]"') and not _installs_pypis_consistency(f"{DISTRIBUTION}")
    sources = DOCUMENTS + sorted(PACKAGE.rglob("*.py")) + [ROOT / "pyproject.toml"]
    wrong = [
        f"{path.relative_to(ROOT)}: pip install {m.group(1)}"
        for path in sources
        for m in _PIP_INSTALL.finditer(path.read_text(encoding="utf-8"))
        if _installs_pypis_consistency(m.group(1))
    ]
    assert not wrong, wrong
    bots = (ROOT / "docs" / "guides" / "bots.md").read_text(encoding="utf-8")
    assert f'run: pip install "{DISTRIBUTION}[bots]"' in bots  # the CI recipe


def test_install_hints_name_the_distribution_and_torch_first():
    assert install_hint("bots") == 'pip install "forecast-consistency[bots]" (in a clone: pip install -e ".[bots]")'
    assert install_hint("embeddings").startswith("pip install torch==2.13.0 (the CPU build) first, then pip install")
    extras = _pyproject()["project"]["optional-dependencies"]
    assert any(dep.startswith("pytest") for dep in extras["bots"])  # the bots guide's assert_consistent fixture
    assert {"build==1.6.1", "twine==7.0.0"} <= set(extras["dev"])


def _require(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        reason = f"{module} is not installed (the dev extra has it)"
        if os.environ.get("CC_REQUIRE_EXTRAS") == "1":
            pytest.fail(f"CC_REQUIRE_EXTRAS=1 but {reason}")
        pytest.skip(reason)


def _run(argv: list[str], **kw) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, **kw)
    assert done.returncode == 0, f"{argv} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done


def _source_copy(target: Path) -> Path:
    """The repository's files, without virtual environments, caches or earlier builds (the build writes
    its egg-info next to the sources: in the copy, not in the checkout)."""
    top = {".git", ".venv", "venv", "build", "dist", "runs"}  # only at the top: the package has a runs/ of data
    anywhere = shutil.ignore_patterns("__pycache__", "*.egg-info", ".*_cache", ".hypothesis")

    def skip(folder: str, names: list[str]) -> set[str]:
        return set(anywhere(folder, names)) | (top & set(names) if Path(folder) == ROOT else set())

    return Path(shutil.copytree(ROOT, target, ignore=skip))


def test_the_built_wheel_installs_into_a_clean_venv_and_cc_runs(tmp_path):
    _require("build")
    _require("twine")
    src = _source_copy(tmp_path / "src")
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "build", "--outdir", str(dist), str(src)])
    wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    version = consistency.__version__
    assert [w.name for w in wheels] == [f"forecast_consistency-{version}-py3-none-any.whl"]
    assert [s.name for s in sdists] == [f"forecast_consistency-{version}.tar.gz"]
    checked = _run([sys.executable, "-m", "twine", "check", "--strict", *map(str, wheels + sdists)])
    assert checked.stdout.count("PASSED") == 2, checked.stdout

    names = zipfile.ZipFile(wheels[0]).namelist()
    data = sorted(str(p.relative_to(ROOT)) for p in PACKAGE.rglob("*") if p.suffix in DATA_SUFFIXES)
    missing = [f for f in data if f not in names]
    assert not missing, f"package data missing from the wheel: {missing}"
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {"consistency", f"forecast_consistency-{version}.dist-info"}, tops  # no tests/, docs/, benchmarks/
    with tarfile.open(sdists[0]) as sdist:
        top = {m.name.split("/")[1] for m in sdist.getmembers() if m.name.count("/") >= 1}
    assert {"consistency", "README.md", "CHANGELOG.md", "LICENSE", "pyproject.toml"} <= top
    assert not top & {"tests", "docs", "benchmarks", ".ci"}, top

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    py, cc = venv / "bin" / "python", venv / "bin" / "cc"
    _run([str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q", str(wheels[0])])
    away = tmp_path / "elsewhere"  # not the checkout: nothing may come from the source tree
    away.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env |= {"CC_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "120"}
    where = _run([str(py), "-c", "import consistency; print(consistency.__file__)"], cwd=away, env=env).stdout
    assert Path(where.strip()).is_relative_to(venv), where
    assert _run([str(py), "-m", "pip", "show", DISTRIBUTION], cwd=away, env=env).stdout.count(f"Version: {version}")

    assert "Usage: cc" in _run([str(cc), "--help"], cwd=away, env=env).stdout
    assert _run([str(cc), "version"], cwd=away, env=env).stdout.strip().endswith(version)
    checks = _run([str(cc), "checks"], cwd=away, env=env).stdout
    assert all(name in checks for name in ("NEGATION", "CONDCOND", "MONOTONE")), checks
    runs = _run(
        [str(py), "-c", "from consistency.datasets import tables_dir; print(tables_dir() / 'runs')"], cwd=away, env=env
    ).stdout.strip()
    assert Path(runs).is_relative_to(venv)
    scored = _run([str(cc), "score", runs, "-o", "scored"], cwd=away, env=env)
    assert "Consistency violations per run (6 directories" in scored.stdout, scored.stdout
    assert "results written to scored/<run>/ (6 of 6 scored)" in scored.stderr, scored.stderr
    forecasters = ["coin", "erratic", "fair", "noisy", "sharp", "steady"]
    assert sorted(p.name for p in (away / "scored").iterdir()) == forecasters
