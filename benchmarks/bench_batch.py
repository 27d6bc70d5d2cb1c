"""Batch mode at scale against the scripted server: ``python benchmarks/bench_batch.py``.

Sends 20,000 structured questions through ``LLMSettings(batch=True)``: the whole client path
(instructor, cache lookups and writes, the batch collector, upload, polling, download, parsing,
validation, cost, transcript-free) against ``python -m consistency.testing`` in its own process.
Prints

    requests_per_s=<n>   questions prepared and parsed per second of client CPU (target >= 2,000)
    upload_mb=<n>        bytes of batch files uploaded
    peak_rss_mb=<n>      peak resident memory of this (client) process (target < 1,024)
    http_requests=<n>    HTTP requests the client made, and batch files (target: O(files), not O(questions))

and, as references measured in the same run, the bare cost of json-encoding the same request
bodies (``json_encode_per_s``) and of the bare ``openai`` client making the same requests one by one
(``openai_only_per_s``), with the ratio of our rate to each: the machine is shared, so the ratios
are what to compare across runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import tempfile
import time
from pathlib import Path

from bench_llm import Answer, messages, scripted_server
from smoke import parse_args

from consistency.llm import LLM, LLMSettings
from consistency.llm.batch import read_batches


async def run(spec: str, n: int, settings: LLMSettings, journal: Path) -> tuple[float, float, LLM]:
    async with LLM(settings, batches=journal) as llm:
        await llm.endpoint(spec)  # one-time set-up (clients, lazy imports) is not per-request work
        wall, cpu = time.perf_counter(), time.process_time()
        results = await asyncio.gather(*(llm.structured(spec, messages(i), Answer) for i in range(n)))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    failed = [r for r in results if not r.ok]
    if failed:
        raise SystemExit(f"{len(failed)} of {n} failed: {failed[0].error}")
    return wall, cpu, llm


def json_reference(spec: str, n: int) -> float:
    """Per second: json-encoding the request bodies the batch files hold (model, messages, tool schema)."""
    model = spec.split("::")[1]
    tools = [{"type": "function", "function": {"name": "Answer", "parameters": Answer.model_json_schema()}}]
    start = time.process_time()
    for i in range(n):
        body = {"model": model, "messages": messages(i), "tools": tools, "tool_choice": "auto", "temperature": 0.0}
        json.dumps({"custom_id": str(i), "method": "POST", "url": "/v1/chat/completions", "body": body})
    return n / (time.process_time() - start)


def openai_reference(spec: str, n: int) -> float:
    """Per second of CPU: the bare ``openai`` client building the same tool-call requests and parsing a
    canned completion from an in-process transport (no instructor, cache, batching or network): what
    a client that sent every request through ``chat.completions.create`` would spend at least."""
    import httpx2
    import openai

    base_url, model = spec.split("::")
    tools = [{"type": "function", "function": {"name": "Answer", "parameters": Answer.model_json_schema()}}]
    call = {"id": "c", "type": "function", "function": {"name": "Answer", "arguments": '{"reasoning":"r","prob":0.5}'}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    completion = {
        "id": "x", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
    }  # fmt: skip
    body = json.dumps(completion).encode()

    class Canned(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            await request.aread()
            return httpx2.Response(200, headers={"content-type": "application/json"}, content=body, request=request)

    async def go() -> float:
        client = openai.AsyncOpenAI(
            base_url=base_url, api_key="none", max_retries=0, http_client=httpx2.AsyncClient(transport=Canned())
        )
        choice = {"type": "function", "function": {"name": "Answer"}}
        await client.chat.completions.create(model=model, messages=messages(-1), tools=tools, tool_choice=choice)
        start = time.process_time()
        await asyncio.gather(
            *(
                client.chat.completions.create(model=model, messages=messages(i), tools=tools, tool_choice=choice)
                for i in range(n)
            )
        )
        elapsed = time.process_time() - start
        await client.close()
        return n / elapsed

    return asyncio.run(go())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=20_000)
    parser.add_argument("--max-requests", type=int, default=50_000, help="lines per batch file")
    args = parse_args(parser, {"questions": 200})
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CC_CACHE_DIR"] = tmp
        journal = Path(tmp) / "batches.jsonl"
        with scripted_server(0.0) as spec:
            settings = LLMSettings(
                batch=True, batch_idle=0.5, batch_poll=0.2, batch_poll_max=1.0, batch_max_requests=args.max_requests
            )
            wall, cpu, llm = asyncio.run(run(spec, args.questions, settings, journal))
        batches = list(read_batches(journal).values())
        upload = sum(b["bytes"] for b in batches)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        rate = args.questions / cpu
        reference = json_reference(spec, args.questions)
        p = llm.batch_progress
        print(
            f"requests_per_s={rate:.0f} (client CPU {cpu:.1f} s; wall {wall:.1f} s incl. the server's work: "
            f"{args.questions / wall:.0f}/s) target>=2000"
        )
        print(f"upload_mb={upload / 1e6:.1f} batch_files={len(batches)} answered={p.completed} failed={p.failed}")
        print(f"peak_rss_mb={peak:.0f} target<1024")
        print(f"http_requests={p.http_requests} batch_files={len(batches)} questions={args.questions}")
        print(f"json_encode_per_s={reference:.0f} (reference: encoding the bodies alone) ratio={rate / reference:.3f}")
        bare = openai_reference(spec, args.questions)
        print(
            f"openai_only_per_s={bare:.0f} (reference: the bare openai client building the requests and parsing "
            f"canned answers in-process) ratio={rate / bare:.3f}"
        )


if __name__ == "__main__":
    main()
