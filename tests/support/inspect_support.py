"""Shared by the inspect tests: skipping without the extra, the expected answers, and the cc side of comparisons."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from consistency.evaluation.benchmark import load_benchmark
from consistency.evaluation.scoring import score_path
from consistency.fake_openai import probability_for
from consistency.forecasters.llm import forecast_messages
from consistency.metrics.scoring import ScoreParams

CC = Path(sys.executable).parent / "cc"
INSPECT = Path(sys.executable).parent / "inspect"


def require_inspect() -> None:
    """Skip a module without the [inspect] extra, unless CI says extras are required."""
    try:
        import inspect_ai  # noqa: F401
    except ImportError:
        if os.environ.get("CC_REQUIRE_EXTRAS") == "1":
            raise
        pytest.skip("needs the [inspect] extra (pip install -e '.[inspect]')", allow_module_level=True)


def prompt_of(question: Any) -> str:
    """The user message our solver sends for a question: what the scripted answers are a function of."""
    return forecast_messages(question)[-1]["content"]


def expected_prob(question: Any) -> float:
    return probability_for(prompt_of(question))


def cc_scores(tmp: Path, checks: list[str], limit: int, answer=expected_prob) -> dict[str, dict[str, float]]:
    """``cc score`` on forecast files we write ourselves from the same answers: per check and overall."""
    src = tmp / "cc_forecasts"
    src.mkdir()
    for ts in load_benchmark(None, checks, limit):
        with open(src / f"{ts.check.class_name}.jsonl", "w", encoding="utf-8") as fh:
            for questions in ts.tuples:
                line = {
                    f: {"question": q.model_dump(mode="json"), "forecast": {"prob": answer(q)}}
                    for f, q in questions.items()
                }
                fh.write(json.dumps({"line": line}) + "\n")
    report = score_path(src, ScoreParams())
    out: dict[str, dict[str, float]] = {}
    for f in report.files:
        s = f.stats()
        out[f.check.name.lower()] = {
            "arbitrage_mean": s["default"].avg_violation,
            "arbitrage_violated": s["default"].fraction_violated,
            "frequentist_mean": s["frequentist"].avg_violation,
            "frequentist_violated": s["frequentist"].fraction_violated,
        }
    agg = report.aggregate()
    out["aggregate"] = {
        "arbitrage_mean": agg["default"]["avg_violation"],
        "arbitrage_violated": agg["default"]["fraction_violated"],
        "frequentist_mean": agg["frequentist"]["avg_violation"],
        "frequentist_violated": agg["frequentist"]["fraction_violated"],
    }
    return out


def log_metrics(log: Any) -> dict[str, float]:
    (score,) = log.results.scores
    return {name: m.value for name, m in score.metrics.items()}


def assert_same(log_values: dict[str, float], cc: dict[str, dict[str, float]], multi: bool) -> None:
    for key, value in cc["aggregate"].items():
        assert np.isclose(log_values[key], value, rtol=0, atol=1e-9), key
    if multi:
        for check, stats in cc.items():
            if check != "aggregate":
                for key, value in stats.items():
                    assert np.isclose(log_values[f"{check}/{key}"], value, rtol=0, atol=1e-9), (check, key)


def summary_of_cc_score(log_path: Path, out: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """``cc score LOG`` as a user runs it; its summary.json."""
    result = subprocess.run(
        [str(CC), "score", str(log_path), "-o", str(out)], capture_output=True, text=True, timeout=300, env=env
    )
    assert result.returncode == 0, result.stderr
    return json.loads((out / "summary.json").read_text())


def same_as_summary(log_values: dict[str, float], summary: dict[str, Any]) -> None:
    """The task's metrics against what ``cc score`` wrote for the same log."""
    agg = summary["aggregate"]
    pairs = {
        "arbitrage_mean": agg["default"]["avg_violation"],
        "arbitrage_violated": agg["default"]["fraction_violated"],
        "frequentist_mean": agg["frequentist"]["avg_violation"],
        "frequentist_violated": agg["frequentist"]["fraction_violated"],
    }
    for key, value in pairs.items():
        assert np.isclose(log_values[key], value, rtol=0, atol=1e-9), key
    if len(summary["checks"]) > 1:
        for entry in summary["checks"].values():
            name = entry["check"].lower()
            assert np.isclose(log_values[f"{name}/arbitrage_mean"], entry["default"]["avg_violation"], atol=1e-9)
            assert np.isclose(
                log_values[f"{name}/frequentist_violated"], entry["frequentist"]["fraction_violated"], atol=1e-9
            )
