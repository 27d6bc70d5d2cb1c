"""The ForecastBench benchmark's ``--smoke`` run (what CI runs): it completes and prints its figures."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_forecastbench.py"


def test_the_smoke_run_prints_every_figure(tmp_path):
    done = subprocess.run([sys.executable, str(BENCH), "--smoke"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert re.search(r"rounds=2 questions=\d+ forecast_sets=8 forecasters=7 scored_rows=\d+ replicates=100", out)
    for label in ("wall", "cpu"):
        assert re.search(rf"{label}: import_s=[\d.]+ forecasts_s=[\d.]+ leaderboard_s=[\d.]+ total_s=[\d.]+", out)
    assert "target: total wall time < 10 s for 20 rounds" in out and "best: Bench sharp" in out
