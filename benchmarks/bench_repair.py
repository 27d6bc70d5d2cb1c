"""Repair throughput and guarantees, one process: ``python benchmarks/bench_repair.py``.

(a) Per-tuple Brier repair of 100,000 forecast tuples per check (``repair_tuples``), printed as

    CHECK brier_tuples_per_s=<n> log_tuples_per_s=<n> fixed_point_iterations=<n> worst_guarantee_slack=<x>

worst_guarantee_slack is the smallest, over tuples and worlds, of (Brier improvement - squared distance
moved on the fields resolving there): the guarantee holds when it is >= -1e-9. Target: >= 100,000
tuples/s for every check. The forecasts mix uniform draws (80%), coherent forecasts (10%) and values
rounded to one decimal, including exact 0 and 1 (10%).

(b) Joint Brier repair (``repair_graph``) of 100,000 tuples of ten checks (three with conditional
fields) over shared questions: every field that is a bare base event is a question drawn from a pool
(``--pool``, 5,000 by default, so each appears in about 36 tuples of several checks); compound fields
(P and Q, Q given P, ...) are questions of their own. Prints the seconds, the process's peak resident
memory (``resource.getrusage``: the whole process, data included), the solver's status, the outer
iterations, how far the worst tuple's repaired values lie from its coherent set (Euclidean), and the
guarantee checked on ``--worlds`` random joint worlds (random truth values of the pool's events): the
smallest Brier improvement minus squared distance moved on the questions resolving there. Targets:
< 60 s, < 2 GB, incoherence <= 1e-9, slack >= -1e-9. The last line gives the load average. With the
conditional checks every outer iteration is a full QP and the joint run takes about 15 minutes on two
cores; ``--checks NEGATION,PARAPHRASE,CONSEQUENCE,AND,OR,ANDOR,BUT`` runs the binary mix (about 30 s).
``CC_REPAIR_SOLVER=newton`` runs the joint repair with the opt-in Newton inner solver.
"""

from __future__ import annotations

import os

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import argparse  # noqa: E402
import itertools  # noqa: E402
import resource  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from smoke import parse_args  # noqa: E402

from consistency.checks import all_checks, get_check  # noqa: E402
from consistency.checks.check import NONE, TRUE  # noqa: E402
from consistency.checks.logic import parse  # noqa: E402
from consistency.repair import repair_graph, repair_tuples  # noqa: E402
from consistency.repair.tuples import world_improvements  # noqa: E402

JOINT_CHECKS = ("NEGATION", "PARAPHRASE", "CONSEQUENCE", "AND", "OR", "ANDOR", "BUT", "COND", "CONDCOND", "EXPEVIDENCE")


def forecasts(check, n: int, rng: np.random.Generator) -> np.ndarray:
    n_coherent = n_rounded = n // 10
    parts = [
        rng.random((n - n_coherent - n_rounded, check.n_fields)),
        check.coherent_sample(n_coherent, rng),
        np.round(rng.random((n_rounded, check.n_fields)) * 1.2 - 0.1, 1).clip(0, 1),
    ]
    return np.vstack(parts)[rng.permutation(n)]


def per_tuple(n: int, rng: np.random.Generator) -> None:
    for check in all_checks():
        F = forecasts(check, n, rng)
        repair_tuples(check, F[:1000])  # warm-up: the check's tables
        start = time.perf_counter()
        result = repair_tuples(check, F, "brier")
        brier_s = time.perf_counter() - start
        start = time.perf_counter()
        repair_tuples(check, F, "log")
        log_s = time.perf_counter() - start
        resolving = (check.worlds != NONE).astype(float)
        moved_there = ((F - result.repaired) ** 2) @ resolving.T
        slack = world_improvements(check.worlds, F, result.repaired, "brier") - moved_there
        print(
            f"{check.name} brier_tuples_per_s={n / brier_s:.0f} log_tuples_per_s={n / log_s:.0f} "
            f"fixed_point_iterations={result.iterations} worst_guarantee_slack={slack.min():.1e}"
        )


