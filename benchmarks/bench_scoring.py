"""Scoring throughput and exactness, one core: ``python benchmarks/bench_scoring.py``.

For each check, scores 100,000 random forecast tuples (arbitrage, scaled arbitrage and the
frequentist metric) in one process and prints

    CHECK tuples_per_s=<n> cpu_tuples_per_s=<n> max_gap=<x> max_closed_form_dev=<y or -> fallback=<n>

tuples_per_s is the median of three timed runs after a warm-up (wall clock); cpu_tuples_per_s the
same over this process's CPU time, which a machine shared with other work disturbs less;
max_gap is the largest primal-dual gap (how far V could be from the true optimum);
max_closed_form_dev compares with appendix D's closed forms where they exist; fallback counts the
tuples no face's closed form certified, left to the active-set solver. Targets: >= 1,000,000
tuples/s on a quiet machine for every check, gap and deviation <= 1e-9. The last line gives the
load average. The forecasts mix uniform draws (80%), coherent forecasts (10%) and LLM-style values
rounded to two decimals, including exact 0 and 1 (10%).
"""

from __future__ import annotations

import os

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from smoke import parse_args  # noqa: E402

from consistency.checks import all_checks  # noqa: E402
from consistency.metrics.arbitrage import _Problem, clip_forecasts  # noqa: E402
from consistency.metrics.closed_forms import closed_form  # noqa: E402
from consistency.metrics.forecast_files import score_forecasts  # noqa: E402


def forecasts(check, n: int, rng: np.random.Generator) -> np.ndarray:
    n_coherent = n // 10
    n_rounded = n // 10
    parts = [
        rng.random((n - n_coherent - n_rounded, check.n_fields)),
        check.coherent_sample(n_coherent, rng),
        np.round(rng.random((n_rounded, check.n_fields)) * 1.1 - 0.05, 2).clip(0, 1),
    ]
    out = np.vstack(parts)
    return out[rng.permutation(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=100_000, help="tuples per check")
    parser.add_argument("--repeat", type=int, default=3)
    args = parse_args(parser, {"n": 2000, "repeat": 1})
    rng = np.random.default_rng(0)
    for check in all_checks():
        F = forecasts(check, args.n, rng)
        score_forecasts(check, F[:1000])  # warm-up: caches the check's solver tables
        times, cpu = [], []
        for _ in range(args.repeat):
            start, start_cpu = time.perf_counter(), time.process_time()
            result = score_forecasts(check, F)
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        ref = closed_form(check.name, F)
        dev = "-" if ref is None else f"{np.abs(ref - result.arbitrage.violation).max():.2e}"
        rate, cpu_rate = args.n / statistics.median(times), args.n / statistics.median(cpu)
        fallback = args.n - int(fast_path_certified(check, F))
        print(
            f"{check.name} tuples_per_s={rate:.0f} cpu_tuples_per_s={cpu_rate:.0f} "
            f"max_gap={result.arbitrage.gap.max():.2e} max_closed_form_dev={dev} fallback={fallback}"
        )
    print(f"loadavg={' '.join(f'{x:.2f}' for x in os.getloadavg())} cores={os.cpu_count()}")


def fast_path_certified(check, F: np.ndarray) -> int:
    problem = _Problem.of(check.worlds)
    Fc = clip_forecasts(F)
    return int(problem.faces.solve(Fc, problem.logs(Fc), np.ones_like(Fc), 1e-13)[1].sum())


if __name__ == "__main__":
    main()
