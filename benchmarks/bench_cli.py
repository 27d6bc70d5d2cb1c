"""CLI start-up and corpus scoring: ``python benchmarks/bench_cli.py [--runs N] [--dirs N]``.

Prints, per command, ``startup_s`` (median wall time of N fresh ``cc`` processes; target < 0.4 s on 2
cores) beside the same for a one-option Typer app (the floor any Typer CLI pays: interpreter, typer,
its pydantic-based parameter handling and rich help) and the ratio; then ``score_corpus_s``: one
``cc score`` call over 30 copies of the paper's published forecast directory (2,000 tuples each;
target < 15 s), beside the reference of scoring and writing one copy in-process times the number of
copies (what the call costs without start-up or per-directory overhead). The machine may be shared:
the load average is printed, and the ratios are what to compare across runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from smoke import parse_args

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = (
    Path(os.environ.get("CC_REFERENCE_DATA") or ROOT.parent / "shared" / "reference-data")
    / "forecasts"
    / "BasicForecaster_gpt4o_mini_2024-07-18_tuples_scraped"
)
CC = [sys.executable, "-m", "consistency"]
TYPER_FLOOR = (
    "import typer\n"
    "app = typer.Typer()\n"
    "@app.callback()\n"
    "def root(verbose: bool = False):\n    pass\n"
    "@app.command()\n"
    "def version():\n    print('x')\n"
    "@app.command()\n"
    "def other():\n    pass\n"
    "app()\n"
)


def wall(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, env={**os.environ, "COLUMNS": "100"})
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def corpus(root: Path, copies: int, lines_per_check: int) -> Path:
    """``copies`` directories of the published size: the published one, or (without it) the bundled sample
    repeated to about ``lines_per_check`` lines per check."""
    out = root / "corpus"
    out.mkdir()
    if PUBLISHED.is_dir():
        for i in range(copies):
            shutil.copytree(PUBLISHED, out / f"forecaster_{i:02d}", ignore=shutil.ignore_patterns("*.json"))
        return out
    sample = ROOT / "consistency" / "datasets" / "sample" / "forecasts"
    print(f"note: {PUBLISHED} not found; using the bundled sample repeated to ~{lines_per_check} lines per check")
    for i in range(copies):
        target = out / f"forecaster_{i:02d}"
        target.mkdir()
        for path in sample.glob("*.jsonl"):
            lines = path.read_text().splitlines()
            (target / path.name).write_text("\n".join(lines * max(1, lines_per_check // len(lines))) + "\n")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="processes per start-up figure (median)")
    parser.add_argument("--dirs", type=int, default=30, help="run directories in the corpus")
    parser.add_argument("--lines", type=int, default=200, help="lines per check when the sample stands in")
    args = parse_args(parser, {"runs": 1, "dirs": 2, "lines": 20})
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    floor = wall([sys.executable, "-c", TYPER_FLOOR, "version"], args.runs)
    print(f"typer_floor startup_s={floor:.3f}")
    for command in (["version"], ["checks"], ["score", "--help"]):
        t = wall([*CC, *command], args.runs)
        ok = "met" if t < 0.4 else "NOT met"
        print(f"cc {' '.join(command)}: startup_s={t:.3f} ratio_to_typer_floor={t / floor:.2f} (target < 0.4 s: {ok})")

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data = corpus(root, args.dirs, args.lines)
        one = next(data.iterdir())
        code = (
            "import time, sys\n"
            "from consistency.evaluation.scoring import score_path, write_report\n"
            f"score_path({str(one)!r})\n"  # warm-up: imports and caches
            "t = time.perf_counter()\n"
            f"write_report(score_path({str(one)!r}), {str(root / 'one')!r})\n"
            "print(time.perf_counter() - t)\n"
        )
        per_dir = float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout)
        start = time.perf_counter()
        subprocess.run([*CC, "score", str(data), "-o", str(root / "out"), "--json"], check=True, capture_output=True)
        took = time.perf_counter() - start
        scored = sum(1 for _ in (root / "out").glob("*/summary.json"))
    reference = per_dir * args.dirs
    ok = "met" if took < 15 else "NOT met"
    print(
        f"score_corpus_s={took:.2f} dirs={scored} per_dir_in_process_s={per_dir:.3f} "
        f"reference_s={reference:.2f} ratio={took / reference:.2f} (target < 15 s: {ok})"
    )


if __name__ == "__main__":
    main()
