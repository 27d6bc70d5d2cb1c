"""Evaluation under a flaky provider: ``python benchmarks/bench_faults.py``.

Forecasts 2,000 resolved questions (``cc evaluate -q``'s library call, basic forecaster, no
cache) against the scripted server (in this process) fault-free and with 20% of requests
answered by a mixed fault (429 with Retry-After, 500, a hang past the client's timeout,
malformed JSON, a dropped connection; a retried request gets a fresh draw): after an untimed
warm-up, the two alternate ``--repeat`` times and the fastest of each counts. Prints

    lost=<questions without a forecast> duplicated=<questions answered twice> (worst faulty run)
    transcript_tokens=<sum of llm_calls.jsonl> billed_tokens=<what the server sent> run_tokens=<run.json>
    efficiency=<fault-free wall / faulty wall>   (target >= 0.7)
    batch mode (same faults): lost=0 duplicated=0 retries=<lines retried> ... transcript_tokens==billed_tokens

The batch-mode run sends the same questions through the Batch API under the same fault mix: a line
the server failed (500, 429, malformed, dropped, timed out) is retried within the attempt budget.

The attack row (:func:`attack_row`) runs ``cc attack`` processes under the same faults, kills them
with SIGKILL (twice in the search rounds, once in the uniform baseline) and resumes with ``--resume``
until it completes. Prints the forecasts charged per sampler against ``--attack-budget``, whether the
charged questions are exactly the questions with a journaled answer, and the double charges (0).
``--smoke`` makes every row small enough for seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from consistency.evaluation import RunOptions
from consistency.evaluation.ground_truth import evaluate_questions
from consistency.fake_openai import FAULT_KINDS, ScriptedServer, probability_rule, random_faults
from consistency.fake_openai.replies import call_rule
from consistency.fake_openai.rules import RULES
from consistency.jsonl import iter_json_lines, write_jsonl
from consistency.llm import LLMSettings


def write_questions(path: Path, n: int) -> None:
    write_jsonl(
        path,
        (
            {
                "id": f"q{i}",
                "title": f"Will benchmark event number {i} happen before 2030?",
                "body": f"Resolves YES if event {i} is reported by a reputable source before 2030-01-01.",
                "resolution": i % 3 == 0,
            }
            for i in range(n)
        ),
    )


def run(rule, questions: Path, out: Path, args, batch: bool = False) -> dict:
    settings = LLMSettings(
        cache=False,
        timeout=args.timeout,
        max_backoff=args.max_backoff,
        max_attempts=args.max_attempts,
        max_connections=args.concurrency,
    )
    if batch:  # the Batch API: a faulty line is retried in the next batch (or directly, per --batch-fallback)
        settings = settings.model_copy(
            update={"batch": True, "batch_idle": 0.05, "batch_poll": 0.02, "batch_poll_max": 0.2,
                    "batch_fallback": args.batch_fallback, "timeout": 30.0}
        )  # fmt: skip
    options = RunOptions(concurrency=args.concurrency, llm=settings)
    with ScriptedServer(rule, latency=args.latency) as srv:
        start = time.perf_counter()
        result = evaluate_questions(srv.model_spec(), questions, out=out, options=options)
        wall = time.perf_counter() - start
        billed = srv.billed
    calls = [obj for _, obj in iter_json_lines(out / "llm_calls.jsonl")]
    answered = Counter(c["messages"][-1]["content"] for c in calls if c["error"] is None)
    forecasts = {
        obj["key"]: obj for _, obj in iter_json_lines(out / "forecasts.jsonl") if obj.get("forecast") is not None
    }
    totals = json.loads((out / "run.json").read_text())["totals"]
    return {
        "wall": wall,
        "lost": args.questions - len(forecasts),
        "duplicated": sum(n - 1 for n in answered.values() if n > 1),
        "transcript_tokens": sum(c["usage"]["prompt_tokens"] + c["usage"]["completion_tokens"] for c in calls),
        "billed_tokens": billed["prompt_tokens"] + billed["completion_tokens"],
        "run_tokens": totals["prompt_tokens"] + totals["completion_tokens"],
        "requests": sum(c["attempts"] for c in calls),
        "retries": totals["retries"],
        "failures": len(result.failures),
    }


def attack_row(args) -> None:
    """``cc attack`` under the fault mix, killed with SIGKILL at three points and resumed until complete.

    Kills land when the journal holds 35% and 75% of the budget's answers (search rounds) and 110%
    (the uniform baseline, which has a budget of its own). Counts, from the journal: the distinct
    questions charged to each sampler, the distinct questions with an answer (a forecast or a recorded
    failure), the questions charged twice, and the questions the server was asked for that were never
    charged (a double spend either way)."""
    budget = 30 if args.smoke else args.attack_budget
    rates = dict.fromkeys(FAULT_KINDS, args.fault_rate / len(FAULT_KINDS))
    rule = random_faults(RULES["planted"](), rates, seed=args.seed, hang_seconds=10 * args.timeout, retry_after=0.1)
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(rule, latency=args.latency) as srv:
        out = Path(tmp) / "attack"
        journal = out / "journal.jsonl"
        command = [
            sys.executable, "-m", "consistency", "attack", "-f", srv.model_spec(), "-b", str(budget), "-o", str(out),
            "-c", "neg,para,cond,but", "--timeout", str(args.timeout), "--max-attempts", str(args.max_attempts),
            "--no-cache", "--concurrency", "16", "--json",
        ]  # fmt: skip
        env = os.environ | {"CC_CACHE_DIR": str(Path(tmp) / "cache")}
        kills, sessions, start = 0, 0, time.perf_counter()
        for share in (0.35, 0.75, 1.10, None):
            proc = subprocess.Popen(
                command + (["--resume"] if sessions else []), env=env, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            sessions += 1
            while share is not None and proc.poll() is None:
                answered = journal.read_text(encoding="utf-8").count('"kind": "forecast"') if journal.exists() else 0
                if answered >= share * budget:
                    proc.send_signal(signal.SIGKILL)
                    kills += 1
                    break
                time.sleep(0.01)
            _, stderr = proc.communicate(timeout=600)
            if share is None and proc.returncode != 0:
                raise SystemExit(f"the last resume of the attack failed ({proc.returncode}): {stderr[-2000:]}")
        wall = time.perf_counter() - start
        asked = {
            r.last_user_text.split("\n", 1)[0].removeprefix("Question: ")
            for r in srv.requests
            if r.last_user_text.startswith("Question: ")
        }
        records = [obj for _, obj in iter_json_lines(journal)]
        summary = json.loads((out / "attack.json").read_text())["summary"]
    charged: dict[str, Counter[str]] = {"search": Counter(), "baseline": Counter()}
    for r in records:
        if r["kind"] == "charge":
            charged[r["sampler"]].update(r["keys"])
    answers = {r["key"]: r for r in records if r["kind"] == "forecast"}
    every = set(charged["search"]) | set(charged["baseline"])
    twice = sum(n > 1 for c in charged.values() for n in c.values())
    titles = {r["title"] for r in answers.values()}
    failed = sum(r["forecast"] is None for r in answers.values())
    print(
        f"attack (budget {budget}, {args.fault_rate:.0%} faults, {kills} kill -9 + resume, {sessions} sessions): "
        f"charged_search={len(charged['search'])}/{budget} charged_baseline={len(charged['baseline'])}/{budget} "
        f"answered={len(answers)} charged{'==' if every == set(answers) else '!='}answered "
        f"asked={len(asked)} charged_twice={twice} asked_not_charged={len(asked - titles)} failed={failed} "
        f"found_above_threshold={summary['found_above_threshold']} wall_s={wall:.1f} load={os.getloadavg()[0]:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--fault-rate", type=float, default=0.2, help="share of requests answered with a fault")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.05, help="server seconds per answer")
    parser.add_argument("--timeout", type=float, default=1.0, help="client seconds per request (hangs last 10x)")
    parser.add_argument("--max-backoff", type=float, default=0.5)
    parser.add_argument("--max-attempts", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=2, help="runs of each; the fastest counts (a shared machine)")
    parser.add_argument("--batch-fallback", default="batch", help="batch mode: where retries go (batch or direct)")
    parser.add_argument("--attack-budget", type=int, default=120, help="the attack row's --budget")
    parser.add_argument("--smoke", action="store_true", help="small sizes: every row in seconds (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.questions, args.repeat = min(args.questions, 200), 1
    rates = dict.fromkeys(FAULT_KINDS, args.fault_rate / len(FAULT_KINDS))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["CC_CACHE_DIR"] = str(root / "cache")
        write_questions(root / "questions.jsonl", args.questions)
        faulty_rule = random_faults(
            probability_rule(), rates, seed=args.seed, hang_seconds=10 * args.timeout, retry_after=0.1
        )
        run(probability_rule(), root / "questions.jsonl", root / "warm-up", args)  # first-call costs, untimed
        cleans, faults = [], []
        for i in range(args.repeat):  # alternated, so a burst of load elsewhere hits both kinds alike
            cleans.append(run(probability_rule(), root / "questions.jsonl", root / f"clean{i}", args))
            faults.append(run(faulty_rule, root / "questions.jsonl", root / f"faulty{i}", args))
        batched = run(faulty_rule, root / "questions.jsonl", root / "batch", args, batch=True)
        clean = min(cleans, key=lambda r: r["wall"])
        faulty = min(faults, key=lambda r: r["wall"])
    print(
        f"questions={args.questions} fault_rate={args.fault_rate} faults={','.join(FAULT_KINDS)} "
        f"concurrency={args.concurrency} latency_s={args.latency} timeout_s={args.timeout}"
    )
    print(
        f"fastest of {args.repeat}: fault-free: wall_s={clean['wall']:.2f} requests={clean['requests']} "
        f"lost={clean['lost']} tokens={clean['transcript_tokens']}"
    )
    print(
        f"faulty: wall_s={faulty['wall']:.2f} requests={faulty['requests']} retries={faulty['retries']} "
        f"failed={faulty['failures']}"
    )
    same = all(f["transcript_tokens"] == f["billed_tokens"] == f["run_tokens"] for f in faults)
    lost, duplicated = max(f["lost"] for f in faults), max(f["duplicated"] for f in faults)
    print(
        f"lost={lost} duplicated={duplicated} transcript_tokens={faulty['transcript_tokens']} "
        f"billed_tokens={faulty['billed_tokens']} run_tokens={faulty['run_tokens']} "
        f"transcript_tokens{'==' if same else '!='}billed_tokens efficiency={clean['wall'] / faulty['wall']:.3f} "
        "(target >= 0.7)"
    )
    b = batched
    same = b["transcript_tokens"] == b["billed_tokens"] == b["run_tokens"]
    print(
        f"batch mode (same faults, --batch-fallback {args.batch_fallback}): lost={b['lost']} "
        f"duplicated={b['duplicated']} retries={b['retries']} failed={b['failures']} "
        f"transcript_tokens={b['transcript_tokens']} billed_tokens={b['billed_tokens']} run_tokens={b['run_tokens']} "
        f"transcript_tokens{'==' if same else '!='}billed_tokens"
    )
    attack_row(args)
    inspect_row(args)


def inspect_row(args) -> None:
    """The inspect row: ``consistency/all`` through inspect's OpenAI-compatible provider under the same
    fault mix (malformed bodies included), against a fault-free run of the same tuples.

    Prints ``inspect: samples=… scored=… lost=<samples without a score> duplicated=<questions whose answer
    the log records from two calls> … replies=<answers the server sent; beyond one per question, answers the
    client had given up on> metrics_equal=<the faulty run's metrics are the fault-free run's>``. ``--smoke``:
    1 tuple per check instead of 12, and a shorter attempt timeout.
    """
    try:
        from inspect_ai import eval as inspect_eval
    except ImportError:
        print("inspect: skipped (needs the [inspect] extra)")
        return
    from consistency.fake_openai import Reply

    smoke = args.smoke
    limit = 1 if smoke else 12
    rates = dict.fromkeys(FAULT_KINDS, args.fault_rate / len(FAULT_KINDS))
    attempt_timeout = 2 if smoke else max(2, round(4 * args.timeout))  # whole seconds; hangs outlast it
    hang = 2.5 * attempt_timeout
    replies: Counter = Counter()

    def counted(rule):
        async def rule_counting_replies(request):
            outcome = await call_rule(rule, request)
            if isinstance(outcome, Reply):
                replies[request.last_user_text] += 1
            return outcome

        return rule_counting_replies

    def one(rule, log_dir: Path) -> tuple[dict, dict]:
        with ScriptedServer(rule, latency=args.latency) as srv:
            os.environ["SCRIPTED_API_KEY"] = "not-a-real-key"
            start = time.perf_counter()
            (log,) = inspect_eval(
                "consistency/all",
                model="openai-api/scripted/scripted",
                model_base_url=srv.base_url,
                task_args={"limit": limit, "seed": args.seed},
                max_retries=args.max_attempts - 1,
                attempt_timeout=attempt_timeout,
                max_connections=args.concurrency,
                display="none",
                log_dir=str(log_dir),
            )
            wall = time.perf_counter() - start
            requests = srv.count
        if log.status != "success" or not log.results:
            raise SystemExit(f"inspect row: the evaluation ended with status {log.status}: {log.error}")
        metrics = {k: m.value for k, m in log.results.scores[0].metrics.items()}
        calls = Counter(  # a question's answer comes from one call, shared by the samples that ask it
            event.input[-1].text
            for sample in log.samples or []
            for event in sample.events
            if event.event == "model" and event.error is None
        )
        duplicated = sum(n - 1 for n in calls.values() if n > 1)
        counts = {"samples": len(log.samples or []), "duplicated": duplicated, "wall": wall, "requests": requests}
        return metrics, counts

    with tempfile.TemporaryDirectory() as tmp:
        clean, clean_run = one(probability_rule(), Path(tmp) / "clean")
        faulty_rule = random_faults(probability_rule(), rates, seed=args.seed, hang_seconds=hang, retry_after=0.1)
        faulty, run = one(counted(faulty_rule), Path(tmp) / "faulty")
    print(
        f"inspect (consistency/all, {limit} tuple(s) per check, same faults): samples={run['samples']} "
        f"scored={int(faulty['scored'])} lost={run['samples'] - int(faulty['scored'])} "
        f"duplicated={run['duplicated']} requests={run['requests']} questions={len(replies)} "
        f"replies={sum(replies.values())} wall_s={run['wall']:.2f} fault_free_wall_s={clean_run['wall']:.2f} "
        f"metrics_equal={faulty == clean}"
    )


if __name__ == "__main__":
    main()
