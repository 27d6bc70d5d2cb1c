"""ForecastBench import + leaderboard speed: ``python benchmarks/bench_forecastbench.py [--smoke]``.

Writes 20 rounds of ForecastBench files (question set + resolution set, two weeks apart) in the shape of
its published rounds (measured from ``../shared/reference-data/forecastbench`` when it is there, else the
defaults of :class:`consistency.forecastbench.synthetic.Shape`, measured from the same files), and one
forecast set per round for each of 4 forecasters. Then times, on one core:

    import_s       reading every question and resolution set into questions (``cc questions import``'s work)
    forecasts_s    reading the 80 forecast sets by ForecastBench's rules
    leaderboard_s  ForecastBench's columns for the 4 forecasters and 3 baselines, 1999 bootstrap replicates

and prints ``total_s`` against the target of 10 s. ``--smoke`` does 2 rounds and 100 replicates.
"""

from __future__ import annotations

import os

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from datetime import date, timedelta  # noqa: E402
from pathlib import Path  # noqa: E402

from consistency.forecastbench import load  # noqa: E402
from consistency.forecastbench.forecasts import read_forecasts  # noqa: E402
from consistency.forecastbench.leaderboard import leaderboard  # noqa: E402
from consistency.forecastbench.synthetic import Shape, forecast_set, make_round, shape_of, write_round  # noqa: E402

TARGET_S = 10.0
REFERENCE = Path(
    os.environ.get("CC_REFERENCE_DATA") or Path(__file__).resolve().parents[2] / "shared" / "reference-data"
)
FORECASTERS = (("sharp", 0.3), ("fair", 0.7), ("rough", 1.2), ("noisy", 2.0))


class _Clock:
    """Wall and CPU seconds since the last lap (CPU time tells the work apart from a busy machine's waiting)."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def lap(self) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        out = (wall - self.wall, cpu - self.cpu)
        self.wall, self.cpu = wall, cpu
        return out


def reference_shape() -> tuple[Shape, str]:
    root = REFERENCE / "forecastbench"
    qpath = root / "question_sets" / "2025-10-26-llm.json"
    rpath = root / "resolution_sets" / "2025-10-26_resolution_set.json"
    if qpath.is_file() and rpath.is_file():
        shape = shape_of(json.loads(qpath.read_text()), json.loads(rpath.read_text()))
        return shape, "measured from ForecastBench's 2025-10-26 round"
    return Shape(), "the built-in shape (the reference files are absent)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="2 rounds, 100 replicates: seconds, for CI")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--replicates", type=int, default=1999)
    args = parser.parse_args()
    rounds, replicates = (2, 100) if args.smoke else (args.rounds, args.replicates)
    shape, where = reference_shape()
    dues = [date(2025, 3, 2) + timedelta(days=14 * i) for i in range(rounds)]
    as_of = dues[-1] + timedelta(days=60)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = []
        for due in dues:
            rnd = make_round(due, as_of, shape, seed=11)
            write_round(rnd, root / "datasets")
            for name, noise in FORECASTERS:
                path = root / "forecasts" / f"{due}.Bench.{name}.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(forecast_set(rnd, "Bench", name, noise=noise, seed=1)))
                files.append(path)
        clock = _Clock()
        questions = load([str(root / "datasets")]).imported.questions
        t_import = clock.lap()
        forecasts = [read_forecasts(path) for path in files]  # a model's rounds are one forecaster on the board
        t_forecasts = clock.lap()
        board = leaderboard(questions, forecasts, bootstrap=replicates, today=as_of)
        t_board = clock.lap()
    scored = sum(s.overall.n for s in board.standings)
    total = tuple(a + b + c for a, b, c in zip(t_import, t_forecasts, t_board, strict=True))
    print(f"shape: {where}")
    print(f"rounds={rounds} questions={len(questions)} forecast_sets={len(files)} forecasters={len(board.standings)} "
          f"scored_rows={scored} replicates={replicates}")  # fmt: skip
    for label, i in (("wall", 0), ("cpu", 1)):
        print(f"{label}: import_s={t_import[i]:.2f} forecasts_s={t_forecasts[i]:.2f} leaderboard_s={t_board[i]:.2f} "
              f"total_s={total[i]:.2f}")  # fmt: skip
    verdict = "met" if total[0] < TARGET_S else "NOT met"
    load_now = os.getloadavg()[0]
    print(f"target: total wall time < {TARGET_S:.0f} s for 20 rounds: {verdict} (load average {load_now:.2f})")
    best = board.standings[0]
    interval = f"[{best.overall.low:.1f}, {best.overall.high:.1f}]"
    print(f"best: {best.forecaster} overall index {best.overall.index:.1f} {interval}")


if __name__ == "__main__":
    main()
