"""Ranking-method speed: ``python benchmarks/bench_accuracy.py``.

Prints
    difficulty_fit_s=<t> difficulty_peak_gb=<m>
for the difficulty-adjusted Brier fit on a random sparse panel of 1,000 forecasters x 20,000
questions with 10% observed (2,000,000 forecasts; targets < 10 s and < 2 GB; the peak is the
memory the fit allocates, measured by tracemalloc, which sees numpy's buffers), and
    proxy_s=<t>
for the leave-one-out proxy scores with all four aggregators on 100 forecasters x 100,000
questions (target < 2 s), on one core.
"""

from __future__ import annotations

import os

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402
from smoke import parse_args  # noqa: E402

from consistency.accuracy import difficulty, proxy  # noqa: E402


def sparse_panel(n_forecasters: int, n_questions: int, density: float, rng: np.random.Generator):
    """Each forecaster answers a random 10% of questions; question 0 is answered by all (connected)."""
    per = int(n_questions * density)
    f = np.repeat(np.arange(n_forecasters), per)
    q = np.concatenate([rng.choice(n_questions, per, replace=False) for _ in range(n_forecasters)])
    skill = rng.normal(0, 0.03, n_forecasters)
    hardness = rng.uniform(0.05, 0.35, n_questions)
    brier = np.clip(hardness[q] + skill[f] + rng.normal(0, 0.05, len(f)), 0, 1)
    return f, q, brier


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--forecasters", type=int, default=1000)
    parser.add_argument("--questions", type=int, default=20_000)
    parser.add_argument("--proxy-forecasters", type=int, default=100)
    parser.add_argument("--proxy-questions", type=int, default=100_000)
    smoke = {"forecasters": 50, "questions": 500, "proxy_forecasters": 20, "proxy_questions": 1000}
    args = parse_args(parser, smoke)
    rng = np.random.default_rng(0)
    f, q, brier = sparse_panel(args.forecasters, args.questions, 0.10, rng)
    tracemalloc.start()
    start = time.perf_counter()
    result = difficulty.difficulty_adjusted_brier(f, q, brier)
    elapsed = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    size = f"rows={len(f)} forecasters={len(result.scores)}"
    print(f"difficulty_fit_s={elapsed:.2f} difficulty_peak_gb={peak / 1e9:.3f} {size}")

    matrix = rng.random((args.proxy_forecasters, args.proxy_questions))
    matrix[rng.random(matrix.shape) < 0.05] = np.nan
    start = time.perf_counter()
    for method in proxy.AGGREGATORS:
        proxy.proxy_scores(matrix, method, loo=True)
    print(
        f"proxy_s={time.perf_counter() - start:.2f} aggregators={','.join(proxy.AGGREGATORS)} loo=True "
        f"forecasters={args.proxy_forecasters} questions={args.proxy_questions}"
    )


if __name__ == "__main__":
    main()
