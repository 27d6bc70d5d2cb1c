"""Scraper throughput against the fixture web server: ``python benchmarks/bench_scrape.py``.

Scrapes 10,000 Metaculus-shaped questions (100 pages of 100) from the fixture server with 50 ms
of latency per page, and prints
    pages_per_s=<n> questions_per_s=<n> bound_s=<pages x latency> efficiency=<bound/elapsed>
(target efficiency >= 0.8), where the bound is the pages' latency end to end, as one request at a
time would take them; the scraper keeps ``--concurrency`` pages in flight once it knows the page
size, so ``inflight_bound_s`` (the bound with that many in flight) and ``cpu_floor_s`` (the same run
re-parsed from the cache, no network) are printed too. Then
    reparse_from_cache_s=<s>
for the same run re-parsed offline from the page cache, and the process's peak memory. The same
figures follow for a typed mix (``[typed]``: a third of the questions multiple-choice, a third numeric
with a 201-point community CDF in the listing). ``--smoke``: 300 questions at 10 ms a page, 50 a page (seconds).

The server runs in its own process so its work does not share our interpreter lock. For reference,
the same 100 pages are fetched with the bare ``httpx2`` client (no retries, limits, cache or parsing):
``bare_client_s`` and ``efficiency_vs_bare`` tell our overhead apart from the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import httpx2
from smoke import parse_args

from consistency.fake_openai.web import TOKEN
from consistency.sources import HttpSettings, Metaculus, ScrapeOptions, scrape
from consistency.sources.http import full_url


def start_server(n: int, latency: float, page_cap: int, typed: bool) -> tuple[subprocess.Popen[str], str]:
    argv = [sys.executable, "-m", "consistency.fake_openai.web", "--bulk", str(n), "--latency", str(latency),
            "--page-cap", str(page_cap), *(["--typed"] if typed else [])]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline() if proc.stdout else ""
    if not line.startswith("serving on "):
        proc.kill()
        raise SystemExit(f"fixture server did not start: {line!r}")
    return proc, line.split()[-1]


async def bare(base: str, pages: int, size: int) -> float:
    source, query = Metaculus(), Metaculus().queries(ScrapeOptions(status="all"))[0]
    async with httpx2.AsyncClient(headers={"Authorization": f"Token {TOKEN}"}, timeout=30) as client:
        start = time.perf_counter()
        for i in range(pages):
            url, params = source.page(f"{base}/metaculus/api", query, i * size)
            (await client.get(full_url(url, params))).raise_for_status()
        return time.perf_counter() - start


def measure(args: argparse.Namespace, typed: bool) -> None:
    """Scrape the fixture's bulk questions live, then again from the page cache, and print the figures."""
    proc, root = start_server(args.n, args.latency, args.page_size, typed)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tmp_path = Path(tmp)
            opts = ScrapeOptions(status="all", min_days=0)
            now = datetime.now(UTC)

            def once(out: str, http: HttpSettings):
                return asyncio.run(scrape(Metaculus(), tmp_path / out, opts, base_url=f"{root}/metaculus/api",
                                          http=http, cache_root=tmp_path / "cache", now=now))  # fmt: skip

            start = time.perf_counter()
            report = once("live.jsonl", HttpSettings(requests_per_minute=None, concurrency=args.concurrency))
            elapsed = time.perf_counter() - start
            start = time.perf_counter()
            again = once("offline.jsonl", HttpSettings(offline=True))
            reparse = time.perf_counter() - start
            pages = report.pages
            reference = asyncio.run(bare(root, pages, args.page_size))
            same = (tmp_path / "live.jsonl").read_bytes() == (tmp_path / "offline.jsonl").read_bytes()
            kinds = Counter(json.loads(line)["question_type"] for line in (tmp_path / "live.jsonl").open())
    finally:
        proc.terminate()
        proc.wait(10)
    if report.written != args.n or again.written != args.n or not same:
        raise SystemExit(f"wrote {report.written}, then {again.written} (same lines: {same}); expected {args.n}")
    bound = pages * args.latency
    print(f"[{'typed' if typed else 'binary'}] questions={report.written} pages={pages} latency_s={args.latency} "
          f"types={dict(sorted(kinds.items()))}")  # fmt: skip
    print(f"pages_per_s={pages / elapsed:.1f} questions_per_s={report.written / elapsed:.0f} "
          f"elapsed_s={elapsed:.2f} bound_s={bound:.2f} efficiency={bound / elapsed:.3f} (target >= 0.8)")  # fmt: skip
    inflight = bound / args.concurrency
    print(f"concurrency={args.concurrency} inflight_bound_s={inflight:.2f} cpu_floor_s={reparse:.2f} "
          f"efficiency_vs_max_floor={max(inflight, reparse) / elapsed:.3f}")  # fmt: skip
    print(f"bare_client_sequential_s={reference:.2f} speedup_vs_bare={reference / elapsed:.3f}")
    print(f"reparse_from_cache_s={reparse:.2f} ({again.cache_hits} cached pages, {again.requests} requests)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10_000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--page-size", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=4, help="pages in flight (the scraper's default)")
    args = parse_args(parser, {"n": 300, "latency": 0.01, "page_size": 50})
    os.environ["METACULUS_TOKEN"] = TOKEN
    measure(args, typed=False)
    measure(args, typed=True)
    print(f"memory_peak_mb={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}")


if __name__ == "__main__":
    main()
