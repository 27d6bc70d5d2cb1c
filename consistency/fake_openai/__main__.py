"""``python -m consistency.fake_openai [--rule NAME] [--host H] [--port N] [--latency S] [--fault KIND=RATE ...]``:
serve a forecast rule (``RULES`` of :mod:`.rules`), optionally with random faults, and the Files + Batch API.

Handy to point a real client (or ``cc``) at a deterministic model by hand, or at a flaky one
(``--fault 429=0.05 --fault hang=0.05``) to see how it copes; stops on Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib

from consistency.fake_openai.batches import BatchBehaviour
from consistency.fake_openai.replies import FAULT_KINDS, random_faults
from consistency.fake_openai.rules import RULES
from consistency.fake_openai.server import ScriptedServer


def _fault(text: str) -> tuple[str, float]:
    kind, _, rate = text.partition("=")
    if kind not in FAULT_KINDS:
        raise argparse.ArgumentTypeError(f"unknown fault {kind!r}; choose from {', '.join(FAULT_KINDS)}")
    try:
        value = float(rate) if rate else 0.05
    except ValueError:
        raise argparse.ArgumentTypeError(f"--fault {text}: the rate must be a number (e.g. {kind}=0.05)") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"--fault {text}: the rate must be in [0, 1]")
    return kind, value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m consistency.fake_openai",
        description="Serve the scripted OpenAI-compatible server until Ctrl-C.",
    )
    parser.add_argument(
        "--rule",
        choices=sorted(RULES),
        default="default",
        help="what the server answers: default (a probability per question text), demo (answers that make "
        "every pipeline produce sensible output: news, synth, fill, generate, resolve), coherent (a perfectly coherent "
        "forecaster on template tuples), constant (0.5 everywhere), planted (coherent except on negations of "
        "long titles)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on; 0 picks a free one (default: 8000)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added before every answer (default: 0)")
    parser.add_argument(
        "--fault",
        type=_fault,
        action="append",
        default=[],
        metavar="KIND[=RATE]",
        help=f"answer this share of requests with a fault (repeatable); KIND is one of {', '.join(FAULT_KINDS)} "
        "(RATE defaults to 0.05); a retried request gets a fresh draw",
    )
    parser.add_argument("--fault-seed", type=int, default=0, help="seed of the fault draws (default: 0)")
    parser.add_argument("--hang-seconds", type=float, default=30.0, help="how long a 'hang' fault waits (default: 30)")
    parser.add_argument(
        "--retry-after", type=float, default=0.1, help="the Retry-After of a '429' fault, in seconds (default: 0.1)"
    )
    batch = parser.add_argument_group("Batch API")
    batch.add_argument("--batch-delay", type=float, default=0.0, help="seconds a batch stays in progress (default: 0)")
    batch.add_argument(
        "--expire-batches", type=int, default=0, metavar="N", help="expire the next N batches (half their lines run)"
    )
    batch.add_argument("--fail-uploads", type=int, default=0, metavar="N", help="refuse the next N file uploads")
    batch.add_argument(
        "--upload-failure-status", type=int, default=500, help="HTTP status of a refused upload (default: 500)"
    )
    batch.add_argument(
        "--batch-max-requests", type=int, default=50_000, help="most lines a batch file may hold (default: 50000)"
    )
    batch.add_argument(
        "--batch-max-bytes", type=int, default=200 * 1024 * 1024, help="largest batch file in bytes (default: 200 MiB)"
    )
    return parser


def main(argv: list[str] | None = None) -> None:
    parser = _parser()
    args = parser.parse_args(argv)
    behaviour = BatchBehaviour(
        processing_delay=args.batch_delay,
        expire_next=args.expire_batches,
        fail_next_uploads=args.fail_uploads,
        upload_failure_status=args.upload_failure_status,
        max_requests=args.batch_max_requests,
        max_bytes=args.batch_max_bytes,
    )
    rates: dict[str, float] = {}
    for kind, rate in args.fault:
        rates[kind] = rates.get(kind, 0.0) + rate
    if sum(rates.values()) > 1:
        parser.error("the --fault rates add up to more than 1")
    rule = RULES[args.rule]()
    if rates:
        rule = random_faults(
            rule, rates, seed=args.fault_seed, hang_seconds=args.hang_seconds, retry_after=args.retry_after
        )

    async def serve() -> None:
        server = ScriptedServer(rule, latency=args.latency, host=args.host, port=args.port, batch=behaviour)
        async with server:
            faults = ", ".join(f"{k} {v:.0%}" for k, v in rates.items()) or "none"
            knobs = {
                "delay": f"{args.batch_delay:g}s" if args.batch_delay else "",
                "expire": str(args.expire_batches) if args.expire_batches else "",
                "failed uploads": str(args.fail_uploads) if args.fail_uploads else "",
            }
            batches = ", ".join(f"{k} {v}" for k, v in knobs.items() if v)
            if batches:
                faults += f"  batches: {batches}"
            print(
                f"serving on {server.base_url}  (model spec: {server.model_spec()})  rule: {args.rule}"
                f"  faults: {faults}  Ctrl-C to stop",
                flush=True,
            )
            await asyncio.Event().wait()  # until cancelled by Ctrl-C

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())


if __name__ == "__main__":
    main()
