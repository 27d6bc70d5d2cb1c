"""`cc diff` on two runs of 100,000 tuples each: ``python benchmarks/bench_diff.py``.

Writes two run directories (the 10 built-in checks, 10,000 scored tuples each, questions with a
title and a short body, run B differing from A on a tenth of the tuples), then times the real
command, ``cc diff A B --json`` in a fresh process (start-up, reading 200,000 lines, the paired
bootstrap with 1,000 resamples per check and overall, both tests), and the library call alone
(median of three). Target: the command under 10 s. Prints

    tuples_per_run=<n> cc_diff_s=<t> library_s=<t> target_s=10 ok=<bool> load=<1-min load average>
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from smoke import parse_args

from consistency.checks import all_checks
from consistency.evaluation.diff import diff_runs
from consistency.metrics.scoring import score_forecasts


def write_run(root: Path, probs: dict[str, np.ndarray], fingerprint: str) -> None:
    root.mkdir(parents=True)
    (root / "run.json").write_text(json.dumps({"kind": "consistency", "benchmark": {"fingerprint": fingerprint}}))
    for check in all_checks():
        p = probs[check.class_name]
        scores = score_forecasts(check, p)
        with open(root / f"{check.class_name}.jsonl", "w", encoding="utf-8") as fh:
            for i in range(len(p)):
                line = {
                    name: {
                        "question": {
                            "id": f"{check.class_name}-{i}-{name}",
                            "title": f"Will event {i} of {check.name} happen ({name})?",
                            "body": "Resolves YES if the event happens by the end of 2030, and NO otherwise.",
                        },
                        "forecast": {"prob": float(p[i, k])},
                    }
                    for k, name in enumerate(check.field_names)
                }
                fh.write(json.dumps({"line": line, "violation_data": scores.violation_data(i)}) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tuples", type=int, default=100_000, help="Tuples per run (split over the checks).")
    args = parse_args(parser, {"tuples": 2000})
    checks = all_checks()
    per_check = args.tuples // len(checks)
    rng = np.random.default_rng(0)
    a = {c.class_name: np.round(rng.random((per_check, c.n_fields)), 2) for c in checks}
    b = {}
    for name, p in a.items():
        q = p.copy()
        moved = rng.random(len(q)) < 0.1
        q[moved] = np.round(rng.random((int(moved.sum()), q.shape[1])), 2)
        b[name] = q
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_run(root / "a", a, "same")
        write_run(root / "b", b, "same")
        cc = Path(sys.executable).with_name("cc")
        command = [str(cc), "diff", str(root / "a"), str(root / "b"), "--json"]
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=os.environ | {"COLUMNS": "200"})
        command_s = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"cc diff failed: {done.stderr}")
        n = json.loads(done.stdout)["overall"]["n"]
        times = []
        for _ in range(3):
            start = time.perf_counter()
            diff_runs(root / "a", root / "b")
            times.append(time.perf_counter() - start)
    load = os.getloadavg()[0]
    print(
        f"tuples_per_run={n} cc_diff_s={command_s:.2f} library_s={statistics.median(times):.2f} "
        f"target_s=10 ok={command_s < 10} load={load:.2f}"
    )


if __name__ == "__main__":
    main()
