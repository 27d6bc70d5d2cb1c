"""A fixture shaped like the paper's published ``src/data/forecasts``: several forecasters, each with ground-truth
runs on two question sets (``_20240501_20240815`` scraped, ``_20240701_20240831`` NewsAPI) and a tuple run built
from each set's questions (``_tuples_scraped``, ``_tuples_newsapi``), plus one run left as Git LFS pointers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

SPLITS = {"scraped": "20240501_20240815", "newsapi": "20240701_20240831"}
MODELS = ("gpt-4o-2024-08-06", "gpt-4o-mini-2024-07-18", "claude-3-5-sonnet-20240620", "llama-3.1-8B", "o1-mini")
LFS_RUN = "BasicForecaster_gpt-3.5-turbo_tuples_scraped"
LFS_POINTER = (
    "version https://git-lfs.github.com/spec/v1\n"
    "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 422770\n"
)


def _question(title: str, qid: str, resolution: bool | None = None, kind: str = "binary") -> dict:
    return {
        "id": qid,
        "title": title,
        "body": "Resolves YES if it happens in the window.",
        "resolution_date": "2024-08-15T00:00:00",
        "question_type": kind,
        "data_source": "synthetic_inst",
        "created_date": "2024-05-01T00:00:00",
        "url": None,
        "metadata": {},
        "resolution": resolution,
    }


def _line(fields: dict[str, tuple[dict, float]]) -> str:
    line = {name: {"question": q, "forecast": {"prob": p, "metadata": None}} for name, (q, p) in fields.items()}
    return json.dumps({"line": line}) + "\n"


def truth_name(model: str, split: str) -> str:
    return f"BasicForecaster_{model}_{SPLITS[split]}"


def tuples_name(model: str, split: str) -> str:
    return f"BasicForecaster_{model.replace('-', '_', 1)}_tuples_{split}"  # the paper spells them differently


def build(root: Path, n: int = 16, seed: int = 0) -> Path:
    """Write the fixture under ``root`` (the ``forecasts`` directory); forecasters worse at forecasting are
    also less consistent, so the correlations are positive."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    for k, model in enumerate(MODELS):
        noise = k / (len(MODELS) - 1)
        config = {"model": model, "preface": "You are a careful forecaster.", "examples": []}
        for split in SPLITS:
            titles = [f"Will the {split} event number {i} happen by August 2024?" for i in range(n)]
            outcomes = rng.random(n) < 0.5
            probs = np.clip(np.where(outcomes, 0.8, 0.2) + rng.normal(0, 0.05 + 0.3 * noise, n), 0.01, 0.99)
            gt = root / truth_name(model, split)
            gt.mkdir()
            with (gt / "ground_truth_results.jsonl").open("w") as fh:
                for i, title in enumerate(titles):
                    p, y = float(probs[i]), bool(outcomes[i])
                    q = _question(title, f"{split}-{i}", y)
                    row = {"question": q, "forecast": {"prob": p, "metadata": None}, "prob": p, "resolution": y}
                    fh.write(json.dumps(row | {"brier_score": (p - y) ** 2}) + "\n")
            summary = {"total_questions": n, "avg_brier_score": float(np.mean((probs - outcomes) ** 2))}
            summary |= {"forecaster": "BasicForecaster", "full_forecaster_config": config}
            (gt / "ground_truth_summary.json").write_text(json.dumps(summary))
            run = root / tuples_name(model, split)
            run.mkdir()
            (run / "config.jsonl").write_text(
                json.dumps({"forecaster_class": "BasicForecaster", "full_forecaster_config": config}) + "\n"
            )
            with (run / "NegChecker.jsonl").open("w") as fh:
                for i, title in enumerate(titles):
                    p = float(rng.uniform(0.1, 0.9))
                    not_p = float(np.clip(1 - p + rng.normal(0, 0.02 + 0.3 * noise), 0.01, 0.99))
                    fh.write(
                        _line(
                            {"P": (_question(title, f"t{i}"), p), "not_P": (_question(f"Not: {title}", f"n{i}"), not_p)}
                        )
                    )
            with (run / "CondChecker.jsonl").open("w") as fh:
                for i, title in enumerate(titles):
                    other = titles[(i + 1) % n]
                    a, b = float(rng.uniform(0.2, 0.8)), float(rng.uniform(0.2, 0.8))
                    both = float(np.clip(a * b + rng.normal(0, 0.02 + 0.2 * noise), 0.01, 0.99))
                    given = _question(f"Given that {title} {other}", f"g{i}", kind="conditional_binary")
                    fh.write(
                        _line(
                            {
                                "P": (_question(title, f"c{i}"), a),
                                "Q_given_P": (given, b),
                                "P_and_Q": (_question(f"{title} And {other}", f"a{i}"), both),
                            }
                        )
                    )
    lfs = root / LFS_RUN
    lfs.mkdir()
    (lfs / "NegChecker.jsonl").write_text(LFS_POINTER)
    return root
