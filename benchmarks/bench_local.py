"""The quick start's evaluate step, old elicitation against new: ``python benchmarks/bench_local.py``.

Runs ``cc evaluate --forecaster local --limit 1`` (the bundled benchmark's first tuple per check, 33
questions, no response cache) through our LLM layer with the two ways of asking the bundled model:

- ``new``: the logprob forecaster (``local``, what the quick start runs): one generated token per
  question, the probability read from the Yes/No next-token distribution;
- ``old``: the basic forecaster's number-writing prompt (``basic:local``): a JSON probability,
  about 13 generated tokens, which SmolLM2-135M fills with 0.9999 or more for every question.

Each phase runs on a freshly started server (no phase finds another's prompts in llama.cpp's cache), in
the order old, new, ceiling, new, old (``--rounds`` pairs of old and new, in alternating order), so
that a change of the machine's load weighs on both sides alike. The ceiling is the new requests sent
straight to llama.cpp's server (no client layer). Prints

    server_start_s=<s> slots=<n> threads=<n>
    phase=<name> wall_s=<s> cpu_s=<s> ...            (one line per phase, as it ends)
    distinct_probabilities=<n> questions=<n> failed=<n> min=<p> max=<p> answer_mass_median=<m>
    old_s=<s> new_s=<s> time_ratio_new_old=<new/old> pair_ratios=<new/old of each pair,...>
        old_cpu_s=<s> new_cpu_s=<s> cpu_ratio_new_old=<new/old>
    tokens_per_question_old=<n> prompt=<n> generated=<n>
    tokens_per_question_new=<n> prompt=<n> generated=<n>
    ceiling_questions_per_s=<q/s> local_questions_per_s=<q/s> ratio=<layer/ceiling>
    loadavg=<1 5 15 min> cores=<n>

Targets: ``distinct_probabilities`` >= 20 (distinct to 3 decimals), ``time_ratio_new_old`` <= 1 (the
quick start is no slower than with the old elicitation), ``ratio`` >= 0.8 (the layer's overhead).
``cpu_s`` is the CPU time the server and this process used in a phase: on a shared machine the wall
times follow the other jobs' load, the CPU time far less (``cpu_ratio_new_old`` compares the work).
``answer_mass`` is P(Yes) + P(No) summed over their spellings: how much of the first token's distribution
the two answers hold. ``--smoke`` runs the same code paths on one check (2 questions), one server for
every phase and one round: seconds, and figures that only show the paths work.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_local_ceiling import measure, warm_up

from consistency.evaluation import RunOptions, evaluate, load_benchmark, plan
from consistency.evaluation.rundir import TRANSCRIPT
from consistency.forecasters import LogprobForecaster
from consistency.llm import LLMSettings
from consistency.llm.local import LocalServer, resolve_weights
from consistency.llm.local import server as local_server

SPECS = {"old": "basic:local", "new": "local"}


def cpu_seconds(pid: int | None) -> float:
    """CPU time (user + system) used so far by the server process ``pid`` and by this process.

    On a shared machine a phase's wall time follows the other jobs' load (the same phase took 47 s and
    92 s in one run); the CPU time the work itself needed moves far less, so both are reported.
    """
    own = os.times()
    total = own.user + own.system
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    except (OSError, IndexError, ValueError):
        pass  # no /proc (not Linux): this process's own time only
    return total


def logprob_bodies(checks: list[str] | None, limit: int) -> list[dict]:
    """The request bodies the new elicitation sends, as our layer sends them (for the ceiling)."""
    asks, _ = plan(load_benchmark(None, checks, limit), per_occurrence=False)
    forecaster = LogprobForecaster("local")
    return [
        {"model": "local", "messages": forecaster.request(a.question), "temperature": 0.0, "max_tokens": 1}
        | {"logprobs": True, "top_logprobs": forecaster.top_logprobs}
        for a in asks
    ]


def timed_evaluate(root: Path, name: str, spec: str, slots: int, checks: list[str] | None, limit: int) -> dict:
    """One evaluate through the layer; its wall time, forecasts and token counts."""
    settings = LLMSettings(cache=False, max_connections=slots, timeout=600)
    options = RunOptions(concurrency=slots, timeout=None, llm=settings)
    start = time.perf_counter()
    result = evaluate(spec, checks=checks, limit=limit, out=root / name, options=options)
    wall = time.perf_counter() - start
    records = [json.loads(line) for line in (root / name / "forecasts.jsonl").read_text().splitlines() if line]
    calls = [json.loads(line) for line in (root / name / TRANSCRIPT).read_text().splitlines() if line.strip()]
    n = max(len(calls), 1)
    return {
        "wall_s": wall,
        "questions": result.meta.questions,
        "failed": len(result.failures),
        "probabilities": [r["forecast"]["prob"] for r in records if r.get("forecast")],
        "metadata": [r["forecast"].get("metadata") or {} for r in records if r.get("forecast")],
        "prompt_per_q": sum(c["usage"]["prompt_tokens"] for c in calls) / n,
        "generated_per_q": sum(c["usage"]["completion_tokens"] for c in calls) / n,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slots", type=int, default=local_server.DEFAULT_PARALLEL)
    parser.add_argument("--threads", type=int, default=None, help="default: as the server chooses (free cores)")
    parser.add_argument("--rounds", type=int, default=2, help="pairs of old and new runs, in alternating order")
    parser.add_argument("--smoke", action="store_true", help="one check, one server, one round: seconds")
    args = parser.parse_args()
    checks, limit = (["neg"], 1) if args.smoke else (None, 1)
    rounds = 1 if args.smoke else max(1, args.rounds)
    order = [phase for r in range(rounds) for phase in (("old", "new") if r % 2 == 0 else ("new", "old"))]
    order.insert(2, "ceiling")  # old, new, ceiling, new, old, old, new...
    weights = resolve_weights()  # the bundled GGUF, fetched into the user's cache once
    bodies = logprob_bodies(checks, limit)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["CC_CACHE_DIR"] = str(root / "cache")  # a fresh server, not one another process runs
        os.environ["CC_LOCAL_MODEL"] = str(weights)
        threads = args.threads or local_server.default_threads()  # the same for every phase

        def fresh() -> LocalServer:
            return LocalServer(weights, parallel=args.slots, threads=threads).start()

        start = time.perf_counter()
        server = fresh()
        print(f"server_start_s={time.perf_counter() - start:.2f} slots={server.parallel} threads={server.threads}")
        runs: dict[str, list[dict]] = {"old": [], "new": [], "ceiling": []}
        try:
            for i, phase in enumerate(order):
                if i and not args.smoke:
                    server.stop()
                    server = fresh()
                warm_up(server.base_url)
                local_server._SHARED = server  # what `local` resolves to in this process
                cpu = cpu_seconds(server.pid)
                if phase == "ceiling":
                    r = measure(server.base_url, bodies, server.parallel)
                    said = f"questions_per_s={r['questions_per_s']:.3f}"
                else:
                    r = timed_evaluate(root, f"{phase}{i}", SPECS[phase], server.parallel, checks, limit)
                    said = f"spec={SPECS[phase]} failed={r['failed']}"
                r["cpu_s"] = cpu_seconds(server.pid) - cpu
                runs[phase].append(r)
                print(f"phase={phase} wall_s={r['wall_s']:.1f} cpu_s={r['cpu_s']:.1f} {said}")
                print(f"  loadavg={os.getloadavg()[0]:.2f}", flush=True)
        finally:
            server.stop()
    report(runs)


def report(runs: dict[str, list[dict]]) -> None:
    new, old = runs["new"][0], runs["old"][0]
    probs = new["probabilities"]
    mass = [m["p_yes"] + m["p_no"] for m in new["metadata"] if "p_yes" in m]
    print(
        f"distinct_probabilities={len({round(p, 3) for p in probs})} questions={new['questions']} "
        f"failed={new['failed']} min={min(probs, default=float('nan')):.3f} max={max(probs, default=float('nan')):.3f} "
        f"answer_mass_median={statistics.median(mass) if mass else float('nan'):.3f} "
        f"old_distinct_probabilities={len({round(p, 3) for p in old['probabilities']})}"
    )
    old_s = statistics.mean(r["wall_s"] for r in runs["old"])
    new_s = statistics.mean(r["wall_s"] for r in runs["new"])
    old_cpu = statistics.mean(r["cpu_s"] for r in runs["old"])
    new_cpu = statistics.mean(r["cpu_s"] for r in runs["new"])
    pairs = [n["wall_s"] / o["wall_s"] for o, n in zip(runs["old"], runs["new"], strict=True)]
    print(
        f"old_s={old_s:.1f} new_s={new_s:.1f} time_ratio_new_old={new_s / old_s:.3f} "
        f"pair_ratios={','.join(f'{r:.2f}' for r in pairs)} "
        f"old_cpu_s={old_cpu:.1f} new_cpu_s={new_cpu:.1f} cpu_ratio_new_old={new_cpu / old_cpu:.3f}"
    )
    for name, r in (("old", old), ("new", new)):
        prompt, generated = r["prompt_per_q"], r["generated_per_q"]
        print(f"tokens_per_question_{name}={prompt + generated:.0f} prompt={prompt:.0f} generated={generated:.1f}")
    ceiling = statistics.mean(m["questions_per_s"] for m in runs["ceiling"])
    local = new["questions"] / new_s
    print(f"ceiling_questions_per_s={ceiling:.3f} local_questions_per_s={local:.3f} ratio={local / ceiling:.3f}")
    print(f"loadavg={' '.join(f'{x:.2f}' for x in os.getloadavg())} cores={os.cpu_count()}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
