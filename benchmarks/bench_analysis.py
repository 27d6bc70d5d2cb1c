"""DataFrames of results: ``python benchmarks/bench_analysis.py`` (``--smoke``: seconds, what CI runs).

Two figures. First, building :func:`consistency.analysis.tuples_df`'s frame for 1,000,000 tuple rows from
columns already read (:func:`consistency.analysis.tuple_frame`: 10 checks x 100,000 rows, the run and check
as categories, the tuple keys as strings), its time and the process's peak memory; target under 5 s and
under 2 GB. Second, the whole path from files, ``tuples_df`` on a run directory written here (every check,
``--file-rows`` scored lines each, one run) so the reading's rate in rows per second is printed beside it.
Prints

    rows=<n> frame_s=<t> cpu_s=<t> peak_mb=<m> target_s=5 target_mb=2048 ok=<bool>
    polars: rows=<n> frame_s=<t>        (the same frame with backend="polars", when polars is installed)
    file_rows=<n> tuples_df_s=<t> rows_per_s=<r> load=<1-min load average>
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
from smoke import parse_args

from consistency.analysis import tuple_frame, tuples_df
from consistency.checks import all_checks
from consistency.metrics.scoring import METRICS, score_forecasts
from consistency.store.lines import TupleColumns


def columns(check, n: int, rng: np.random.Generator) -> tuple[TupleColumns, dict, dict]:
    """``n`` rows of ``check`` as the store reads them, with random forecasts scored for real."""
    probs = rng.uniform(0.02, 0.98, size=(n, check.n_fields))
    scores = score_forecasts(check, probs)
    ids = [tuple(f"q{i}-{j}" for j in range(check.n_fields)) for i in range(n)]
    values = {m: scores.values(m) for m in METRICS}
    violated = {m: values[m] > scores.params.threshold(m) for m in METRICS}
    passed = {m: ~violated[m] for m in METRICS}
    col = TupleColumns(check, Path("x"), np.arange(1, n + 1), probs, ids, values, passed)
    return col, values, violated


def write_run(root: Path, rows: int, rng: np.random.Generator) -> None:
    """A scored run directory: every check's file with ``rows`` lines in the format cc evaluate writes."""
    root.mkdir(parents=True)
    (root / "run.json").write_text(json.dumps({"kind": "consistency", "status": "complete"}))
    for check in all_checks():
        probs = rng.uniform(0.02, 0.98, size=(rows, check.n_fields))
        scores = score_forecasts(check, probs)
        with open(root / f"{check.class_name}.jsonl", "w", encoding="utf-8") as fh:
            for i in range(rows):
                line = {
                    f: {"question": {"id": str(uuid.UUID(int=int(rng.integers(1 << 62)))), "title": f"Q {i} {f}"},
                        "forecast": {"prob": float(p)}}
                    for f, p in zip(check.field_names, probs[i], strict=True)
                }  # fmt: skip
                fh.write(json.dumps({"line": line, "violation_data": scores.violation_data(i)}) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="tuple rows of the frame (split over 10 checks)")
    parser.add_argument("--file-rows", type=int, default=10_000, help="lines per check of the run read from files")
    args = parse_args(parser, {"rows": 20_000, "file_rows": 200})
    rng = np.random.default_rng(0)
    checks = all_checks()[:10]
    per = args.rows // len(checks)
    sets = [("run", "forecaster", *columns(c, per, rng)) for c in checks]
    start, cpu = time.perf_counter(), time.process_time()
    frame = tuple_frame(sets)
    frame_s, frame_cpu = time.perf_counter() - start, time.process_time() - cpu
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ok = frame_s < 5 and peak_mb < 2048 and len(frame) == per * len(checks)
    print(f"rows={len(frame)} frame_s={frame_s:.2f} cpu_s={frame_cpu:.2f} peak_mb={peak_mb:.0f} target_s=5 "
          f"target_mb=2048 ok={ok}")  # fmt: skip
    del frame
    if importlib.util.find_spec("polars") is not None:  # the analysis-polars extra: the same frame in polars
        import polars  # noqa: F401  (imported before the clock starts: its import is not the frame's cost)

        start = time.perf_counter()
        frame = tuple_frame(sets, backend="polars")
        print(f"polars: rows={len(frame)} frame_s={time.perf_counter() - start:.2f}")
        del frame
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        write_run(run, args.file_rows, rng)
        start = time.perf_counter()
        df = tuples_df(run)
        took = time.perf_counter() - start
    print(f"file_rows={len(df)} tuples_df_s={took:.2f} rows_per_s={len(df) / took:.0f} load={os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
