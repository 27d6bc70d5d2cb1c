"""Report speed and size: ``python benchmarks/bench_report.py [--runs 10] [--tuples 10000]``.

Builds ``--runs`` scored directories (as ``cc score`` writes them) of ``--tuples`` tuples each, spread
over the builtin checks, with the bundled benchmark's questions and noisy coherent forecasts (untimed), then
times ``make_report`` on all of them and on the bundled sample, and prints

    <case> report_s=<s> report_mb=<MB> read_s|score_s=<s> ratio=<report_s / reference>

The reference, measured in the same run since the machine may be shared, is read_s for the large case
(only reading every line of the same files as JSON: what any report must at least do) and score_s for the
sample (``cc score``'s scoring of the same files, which the report does too, since the sample holds
forecasts without our statistics); the rest is drawing figures and writing the page. Targets: report_s < 30
and report_mb < 10 for 10 runs x 10,000 tuples.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
from smoke import parse_args

from consistency.checks import all_checks
from consistency.datasets import benchmark_dir, sample_dir
from consistency.evaluation.scoring import score_path, write_report
from consistency.jsonl import iter_json_lines
from consistency.report import make_report


def logit(p: np.ndarray) -> np.ndarray:
    return np.log(p / (1 - p))


def make_forecaster(root: Path, k: int, per_check: int, rng: np.random.Generator) -> Path:
    """A directory of ``<Checker>.jsonl`` forecasts (the bundled benchmark's tuples, new probabilities), then scored.

    The questions come from the bundled benchmark, which has every builtin check (the sample has only
    the paper's ten: no MONOTONE)."""
    raw = root / f"raw_{k}"
    raw.mkdir()
    noise = 0.1 + 0.15 * k
    for check in all_checks():
        source = benchmark_dir() / "tuples" / f"{check.class_name}.jsonl"
        templates = [obj for _, obj in iter_json_lines(source) if isinstance(obj, dict)]
        coherent = check.coherent_sample(per_check, rng).clip(0.01, 0.99)
        probs = 1 / (1 + np.exp(-(logit(coherent) + rng.normal(0, noise, coherent.shape))))
        with (raw / source.name).open("w", encoding="utf-8") as fh:
            for i in range(per_check):
                tup = templates[i % len(templates)]
                line = {
                    name: {"question": tup[name], "forecast": {"prob": round(float(probs[i, j]), 3)}}
                    for j, name in enumerate(check.field_names)
                }
                fh.write(json.dumps({"line": line}) + "\n")
    out = root / f"forecaster_{k}"
    write_report(score_path(raw), out)
    return out


def read_floor(paths: list[Path]) -> float:
    start = time.perf_counter()
    for path in paths:
        for file in sorted(path.glob("*.jsonl")):
            for _ in iter_json_lines(file):
                pass
    return time.perf_counter() - start


def score_floor(paths: list[Path]) -> float:
    start = time.perf_counter()
    for path in paths:
        score_path(path)
    return time.perf_counter() - start


def measure(name: str, paths: list[Path], out: Path, reference=read_floor, label: str = "read_s") -> None:
    start = time.perf_counter()
    report = make_report([str(p) for p in paths], out)
    report_s = time.perf_counter() - start
    ref_s = reference(paths)
    print(
        f"{name} report_s={report_s:.2f} report_mb={report.size / 1e6:.2f} {label}={ref_s:.2f} "
        f"ratio={report_s / ref_s:.1f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--tuples", type=int, default=10_000, help="tuples per run (spread over the builtin checks)")
    args = parse_args(parser, {"runs": 2, "tuples": 220})
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        per_check = args.tuples // len(all_checks())
        build = time.perf_counter()
        runs = [make_forecaster(root, k, per_check, rng) for k in range(args.runs)]
        print(f"built {args.runs} runs x {per_check * len(all_checks())} tuples in {time.perf_counter() - build:.1f} s")
        measure("bundled_sample", [sample_dir() / "forecasts"], root / "sample.html", score_floor, "score_s")
        measure(f"{args.runs}_runs_x_{per_check * len(all_checks())}_tuples", runs, root / "large.html")


if __name__ == "__main__":
    main()
