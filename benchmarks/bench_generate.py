"""Tuple generation throughput against the scripted server: ``python benchmarks/bench_generate.py``.

Runs ``cc generate --check cond -n 200`` as a library call, with relevance filtering (2,000
candidate pairs, lexical-embedding prefilter to 600, a model relevance score for each kept pair),
llm instantiation and verification, and prints

    tuples_per_s=<n> llm_calls_per_verified_tuple=<n> efficiency=<calls/s over concurrency/latency>
    duplicate_prompts=<n>

Efficiency is measured as in bench_llm.py: model calls per second over the bound that the
concurrency and the injected server latency allow (target >= 0.8); duplicate_prompts counts
prompts sent to the server more than once in the run (target 0). The scripted model answers
every schema deterministically, so its verifier and relevance scores are uniform over 0-10:
about half of the tuples fail the default threshold of 6, as a strict verifier would make them.

The scripted server runs in its own process (see bench_llm.py). The default latency keeps the
bound (128 calls/s) under what the openai client can drive on a 2-core machine (~230 calls/s),
so the figure measures the pipeline, not the HTTP client's CPU cost.

Where the run waits (measured by counting the requests in flight every 0.5 s): before the first
call, the candidates' sampling and embedding prefilter (about 0.3 s) and, until the LLM layer was
changed, a second or more building the first endpoint (openai's resources imported for
``chat.completions.create``, a TLS context per client); the end of the relevance phase, whose
scores must all be in before the ranking is known (under half a second); and the last tuples, kept
few so that extras beyond ``-n`` are not paid for (about a second). The rest is the machine: on a
loaded 2-core machine the client and the server process share the cores and every answer comes
later than the injected latency, which the bound does not count.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_llm import scripted_server
from smoke import parse_args

from consistency.checks import get_check
from consistency.embeddings import LexicalEmbedder
from consistency.generate.llm import LLMInstantiator
from consistency.generate.pipeline import GenerateOptions, generate
from consistency.generate.relevance import RelevanceRanker
from consistency.generate.verify import TupleVerifier
from consistency.llm import LLM, LLMSettings
from consistency.models import ForecastingQuestion

TOPICS = ["central bank", "space agency", "football league", "election commission", "chip maker"]
PLACES = ["Brazil", "France", "India", "Japan", "Kenya", "Mexico", "Canada", "Germany", "Chile", "Korea"]


def questions(n: int) -> list[ForecastingQuestion]:
    out = []
    for i in range(n):
        topic, place = TOPICS[i % len(TOPICS)], PLACES[(i // len(TOPICS)) % len(PLACES)]
        out.append(
            ForecastingQuestion(
                id=f"bench-{i}",
                title=f"Will the {topic} of {place} announce milestone {i} before January 1, 2028?",
                body=f"Resolves YES if the {topic} of {place} officially announces milestone {i} before 2028.",
                resolution_date="2028-01-01",
                created_date="2024-10-01",
                metadata={"category": topic},
            )
        )
    return out


async def run(spec: str, args: argparse.Namespace, out_dir: Path, transcript: Path):
    settings = LLMSettings(max_connections=args.concurrency, cache=True, timeout=30)
    async with LLM(settings, transcript=transcript) as llm:
        options = GenerateOptions(n=args.n, candidates=args.candidates, concurrency=args.concurrency)
        ranker = RelevanceRanker(LexicalEmbedder(), llm, spec)
        start = time.perf_counter()
        report = await generate(
            get_check("cond"),
            questions(args.questions),
            LLMInstantiator(llm, spec),
            out_dir,
            options,
            ranker=ranker,
            verifier=TupleVerifier(llm, spec, args.threshold),
        )
        elapsed = time.perf_counter() - start
    return report, llm.stats, elapsed


def duplicate_prompts(transcript: Path) -> int:
    sent = Counter()
    for line in transcript.read_text().splitlines():
        entry = json.loads(line)
        if not entry["cache_hit"]:
            sent[json.dumps(entry["messages"], sort_keys=True)] += 1
    return sum(count - 1 for count in sent.values() if count > 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=200)
    parser.add_argument("--candidates", type=int, default=2000)
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--threshold", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.5)
    args = parse_args(parser, {"n": 4, "candidates": 30, "questions": 10, "latency": 0.01, "concurrency": 8})
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CC_CACHE_DIR"] = tmp
        transcript = Path(tmp) / "calls.jsonl"
        with scripted_server(args.latency) as spec:
            report, stats, elapsed = asyncio.run(run(spec, args, Path(tmp) / "out", transcript))
        duplicates = duplicate_prompts(transcript)
    if report.written < args.n:
        raise SystemExit(f"only {report.written} tuples verified: {dict(report.rejected)}")
    calls_per_s = stats.calls / elapsed
    bound = args.concurrency / args.latency
    print(
        f"tuples_per_s={report.written / elapsed:.2f} llm_calls_per_verified_tuple={stats.calls / report.written:.2f} "
        f"efficiency={calls_per_s / bound:.3f} calls_per_s={calls_per_s:.1f} bound={bound:.1f} "
        f"calls={stats.calls} wall_s={elapsed:.2f}"
    )
    print(f"duplicate_prompts={duplicates} failures={stats.failures} retries={stats.retries}")
    print("rejected: " + ", ".join(f"{step}={count}" for step, count in sorted(report.rejected.items()) if count))


if __name__ == "__main__":
    main()
