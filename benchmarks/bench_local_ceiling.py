"""The machine's ceiling for the bundled model: ``python benchmarks/bench_local_ceiling.py``.

Sends the quick start's own requests (``cc evaluate --forecaster local --limit 1``: the bundled
benchmark's first tuple per check, the request bodies our layer sends, grammar included) straight to
llama.cpp's server (xllamacpp), with no client layer of ours, for each number of threads and slots, and
prints per configuration

    ceiling threads=<t> slots=<s> questions_per_s=<q/s> prompt_tok_per_s=<aggregate> gen_tok_per_s=<aggregate>
        prompt_tok_per_s_per_request=<median> gen_tok_per_s_per_slot=<median> prompt_tokens_per_q=<n>
        cached_tokens_per_q=<n> gen_tokens_per_q=<n>

then the best configuration. ``questions_per_s`` is the ceiling for those token counts: wall time of the
30 requests sent ``slots`` at a time. Prompt tokens count only those llama.cpp had to process (the
rest came from a slot's cache of an earlier prompt with the same start). On a shared machine, compare
configurations within one run (the load average is printed with each line).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from smoke import parse_args

from consistency.evaluation.benchmark import load_benchmark
from consistency.evaluation.runner import plan
from consistency.forecasters.llm import ForecastAnswer, ProbabilityAnswer, forecast_messages
from consistency.llm.local import LocalServer, resolve_weights
from consistency.llm.local.transport import llguidance_grammar

_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def quickstart_bodies(reasoning: bool = False, limit: int = 1) -> list[dict]:
    """The chat-completion bodies the quick start's evaluate sends (``reasoning``: the long prompt and schema)."""
    asks, _ = plan(load_benchmark(None, None, limit), per_occurrence=False)
    if reasoning:
        prompts, schema = ("forecast_system", "forecast_user"), ForecastAnswer.model_json_schema()
    else:
        prompts, schema = ("forecast_brief_system", "forecast_brief_user"), ProbabilityAnswer.model_json_schema()
    grammar = llguidance_grammar(schema)
    return [
        {"model": "local", "messages": forecast_messages(a.question, *prompts), "temperature": 0.0, "grammar": grammar}
        for a in asks
    ]


def post(base_url: str, body: dict, timeout: float = 3600.0) -> dict:
    request = urllib.request.Request(
        f"{base_url}/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with _NO_PROXY.open(request, timeout=timeout) as resp:
        return json.loads(resp.read())


def warm_up(base_url: str) -> None:
    """One token for an unrelated prompt: the weights are paged in, no measured prompt is cached."""
    post(base_url, {"model": "local", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 1})


def measure(base_url: str, bodies: list[dict], concurrency: int, budget: float = 3600.0) -> dict:
    """Send ``bodies`` ``concurrency`` at a time; throughput and token counts from llama.cpp's timings.

    Requests not answered within ``budget`` seconds are given up (a configuration far too slow for
    the machine's load); the rate then counts the answered ones only (``complete=False``).
    """
    warm_up(base_url)
    start = time.perf_counter()
    deadline = start + budget

    def one(body: dict) -> dict | None:
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            return None
        try:
            return post(base_url, body, timeout=remaining)
        except OSError:  # timed out
            return None

    with ThreadPoolExecutor(concurrency) as pool:
        answers = [a for a in pool.map(one, bodies) if a is not None]
    wall = time.perf_counter() - start
    complete = len(answers) == len(bodies)
    bodies = bodies[: len(answers)] or bodies[:1]
    timings = [a.get("timings", {}) for a in answers]
    n = max(len(answers), 1)
    prompt_n = sum(t.get("prompt_n", 0) for t in timings)
    gen_n = sum(t.get("predicted_n", 0) for t in timings)
    cached = sum(t.get("cache_n", 0) for t in timings)
    pp = [t["prompt_per_second"] for t in timings if t.get("prompt_per_second")]
    tg = [t["predicted_per_second"] for t in timings if t.get("predicted_per_second")]
    invalid = 0
    for a in answers:
        try:
            prob = json.loads(a["choices"][0]["message"]["content"])["prob"]
            invalid += not 0.0 <= float(prob) <= 1.0
        except (KeyError, ValueError, TypeError, IndexError):
            invalid += 1
    return {
        "questions_per_s": n / wall,
        "prompt_tok_per_s": prompt_n / wall,
        "gen_tok_per_s": gen_n / wall,
        "prompt_tok_per_s_per_request": statistics.median(pp) if pp else float("nan"),
        "gen_tok_per_s_per_slot": statistics.median(tg) if tg else float("nan"),
        "prompt_tokens_per_q": prompt_n / n,
        "cached_tokens_per_q": cached / n,
        "gen_tokens_per_q": gen_n / n,
        "invalid": invalid,
        "wall_s": wall,
        "complete": complete,
    }


def run_config(weights: Path, cache: Path, threads: int, slots: int, bodies: list[dict], budget: float) -> dict:
    with LocalServer(weights, threads=threads, parallel=slots, cache_dir=cache) as server:
        return measure(server.base_url, bodies, slots, budget)


def line(prefix: str, threads: int, slots: int, m: dict) -> str:
    return (
        f"{prefix} threads={threads} slots={slots} questions_per_s={m['questions_per_s']:.3f} "
        f"prompt_tok_per_s={m['prompt_tok_per_s']:.0f} gen_tok_per_s={m['gen_tok_per_s']:.1f} "
        f"prompt_tok_per_s_per_request={m['prompt_tok_per_s_per_request']:.0f} "
        f"gen_tok_per_s_per_slot={m['gen_tok_per_s_per_slot']:.1f} prompt_tokens_per_q={m['prompt_tokens_per_q']:.0f} "
        f"cached_tokens_per_q={m['cached_tokens_per_q']:.0f} gen_tokens_per_q={m['gen_tokens_per_q']:.1f} "
        f"invalid={m['invalid']} complete={'yes' if m['complete'] else 'no'} wall_s={m['wall_s']:.0f} "
        f"loadavg={os.getloadavg()[0]:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--slots", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--reasoning", action="store_true", help="the long prompt and schema with a justification")
    parser.add_argument("--rounds", type=int, default=1, help="measure every configuration this many times, in turn")
    parser.add_argument("--budget", type=float, default=300.0, help="seconds a configuration may take")
    parser.add_argument("--questions", type=int, default=None, help="the first N of the quick start's questions")
    args = parse_args(parser, {"threads": [1], "slots": [1], "questions": 1, "budget": 60.0})
    weights = resolve_weights()
    bodies = quickstart_bodies(args.reasoning)[: args.questions]
    print(f"questions={len(bodies)} cores={os.cpu_count()} loadavg={' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    best = None
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):  # in turn, so that a change of load hits every configuration
            for threads in args.threads:
                for slots in args.slots:
                    m = run_config(weights, Path(tmp) / "cache", threads, slots, bodies, args.budget)
                    print(line("ceiling", threads, slots, m), flush=True)
                    if m["complete"] and (best is None or m["questions_per_s"] > best[2]["questions_per_s"]):
                        best = (threads, slots, m)
    if best is not None:
        print(line("best", *best))


if __name__ == "__main__":
    main()
