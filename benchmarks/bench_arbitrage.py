"""ArbitrageForecaster setups in the layout of the paper's Tables 4-7: ``python benchmarks/bench_arbitrage.py``.

The base forecaster is ``basic`` against the scripted server's *hypocritical* rule (a question and
its negation both lean YES; two wordings of a question disagree; deterministic per text). Every
setup runs ``evaluate`` on the bundled benchmark (``--limit`` tuples per check, each of the paper's
ten checks scored, as in its tables; no response cache, so each prompt the server sees is a real
call) and prints one row:

    setup  NEG avg/frac  PARA avg/frac  EXPEV avg/frac  aggregated  base_calls_per_question
           naive_calls_per_question  duplicate_prompts  wall_s  wall_vs_base

``--all-checks`` adds the other seven checks. Targets: NEGATION avg violation at depth 3 <= 25% of
the base's (printed as ``neg_depth3_over_base``); ``duplicate_prompts=0`` in every row. The naive
call count is the paper's (1 + sum over checks of (fields - 1))^r per question; memoisation shares
the nodes that several questions' trees have in common.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from collections import Counter
from pathlib import Path

from smoke import parse_args

from consistency.checks import PAPER_CHECKS, get_check
from consistency.datasets import benchmark_dir
from consistency.evaluation import RunOptions, evaluate
from consistency.fake_openai import ScriptedServer, hypocritical_rule
from consistency.forecasters import ArbitrageForecaster, BasicForecaster
from consistency.llm import LLMSettings

SETUPS: list[tuple[str, list[str], int]] = [
    ("base", [], 0),
    *((f"CF-N{r}", ["neg"], r) for r in (1, 2, 3)),
    *((f"CF-P{r}", ["para"], r) for r in (1, 2, 3)),
    *((f"CF-NP{r}", ["neg", "para"], r) for r in (1, 2)),
    ("CF-4xEE1", ["expev"] * 4, 1),
]
SHOWN = ("NEGATION", "PARAPHRASE", "EXPEVIDENCE")


def naive_calls(checks: list[str], depth: int) -> int:
    return (1 + sum(get_check(c).n_fields - 1 for c in checks)) ** depth


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=6, help="tuples per check (the bundled benchmark has 24)")
    parser.add_argument("--all-checks", action="store_true", help="print every check's avg/frac")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument(
        "--checks", default=",".join(c.name for c in PAPER_CHECKS), help="checks evaluated (default: the paper's ten)"
    )
    args = parse_args(parser, {"limit": 1, "checks": ",".join(SHOWN)})
    settings = LLMSettings(cache=False, timeout=30, max_connections=args.concurrency)
    related = str(benchmark_dir() / "questions.jsonl")
    rows = []
    with ScriptedServer(hypocritical_rule()) as srv, tempfile.TemporaryDirectory() as tmp:
        for name, checks, depth in SETUPS:
            base = BasicForecaster(srv.model_spec())
            forecaster = (
                ArbitrageForecaster(base, checks=checks, depth=depth, instantiator="template", related=related)
                if checks
                else base
            )
            srv.reset()
            start = time.perf_counter()
            result = evaluate(
                forecaster,
                checks=args.checks.split(","),  # the paper's tables: not MONOTONE
                limit=args.limit,
                out=Path(tmp) / name,
                options=RunOptions(concurrency=args.concurrency, llm=settings),
            )
            wall = time.perf_counter() - start
            prompts = Counter(r.last_user_text for r in srv.requests)
            per_check = {f.check.name: f.stats()["default"] for f in result.report.files}
            questions = result.meta.questions
            rows.append(
                {
                    "setup": name,
                    "checks": per_check,
                    "aggregated": result.report.aggregate()["default"]["avg_violation"],
                    "calls": srv.count / questions,
                    "naive": naive_calls(checks, depth),
                    "duplicates": sum(n - 1 for n in prompts.values()),
                    "failed": len(result.failures),
                    "wall": wall,
                }
            )
    shown = [c.name for c in (get_check(n) for n in SHOWN)]
    if args.all_checks:
        shown = list(rows[0]["checks"])
    head = ["setup", *(f"{c[:5]}_avg {c[:5]}_frac" for c in shown)]
    head += ["aggregated", "base_calls_per_question", "naive_calls_per_question", "duplicate_prompts", "failed"]
    head += ["wall_s", "wall_vs_base"]
    print(" | ".join(head))
    for row in rows:
        cells = [f"{row['setup']:<9}"]
        for c in shown:
            s = row["checks"][c]
            cells.append(f"{s.avg_violation:.4f} {s.fraction_violated:.0%}")
        cells += [f"{row['aggregated']:.4f}", f"{row['calls']:.2f}", str(row["naive"]), str(row["duplicates"])]
        cells += [str(row["failed"]), f"{row['wall']:.1f}", f"{row['wall'] / rows[0]['wall']:.1f}x"]
        print(" | ".join(cells))
    neg = {row["setup"]: row["checks"]["NEGATION"].avg_violation for row in rows}
    ratio = neg["CF-N3"] / neg["base"] if neg["base"] else math.nan
    print(f"neg_depth3_over_base={ratio:.3f} (target <= 0.25)")
    print(f"duplicate_prompts_max={max(row['duplicates'] for row in rows)} (target 0)")
    print(f"questions_per_setup={questions}")


if __name__ == "__main__":
    main()
