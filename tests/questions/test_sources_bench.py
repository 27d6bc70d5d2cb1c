"""The scraper benchmark's ``--smoke`` run: it completes, writes every question of both mixes (the
typed one a third multiple-choice, a third numeric) and prints its figures."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_scrape.py"


def test_the_smoke_run_prints_every_figure(tmp_path):
    done = subprocess.run([sys.executable, str(BENCH), "--smoke"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "[binary] questions=300 pages=6 latency_s=0.01 types={'binary': 300}" in out
    assert (
        "[typed] questions=300 pages=6 latency_s=0.01 types={'binary': 100, 'multiple_choice': 100, "
        "'numeric': 100}" in out
    )
    assert len(re.findall(r"pages_per_s=[\d.]+ questions_per_s=\d+ elapsed_s=[\d.]+ bound_s=[\d.]+", out)) == 2
    assert len(re.findall(r"reparse_from_cache_s=[\d.]+ \(\d+ cached pages, 0 requests\)", out)) == 2
    assert re.search(r"memory_peak_mb=\d+", out)
