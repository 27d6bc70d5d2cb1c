"""Every benchmark runs in CI: each ``benchmarks/bench_*.py`` with ``--smoke`` (tiny sizes, the same code paths),
in a fresh process, exits 0 and prints its figures. A change that breaks a benchmark breaks the suite."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPTS = sorted(BENCHMARKS.glob("bench_*.py"))
#: The bundled model's benchmarks: they need the local extra (its weights come from the session's fixture).
LOCAL = {"bench_local.py", "bench_local_ceiling.py"}
#: A figure is a name=number pair, as every benchmark prints them.
FIGURE = re.compile(r"\b[a-z_]+=[-+]?\d")


def test_every_benchmark_is_listed():
    """The parametrised test below runs whatever bench_*.py exists; an empty glob would make it vacuous."""
    assert len(SCRIPTS) >= 16, [s.name for s in SCRIPTS]


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_benchmark_smoke_runs_and_prints_figures(script: Path, tmp_path: Path, request: pytest.FixtureRequest):
    env = {**os.environ, "CC_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "200"}
    if script.name in LOCAL:
        env["CC_LOCAL_MODEL"] = str(request.getfixturevalue("local_model"))  # skips without the local extra
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(script), "--smoke"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    took = time.perf_counter() - start
    print(f"{script.name} --smoke: {took:.1f} s")  # shown with -s; the figures below are the benchmark's own
    print(done.stdout)
    assert done.returncode == 0, f"{script.name} --smoke exited {done.returncode}:\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    figures = FIGURE.findall(done.stdout)
    assert len(figures) >= 2, f"{script.name} --smoke printed no figures:\n{done.stdout}"
