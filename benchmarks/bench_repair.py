"""Repair throughput, accuracy and guarantees, in one process: ``python benchmarks/bench_repair.py [--smoke]``.

(a) Per-tuple repair of ``-n`` forecast tuples per check (``repair_tuples``), one line per check:

    per_tuple CHECK brier_per_s=<wall> brier_cpu_per_s=<cpu> log_per_s=<wall> log_cpu_per_s=<cpu>
              fixed_point_iterations=<n> worst_guarantee_slack=<x> load=<1-min load>

Rates are tuples per second of wall-clock and of process CPU time (the machine is shared: the CPU rate is
what another helper's load does not take away). worst_guarantee_slack is the smallest, over tuples and
worlds, of (Brier improvement - squared distance moved on the fields resolving there): the guarantee holds
when it is >= -1e-9. Target: Brier >= 200,000 tuples/s for every check. The forecasts mix uniform draws
(80%), coherent forecasts (10%) and values rounded to one decimal, including exact 0 and 1 (10%).

(b) Joint Brier repair (``repair_graph``) of ``--joint`` tuples over shared questions: every field that is a
bare base event is a question drawn from a pool (``--pool``, 5,000 by default, so each appears in about 36
tuples of several checks); compound fields (P and Q, Q given P, ...) are questions of their own. Two graphs:
the binary mix (seven checks) and the mix with the three conditional checks (30% of the tuples). For each:

    joint MIX seconds=<s> cpu_seconds=<s> outer=<n> settled=<|q_J - c|>
          incoherence=<max distance of a tuple to its coherent set>
          slack=<worst guarantee slack over --worlds random joint worlds> peak_rss_mb=<MB> load=<load>
    clarabel MIX tol=<t> seconds=<one solve of the same QP> ratio=<joint seconds / Clarabel's>
             max_diff=<|q - q_clarabel|> objective_ours_minus_clarabel=<x> kkt=<Clarabel's KKT residual> (...)
             within=<how far Clarabel's solution can be from the exact one>

Clarabel solves the same QP once at tolerance 1e-12 (as the project used it; the ratio is to this time):
the binary graph's QP, or the inner QP at the conditional values the joint repair settled on (the QP
whose solution it returned); and the binary QP again at 1e-14, the accuracy reference (the conditional
one too with ``--strict-reference``).
peak_rss_mb is the process's peak before Clarabel runs (``resource.getrusage``: data included).
Targets: binary mix <= 10 s; with conditionals <= 60 s and at most Clarabel's one solve (ratio <= 1);
peak <= 1024 MB; incoherence <= 1e-8; max_diff <= 1e-7 against a reference accurate enough to be one.
Each Clarabel line states how accurate it is: its KKT residuals (sup norms) and, since an interior-point
solver leaves every complementary product ~1e-12 and their sum over 10^5 constraints is the duality gap,
``within`` = sqrt(2 x that sum), how far its solution can be from the exact one; and the objective of ours
minus its (negative: ours is lower, so Clarabel is the side that is off). At 1e-12 Clarabel stops 1e-7 to
1e-5 from the solution on these graphs: a max_diff that large is its error, as ``within`` shows.

(c) Joint log repair of the binary mix (the KL projection) and of the mix with 30% conditional checks (the
graph's arbitrage prices), the guarantee checked on random joint worlds (log-loss gain on the resolving
questions minus the guaranteed nats, >= -1e-9), and Clarabel's exponential-cone formulation of the binary
problem on a ``--log-reference``-tuple graph (tolerances 1e-12 and 1e-8): time and agreement.
Target: 100,000 tuples in <= 60 s.

``--smoke`` runs every part on small sizes in seconds (CI).
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

from consistency.checks import all_checks, get_check  # noqa: E402
from consistency.checks.check import NONE, TRUE  # noqa: E402
from consistency.checks.logic import parse  # noqa: E402
from consistency.repair import qp, repair_graph, repair_tuples  # noqa: E402
from consistency.repair.conflicts import RepairFailed  # noqa: E402
from consistency.repair.tuples import world_improvements  # noqa: E402

BINARY_MIX = ("NEGATION", "PARAPHRASE", "CONSEQUENCE", "AND", "OR", "ANDOR", "BUT")
JOINT_CHECKS = (*BINARY_MIX, "COND", "CONDCOND", "EXPEVIDENCE")


def load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def forecasts(check, n: int, rng: np.random.Generator) -> np.ndarray:
    n_coherent = n_rounded = n // 10
    parts = [
        rng.random((n - n_coherent - n_rounded, check.n_fields)),
        check.coherent_sample(n_coherent, rng),
        np.round(rng.random((n_rounded, check.n_fields)) * 1.2 - 0.1, 1).clip(0, 1),
    ]
    return np.vstack(parts)[rng.permutation(n)]


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def per_tuple(n: int, rng: np.random.Generator) -> None:
    for check in all_checks():
        F = forecasts(check, n, rng)
        repair_tuples(check, F[:1000])  # warm-up: the check's tables
        result, brier_s, brier_cpu = timed(lambda check=check, F=F: repair_tuples(check, F, "brier"))
        _, log_s, log_cpu = timed(lambda check=check, F=F: repair_tuples(check, F, "log"))
        resolving = (check.worlds != NONE).astype(float)
        moved_there = ((F - result.repaired) ** 2) @ resolving.T
        slack = world_improvements(check.worlds, F, result.repaired, "brier") - moved_there
        print(
            f"per_tuple {check.name} brier_per_s={n / brier_s:.0f} brier_cpu_per_s={n / brier_cpu:.0f} "
            f"log_per_s={n / log_s:.0f} log_cpu_per_s={n / log_cpu:.0f} "
            f"fixed_point_iterations={result.iterations} worst_guarantee_slack={slack.min():.1e} load={load()}",
            flush=True,
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


def random_worlds(blocks, events, M: int, pool: int, n_worlds: int, rng):
    """Random joint worlds (each a base-event assignment): per question 1 / 0 / -1 (unresolved)."""
    tables = [outcome_table(check) for check, _ in blocks]
    for _ in range(n_worlds):
        base = rng.random(pool) < rng.random()
        truth = np.full(M, -2)
        for (_, idx), draws, table in zip(blocks, events, tables, strict=True):
            truth[idx] = table[(~base[draws]).astype(int) @ (1 << np.arange(draws.shape[1])[::-1])]
        yield truth


def joint_world_slack(blocks, events, p, q, pool: int, n_worlds: int, rng) -> float:
    worst = np.inf
    for truth in random_worlds(blocks, events, len(p), pool, n_worlds, rng):
        resolved = truth >= 0
        o = (truth == TRUE).astype(float)
        gain = (((p - o) ** 2 - (q - o) ** 2) * resolved).sum()
        worst = min(worst, gain - (((p - q) ** 2) * resolved).sum())
    return float(worst)


def joint(label: str, names, args, rng) -> tuple:
    blocks, events, M = graph(args.joint, args.pool, list(names), rng)
    p = rng.random(M)
    result, _, cpu = timed(lambda: repair_graph(blocks, p, "brier"))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    slack = joint_world_slack(blocks, events, p, result.repaired, args.pool, args.worlds, rng)
    off = max(float(repair_tuples(check, result.repaired[idx]).moved.max()) for check, idx in blocks) ** 0.5
    n = sum(len(idx) for _, idx in blocks)
    conditional = sum(len(idx) for check, idx in blocks if (check.worlds == NONE).any())
    print(
        f"joint {label} tuples={n} conditional_tuples={conditional} questions={M} pool={args.pool} "
        f"seconds={result.seconds:.1f} cpu_seconds={cpu:.1f} status={result.status} outer={result.iterations} "
        f"settled={result.residual:.1e} incoherence={off:.1e} slack={slack:.1e} moved={result.moved:.3f} "
        f"guaranteed={result.guaranteed:.3f} peak_rss_mb={peak_mb:.0f} load={load()}",
        flush=True,
    )
    return blocks, p, result


def log_slack(blocks, events, p, q, guaranteed: float, pool: int, n_worlds: int, rng) -> float:
    """The smallest log-loss gain from p to q minus the guarantee, over random joint worlds (resolving questions)."""
    worst = np.inf
    for truth in random_worlds(blocks, events, len(p), pool, n_worlds, rng):
        gain = np.where(truth == TRUE, np.log(q / p), np.log((1 - q) / (1 - p)))
        worst = min(worst, float(gain[truth >= 0].sum()) - guaranteed)
    return worst


def joint_log(args, rng) -> None:
    """The joint log repair of the binary mix (KL projection) and of the mix with conditional checks (the graph's
    arbitrage prices), their guarantee on random joint worlds, and Clarabel's exponential-cone formulation of the
    binary problem on a smaller graph (``--log-reference``)."""
    from consistency.metrics.arbitrage import clip_forecasts

    for label, names in (("binary", BINARY_MIX), ("conditional", JOINT_CHECKS)):
        blocks, events, M = graph(args.joint, args.pool, list(names), rng)
        p = clip_forecasts(rng.random(M))
        try:
            result, _, cpu = timed(lambda blocks=blocks, p=p: repair_graph(blocks, p, "log"))
        except RepairFailed as exc:  # printed, so that the run goes on and the failure is a figure too
            print(f"joint_log {label} tuples={sum(len(i) for _, i in blocks)} failed: {exc} load={load()}", flush=True)
            continue
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        off = max(float(repair_tuples(check, result.repaired[idx]).moved.max()) for check, idx in blocks) ** 0.5
        worst = log_slack(blocks, events, p, result.repaired, result.guaranteed, args.pool, args.worlds, rng)
        conditional = sum(len(idx) for check, idx in blocks if (check.worlds == NONE).any())
        print(
            f"joint_log {label} tuples={sum(len(i) for _, i in blocks)} conditional_tuples={conditional} "
            f"questions={M} seconds={result.seconds:.1f} cpu_seconds={cpu:.1f} status={result.status} "
            f"incoherence={off:.1e} moved_nats={result.moved:.6f} guaranteed_nats={result.guaranteed:.6f} "
            f"slack={worst:.1e} peak_rss_mb={peak_mb:.0f} load={load()}",
            flush=True,
        )
    small, _, m = graph(args.log_reference, max(args.log_reference // 20, 10), list(BINARY_MIX), rng)
    ps = clip_forecasts(rng.random(m))
    ours = repair_graph(small, ps, "log")
    parts, offset = [], m
    for check, idx in small:
        part = qp.Block(check, idx, offset, np.asarray(check.worlds))
        parts.append(part)
        offset += part.size
    system = qp.build(parts, m, None)
    for tol in (1e-12, 1e-8):
        (x, status), seconds, _ = timed(lambda tol=tol: qp.solve_kl_clarabel(system, ps, tol=tol))
        print(
            f"clarabel_exp_cone log_binary tuples={sum(len(i) for _, i in small)} tol={tol:.0e} seconds={seconds:.1f} "
            f"status={status} ours_seconds={ours.seconds:.1f} max_diff={np.abs(x[:m] - ours.repaired).max():.1e} "
            f"load={load()}",
            flush=True,
        )


def clarabel_once(label: str, blocks, p, result, tols: tuple[float, ...]) -> None:
    """Clarabel's single solve of the QP whose solution the joint repair returned (at its conditional values)."""
    parts, offset = [], len(p)
    for check, idx in blocks:
        part = qp.Block(check, idx, offset, np.asarray(check.worlds))
        parts.append(part)
        offset += part.size
    system = qp.build(parts, len(p), result.repaired)
    for tol in tols:
        (x, z, status), seconds, cpu = timed(lambda tol=tol: qp.solve_clarabel(system, p, tol=tol))
        reference = np.clip(x[: len(p)], 0, 1)
        diff = float(np.abs(reference - result.repaired).max())
        q = result.repaired
        objective = 0.5 * float(((q - reference) * (q + reference - 2 * p)).sum())  # ours minus Clarabel's
        print(
            f"clarabel {label} tol={tol:.0e} seconds={seconds:.1f} cpu_seconds={cpu:.1f} status={status} "
            f"ratio={result.seconds / seconds:.2f} max_diff={diff:.1e} objective_ours_minus_clarabel={objective:.1e} "
            f"{qp.kkt_residuals(system, p, x, z)} load={load()}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=100_000, help="tuples per check (per-tuple repair)")
    parser.add_argument("--joint", type=int, default=100_000, help="tuples in each joint repair")
    parser.add_argument("--pool", type=int, default=5_000, help="base questions the joint tuples share")
    parser.add_argument("--worlds", type=int, default=200, help="random joint worlds to check the guarantee on")
    parser.add_argument("--log-reference", type=int, default=20_000, help="tuples of the exponential-cone comparison")
    parser.add_argument("--skip-per-tuple", action="store_true")
    parser.add_argument("--skip-clarabel", action="store_true", help="no reference solves")
    parser.add_argument(
        "--strict-reference",
        action="store_true",
        help="Clarabel at 1e-14 on the conditional QP too (over 30 minutes on the 2-core machine at load 11)",
    )
    parser.add_argument("--smoke", action="store_true", help="small sizes, every part: seconds (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.n, args.joint, args.pool, args.worlds, args.log_reference = 2_000, 2_000, 100, 20, 500
    print(f"bench_repair cores={os.cpu_count()} load={' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    rng = np.random.default_rng(0)
    if not args.skip_per_tuple:
        per_tuple(args.n, rng)
    done = [
        (label, *joint(label, names, args, rng))
        for label, names in (("binary", BINARY_MIX), ("conditional", JOINT_CHECKS))
    ]
    joint_log(args, rng)
    if not args.skip_clarabel:
        for label, blocks, p, result in done:
            strict = label == "binary" or args.strict_reference
            clarabel_once(label, blocks, p, result, (1e-12, 1e-14) if strict else (1e-12,))
    print(f"done load={' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)


if __name__ == "__main__":
    main()
