"""Regenerate ``tables/``: ``python -m consistency.datasets.make_tables [--seed N]``.

Small synthetic data for the ranking commands (``cc leaderboard``, ``compare``, ``proxy``,
``correlate``), so they can be tried without first making ground-truth runs. Six forecasters of
growing noise (``sharp`` best, ``coin`` worst) forecast the same 80 questions in two batches:

- ``tables/forecasts.csv``: the long table ``forecaster,question_id,prob,resolution,batch``. Each
  question has a true probability; its outcome is drawn from it, and each forecaster reports it with
  Gaussian noise in log-odds (sd from 0.3 to 2.5) and skips about one question in ten.
- ``tables/runs/<forecaster>/<Checker>.jsonl``: the same forecasters' forecasts on the bundled
  sample's NEGATION, PARAPHRASE, AND and COND tuples (coherent probabilities plus the same noise),
  in the paper's forecast-file layout, for ``cc score`` and then ``cc correlate``.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

from ..checks import get_check
from ..jsonl import iter_json_lines, write_jsonl
from . import sample_dir, tables_dir

FORECASTERS = {"sharp": 0.3, "steady": 0.6, "fair": 0.9, "noisy": 1.3, "erratic": 1.8, "coin": 2.5}
BATCHES = ("2024Q1", "2024Q2")
QUESTIONS_PER_BATCH = 40
CHECKS = ("NegChecker", "ParaphraseChecker", "AndChecker", "CondChecker")


def _noisy(p: np.ndarray, sd: float, rng: np.random.Generator) -> np.ndarray:
    clean = np.clip(p, 0.02, 0.98)
    logit = np.log(clean / (1 - clean)) + rng.normal(0.0, sd, clean.shape)
    return np.round(1 / (1 + np.exp(-logit)), 2).clip(0.01, 0.99)


def make_long_table(path: Path, rng: np.random.Generator) -> int:
    rows = []
    for batch in BATCHES:
        truth = rng.beta(0.7, 0.7, QUESTIONS_PER_BATCH)
        outcome = rng.random(QUESTIONS_PER_BATCH) < truth
        for name, sd in FORECASTERS.items():
            probs = _noisy(truth, sd, rng)
            answered = rng.random(QUESTIONS_PER_BATCH) >= 0.1
            for i in np.flatnonzero(answered):
                qid = f"{batch.lower()}-q{i + 1:02d}"
                rows.append([name, qid, f"{probs[i]:.2f}", "yes" if outcome[i] else "no", batch])
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["forecaster", "question_id", "prob", "resolution", "batch"])
        writer.writerows(rows)
    return len(rows)


def _short(question: dict) -> dict:
    """The question with its body cut to the first sentence, to keep the bundled files small."""
    body = question.get("body") or ""
    return {**question, "body": body.split(". ")[0].rstrip(".") + "." if body else ""}


def make_runs(out_dir: Path, rng: np.random.Generator) -> int:
    count = 0
    tuples = sample_dir() / "tuples"
    for name, sd in FORECASTERS.items():
        for stem in CHECKS:
            check = get_check(stem)
            rows = [obj for _, obj in iter_json_lines(tuples / f"{stem}.jsonl")]
            probs = _noisy(check.coherent_sample(len(rows), rng), sd / 2, rng)
            lines = [
                {
                    "line": {
                        field: {"question": _short(row[field]), "forecast": {"prob": float(p)}}
                        for field, p in zip(check.field_names, ps, strict=True)
                    }
                }
                for row, ps in zip(rows, probs, strict=True)
            ]
            count += write_jsonl(out_dir / name / f"{stem}.jsonl", lines)
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    root = tables_dir()
    rows = make_long_table(root / "forecasts.csv", rng)
    lines = make_runs(root / "runs", rng)
    print(f"wrote {rows} rows to {root / 'forecasts.csv'} and {lines} forecast lines to {root / 'runs'}")


if __name__ == "__main__":
    main()