def outcome_table(check) -> np.ndarray:
    """Field outcomes (1 / 0 / -1) for every assignment of the check's base events (rows: bits, first base high)."""
    formulas = [parse(text) for text in check.template_check.fields.values()]
    rows = []
    for values in itertools.product((True, False), repeat=len(check.bases)):
        world = dict(zip(check.bases, values, strict=True))
        rows.append([NONE if (v := f.evaluate(world)) is None else int(v) for f in formulas])
    return np.array(rows)


def graph(n_tuples: int, pool: int, names: list[str], rng: np.random.Generator):
    """Blocks over shared questions, with each tuple's base events (to draw joint worlds from)."""
    per = n_tuples // len(names)
    M = pool
    blocks, events = [], []
    for name in names:
        check = get_check(name)
        draws = np.stack([rng.choice(pool, size=len(check.bases), replace=False) for _ in range(per)])
        idx = np.empty((per, check.n_fields), dtype=np.int64)
        for f, text in enumerate(check.fields.values()):
            if text.strip() in check.bases:
                idx[:, f] = draws[:, check.bases.index(text.strip())]
            else:
                idx[:, f] = M + np.arange(per)
                M += per
        blocks.append((check, idx))
        events.append(draws)
    return blocks, events, M


def joint_world_slack(blocks, events, p, q, pool: int, n_worlds: int, rng) -> float:
    worst = np.inf
    tables = [outcome_table(check) for check, _ in blocks]
    for _ in range(n_worlds):
        base = rng.random(pool) < rng.random()
        truth = np.full(len(p), -2)
        for (_, idx), draws, table in zip(blocks, events, tables, strict=True):
            bits = (~base[draws]).astype(int) @ (1 << np.arange(draws.shape[1])[::-1])
            truth[idx] = table[bits]
        resolved = truth >= 0
        o = (truth == TRUE).astype(float)
        gain = (((p - o) ** 2 - (q - o) ** 2) * resolved).sum()
        worst = min(worst, gain - (((p - q) ** 2) * resolved).sum())
    return float(worst)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=100_000, help="tuples per check (per-tuple repair)")
    parser.add_argument("--joint", type=int, default=100_000, help="tuples in the joint repair")
    parser.add_argument("--pool", type=int, default=5_000, help="base questions the joint tuples share")
    parser.add_argument("--worlds", type=int, default=200, help="random joint worlds to check the guarantee on")
    parser.add_argument("--checks", default=",".join(JOINT_CHECKS), help="checks in the joint repair (comma-separated)")
    parser.add_argument("--skip-per-tuple", action="store_true")
    args = parse_args(parser, {"n": 2000, "joint": 2000, "pool": 200, "worlds": 10})
    rng = np.random.default_rng(0)
    if not args.skip_per_tuple:
        per_tuple(args.n, rng)
    blocks, events, M = graph(args.joint, args.pool, args.checks.split(","), rng)
    p = rng.random(M)
    result = repair_graph(blocks, p, "brier")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    slack = joint_world_slack(blocks, events, p, result.repaired, args.pool, args.worlds, rng)
    # Feasibility: how far each tuple's repaired values lie from its own coherent set.
    off = max(float(repair_tuples(check, result.repaired[idx]).moved.max()) for check, idx in blocks) ** 0.5
    n = sum(len(idx) for _, idx in blocks)
    conditional = sum(len(idx) for check, idx in blocks if (check.worlds == NONE).any())
    print(
        f"joint tuples={n} conditional_tuples={conditional} questions={M} pool={args.pool} "
        f"seconds={result.seconds:.1f} peak_rss_mb={peak_mb:.0f} "
        f"status={result.status} outer_iterations={result.iterations} moved={result.moved:.3f} "
        f"guaranteed={result.guaranteed:.3f} max_tuple_incoherence={off:.1e} worst_joint_world_slack={slack:.1e} "
        "(targets: <60 s, <2048 MB, incoherence <= 1e-9, slack >= -1e-9)"
    )
    print(f"loadavg={' '.join(f'{x:.2f}' for x in os.getloadavg())} cores={os.cpu_count()}")


if __name__ == "__main__":
    main()
