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

Then the checks over multiple-choice and numeric questions, in the same format (a categorical field's
forecast drawn from a Dirichlet distribution, rounded ones renormalised): PARTITION4 (target >= 1,000,000
tuples/s), MC_BINARY, CDF_THRESHOLDS (three thresholds; target >= 200,000 tuples/s) and NUMERIC_PARAPHRASE
(202 bins a field; a tenth of the tuples). Their max_closed_form_dev compares PARTITION4's root with the
yes/no active-set solver and CDF_THRESHOLDS's Newton on μ with the generic Newton over λ, on the first
5,000 tuples. The last line before the load times CRPS on 100,000 forecasts of 201 points (target < 1 s).
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

from consistency.accuracy.distribution_scores import crps  # noqa: E402
from consistency.checks import all_checks, get_check  # noqa: E402
from consistency.metrics import categorical  # noqa: E402
from consistency.metrics.arbitrage import _Problem, _solve, clip_forecasts  # noqa: E402
from consistency.metrics.closed_forms import closed_form  # noqa: E402
from consistency.metrics.scoring import score_forecasts  # noqa: E402


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
        result, rate, cpu_rate = timed(check, F, args.repeat)
        ref = closed_form(check.name, F)
        dev = "-" if ref is None else f"{np.abs(ref - result.arbitrage.violation).max():.2e}"
        fallback = args.n - int(fast_path_certified(check, F))
        print(
            f"{check.name} tuples_per_s={rate:.0f} cpu_tuples_per_s={cpu_rate:.0f} "
            f"max_gap={result.arbitrage.gap.max():.2e} max_closed_form_dev={dev} fallback={fallback}"
        )
    for name, share in (("PARTITION4", 1), ("MC_BINARY", 1), ("CDF_THRESHOLDS", 1), ("NUMERIC_PARAPHRASE", 10)):
        check = get_check(name)
        n = max(args.n // share, 100)
        F = categorical_forecasts(check, n, rng)
        result, rate, cpu_rate = timed(check, F, args.repeat)
        dev = generic_deviation(check, F[:5000], result.arbitrage.violation[:5000])
        print(
            f"{check.name} tuples_per_s={rate:.0f} cpu_tuples_per_s={cpu_rate:.0f} "
            f"max_gap={result.arbitrage.gap.max():.2e} max_closed_form_dev={dev} fallback=-"
        )
    cdfs = np.sort(rng.random((args.n, 201)), axis=1)
    outcomes = rng.random(args.n) * 1.2 - 0.1
    crps(cdfs[:1000], outcomes[:1000])
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        crps(cdfs, outcomes)
        times.append(time.perf_counter() - start)
    print(f"CRPS forecasts={args.n} points=201 seconds={statistics.median(times):.3f}")
    print(f"loadavg={' '.join(f'{x:.2f}' for x in os.getloadavg())} cores={os.cpu_count()}")


def timed(check, F: np.ndarray, repeat: int):
    """The scores of ``F`` and the tuples per second, wall clock and CPU (medians of ``repeat`` runs after a
    warm-up that caches the check's solver tables)."""
    score_forecasts(check, F[:1000])
    times, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = score_forecasts(check, F)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return result, len(F) / statistics.median(times), len(F) / statistics.median(cpu)


def categorical_forecasts(check, n: int, rng: np.random.Generator) -> np.ndarray:
    """As :func:`forecasts`, column by column: yes/no fields uniform, categorical ones Dirichlet(1)."""
    parts = []
    for name in check.fields:
        m = check.categorical.get(name)
        parts.append(rng.random((n, 1)) if m is None else rng.dirichlet(np.ones(m), n))
    F = np.hstack(parts)
    k = n // 10
    F[:k] = check.coherent_sample(k, rng)
    rounded = np.round(F[k : 2 * k] * 1.1 - 0.05, 2).clip(0, 1)
    for name in check.categorical:
        sl = check.column_slices[name]
        total = rounded[:, sl].sum(axis=1, keepdims=True)
        rounded[:, sl] = np.where(total > 0, rounded[:, sl] / np.where(total > 0, total, 1), 1 / (sl.stop - sl.start))
    F[k : 2 * k] = rounded
    return F[rng.permutation(n)]


def generic_deviation(check, F: np.ndarray, violation: np.ndarray) -> str:
    """The fast path against an independent general solver, where the check has one."""
    if not check.categorical and len(check.worlds) <= 8:
        reference = _solve(_Problem(check.worlds), clip_forecasts(F), np.ones_like(F), 1e-13, 200, False)[0]
    elif check.categorical and len(check.worlds) <= 8:
        plan = categorical.CategoricalPlan(check)
        Fi = plan.internal(F, categorical.DEFAULT_EPSILON)
        wc = np.ones((len(F), plan.C))
        lam, _ = categorical._newton(plan, np.log(Fi), wc, np.full((len(F), 1), check.n_fields), 1e-13, 200)
        reference = plan.profits(plan.masses(lam), np.log(Fi), wc).min(axis=1)
    else:
        return "-"
    return f"{np.abs(np.maximum(reference, 0.0) - violation).max():.2e}"


def fast_path_certified(check, F: np.ndarray) -> int:
    problem = _Problem.of(check.worlds)
    Fc = clip_forecasts(F)
    return int(problem.faces.solve(Fc, problem.logs(Fc), np.ones_like(Fc), 1e-13)[1].sum())


if __name__ == "__main__":
    main()
