"""The documentation site builds with ``mkdocs build --strict``: no broken link, missing page or bad API reference."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _require_mkdocs() -> None:
    if find_spec("mkdocs") is None or find_spec("mkdocstrings_handlers") is None:
        reason = 'mkdocs is not installed: pip install -e ".[docs]" (dev includes it)'
        if os.environ.get("CC_REQUIRE_EXTRAS") == "1":
            pytest.fail(f"CC_REQUIRE_EXTRAS=1 but {reason}")
        pytest.skip(reason)


def test_site_builds_strict(tmp_path):
    _require_mkdocs()
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    for command in ("cc evaluate", "cc questions news", "cc leaderboard", "cc arbitrage replay", "--forecast-timeout"):
        assert command in cli, f"the generated CLI reference lacks {command}"
    api = (tmp_path / "site" / "reference" / "python-api" / "index.html").read_text(encoding="utf-8")
    assert "score_forecasts" in api and "ScriptedServer" in api
