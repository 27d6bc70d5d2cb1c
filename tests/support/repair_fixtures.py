"""Tuples over shared, resolved questions, in the paper's file layouts: the inputs of the repair tests.

Eight base events with drawn outcomes; NEGATION, PARAPHRASE, AND and OR tuples over them, so base
questions are shared between tuples and checks and every resolution fits a possible world.
``forecasts`` writes the paper's forecast files instead of tuple files: each base question gets a fresh
id in every tuple (as the paper's scraped files do) and a forecast that varies a little between them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

N_EVENTS = 8


def _question(title: str, resolution: bool | None, qid: str) -> dict:
    return {
        "id": qid,
        "title": title,
        "body": f"Resolves YES if the statement in the title holds on 2025-06-30. ({title})",
        "resolution_date": "2025-06-30T00:00:00Z",
        "question_type": "binary",
        "data_source": "synthetic_inst",
        "created_date": "2024-05-01T00:00:00Z",
        "url": None,
        "metadata": {},
        "resolution": resolution,
    }


def write_tuples(root: Path, *, forecasts: bool = False, seed: int = 0) -> Path:
    """``root`` holding NegChecker/ParaphraseChecker/AndChecker/OrChecker.jsonl (tuples, or forecast lines)."""
    rng = np.random.default_rng(seed)
    truth = rng.random(N_EVENTS) < 0.5
    lean = rng.uniform(0.15, 0.85, N_EVENTS)  # the forecaster's belief in each event
    counter = iter(range(10**6))

    def q(title: str, resolution: bool, base: float) -> dict:
        qid = f"q{next(counter)}" if forecasts else hashlib.sha256(title.encode()).hexdigest()[:12]
        entry = _question(title, bool(resolution), qid)
        if not forecasts:
            return entry
        prob = float(np.clip(base + rng.normal(0, 0.08), 0.02, 0.98))
        return {"question": entry, "forecast": {"prob": round(prob, 3), "metadata": None}}

    def event(k: int) -> tuple[str, bool, float]:
        return f"Will event {k} happen by mid-2025?", bool(truth[k]), float(lean[k])

    pairs = [(i, (i + 1) % N_EVENTS) for i in range(N_EVENTS)] + [(i, (i + 3) % N_EVENTS) for i in range(N_EVENTS)]
    lines: dict[str, list[dict]] = {"NegChecker": [], "ParaphraseChecker": [], "AndChecker": [], "OrChecker": []}
    for k in range(N_EVENTS):
        title, res, p = event(k)
        lines["NegChecker"].append(
            {"P": q(title, res, p), "not_P": q(f"Will event {k} not happen by mid-2025?", not res, 0.9 - p)}
        )
        lines["ParaphraseChecker"].append(
            {"P": q(title, res, p), "para_P": q(f"By mid-2025, will event {k} have happened?", res, p + 0.1)}
        )
    for i, j in pairs:
        (ti, ri, pi), (tj, rj, pj) = event(i), event(j)
        both = f"Will both event {i} and event {j} happen by mid-2025?"
        either = f"Will event {i} or event {j} (or both) happen by mid-2025?"
        lines["AndChecker"].append(
            {"P": q(ti, ri, pi), "Q": q(tj, rj, pj), "P_and_Q": q(both, ri and rj, min(pi, pj) + 0.1)}
        )
        lines["OrChecker"].append(
            {"P": q(ti, ri, pi), "Q": q(tj, rj, pj), "P_or_Q": q(either, ri or rj, max(pi, pj) - 0.1)}
        )
    root.mkdir(parents=True, exist_ok=True)
    for name, rows in lines.items():
        with (root / f"{name}.jsonl").open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps({"line": row} if forecasts else row) + "\n")
    return root


def write_forecast_lines(root: Path, tuples: list[tuple[str, list[str], list[float]]]) -> Path:
    """``root`` holding forecast lines in the paper's layout: per tuple (check name, question titles in field
    order, forecasts); a title is the same question wherever it appears."""
    from consistency.checks import get_check

    files: dict[str, list[str]] = {}
    for name, titles, probs in tuples:
        check = get_check(name)
        line = {
            field: {
                "question": _question(title, None, hashlib.sha256(title.encode()).hexdigest()[:12])
                | {"question_type": check.question_types[field]},
                "forecast": {"prob": float(prob), "metadata": None},
            }
            for field, title, prob in zip(check.field_names, titles, probs, strict=True)
        }
        files.setdefault(check.class_name, []).append(json.dumps({"line": line}))
    root.mkdir(parents=True, exist_ok=True)
    for name, rows in files.items():
        (root / f"{name}.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return root
