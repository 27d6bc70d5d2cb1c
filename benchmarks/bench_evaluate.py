"""End-to-end evaluation throughput: ``python benchmarks/bench_evaluate.py``.

Builds about 1,000 tuples of mixed checks (up to 100 per check, template-instantiated from the
bundled base questions: 72 for the one-question checks, 42 MONOTONE chains from the questions whose
deadline the template can move; it says how many it skipped), then runs ``evaluate`` with the basic
forecaster against the scripted server (own process, 50 ms latency) at concurrency 64 and prints

    questions=<n> wall_s=<t> call_bound_s=<questions*latency/concurrency> efficiency=<bound/wall>

(target efficiency >= 0.8); then the same run again from the response cache (target: under
10 s); then the ``local`` forecaster's throughput in questions/s on a few questions (tracked).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import tempfile
import time
from pathlib import Path

from bench_llm import scripted_server
from smoke import parse_args

from consistency.checks.builtin import BUILTIN_CHECKS
from consistency.datasets import benchmark_dir
from consistency.evaluation import RunOptions, evaluate
from consistency.generate import TemplateInstantiator, instantiate_all
from consistency.jsonl import read_jsonl, write_jsonl
from consistency.llm import LLMSettings
from consistency.models import ForecastingQuestion
from consistency.store.meta import RunMeta, Totals


def build_tuples(out: Path, per_check: int) -> int:
    """``per_check`` template tuples of every builtin check; returns how many were written in all."""
    questions = [q for _, q in read_jsonl(benchmark_dir() / "questions.jsonl", ForecastingQuestion)]
    total = 0
    for check in BUILTIN_CHECKS:
        made = asyncio.run(instantiate_all(TemplateInstantiator(), check, questions, per_check, seed=1))
        if made.skipped:  # MONOTONE's chains start only from questions with a "by DATE" deadline
            print(made.note(check))
        total += write_jsonl(out / f"{check.class_name}.jsonl", made.tuples)
    return total


def timed_run(spec: str, tuples: Path, out: Path, concurrency: int) -> tuple[float, RunMeta]:
    options = RunOptions(concurrency=concurrency, llm=LLMSettings(max_connections=concurrency))
    start = time.perf_counter()
    result = evaluate(spec, tuples=tuples, out=out, options=options)
    elapsed = time.perf_counter() - start
    if result.failures:
        raise SystemExit(f"{len(result.failures)} forecasts failed: {result.failures[0]['error']}")
    return elapsed, result.meta


def local_throughput(questions: int, root: Path) -> str:
    if questions <= 0:
        return "local_questions_per_s=- (skipped)"
    if importlib.util.find_spec("xllamacpp") is None:
        return "local_questions_per_s=- (install the local extra: pip install -e '.[local]')"
    evaluate("constant", checks=["neg"], limit=1, out=root / "imports")  # imports, not timed
    start = time.perf_counter()
    result = evaluate("local", checks=["neg", "para"], limit=max(1, questions // 3), out=root / "local")
    elapsed = time.perf_counter() - start
    n = result.meta.questions or 0
    return f"local_questions_per_s={n / elapsed:.3f} questions={n} wall_s={elapsed:.1f} (includes server start)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-check", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--local-questions", type=int, default=6)
    # --smoke leaves the bundled model to bench_local.py's smoke run (its server start alone takes seconds)
    args = parse_args(parser, {"per_check": 2, "concurrency": 8, "latency": 0.01, "local_questions": 0})
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["CC_CACHE_DIR"] = str(root / "cache")
        n_tuples = build_tuples(root / "tuples", args.per_check)
        with scripted_server(args.latency) as spec:
            wall, meta = timed_run(spec, root / "tuples", root / "cold", args.concurrency)
            n, totals = meta.questions or 0, meta.totals or Totals()
            bound = n * args.latency / args.concurrency
            print(
                f"questions={n} wall_s={wall:.2f} call_bound_s={bound:.2f} efficiency={bound / wall:.3f} "
                f"tuples={n_tuples} calls={totals.calls}"
            )
            warm, meta = timed_run(spec, root / "tuples", root / "warm", args.concurrency)
            totals = meta.totals or Totals()
            print(f"cached_rerun_wall_s={warm:.2f} cache_hits={totals.cache_hits} calls={totals.calls}")
        print(local_throughput(args.local_questions, root))


if __name__ == "__main__":
    main()
