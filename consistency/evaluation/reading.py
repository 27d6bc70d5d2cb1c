"""A sentence on how to read a run's results, for the runs whose table is easy to misread.

Two cases. The bundled model (SmolLM2-135M) is there to show the pipeline working offline: a newcomer's
first table comes from it, and a tiny model's violations say nothing about forecasters worth measuring.
And a degenerate forecaster, one that gives nearly the same probability to every question, shows few
violations on checks it does not understand (P and "not P" both at 1.0 violate NEGATION, but P, "P or Q"
and "P and Q" all at 1.0 violate nothing), so a table of zeros is not a pass.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..jsonl import iter_json_lines
from ..llm.specs import ModelSpecError, parse_model_spec
from ..store.meta import RunMeta, run_meta_of
from .rundir import RunDir

#: A run is degenerate when at least this share of its forecasts round to one value (2 decimals).
DEGENERATE_SHARE = 0.9
#: ... and it has at least this many forecasts (two or three equal answers mean nothing).
DEGENERATE_MIN = 5

BUNDLED = (
    "SmolLM2-135M, the bundled model, is tiny and expected to be incoherent: this table shows the pipeline "
    "working, not a forecaster worth measuring; name a real one with --forecaster (gpt-4o-mini with "
    "OPENAI_API_KEY set, openrouter/VENDOR/MODEL, or http://HOST/v1::MODEL for your own server)."
)


def degenerate(probabilities: Sequence[float]) -> str | None:
    """The sentence for a forecaster that answers nearly the same to everything, else None."""
    if len(probabilities) < DEGENERATE_MIN:
        return None
    value, count = Counter(round(p, 2) for p in probabilities).most_common(1)[0]
    if count < DEGENERATE_SHARE * len(probabilities):
        return None
    return (
        f"{count} of {len(probabilities)} forecasts are {value:.2f}: answering nearly the same to every question "
        "passes some checks by that alone, coherent or not."
    )


def uses_bundled_model(meta: RunMeta | dict[str, Any]) -> bool:
    """Whether the run's forecaster asked the bundled weights (``local`` without ``CC_LOCAL_MODEL``)."""
    record = meta if isinstance(meta, RunMeta) else run_meta_of(meta)
    config = (record.forecaster.full_forecaster_config if record.forecaster else None) or {}
    model = config.get("model")
    if not isinstance(model, str) or os.environ.get("CC_LOCAL_MODEL", "").strip():
        return False
    try:
        return parse_model_spec(model).provider == "local"
    except ModelSpecError:
        return False


def how_to_read(run_dir: Path, meta: RunMeta | dict[str, Any]) -> str | None:
    """What to say under a run's results (see the module's docstring), or None when they speak for themselves."""
    probabilities = []
    for _, record in iter_json_lines(RunDir(run_dir).journal):
        forecast = record.get("forecast") if isinstance(record, dict) else None
        if isinstance(forecast, dict) and isinstance(forecast.get("prob"), int | float):
            probabilities.append(float(forecast["prob"]))
    said = [BUNDLED] if uses_bundled_model(meta) else []
    flat = degenerate(probabilities)
    return " ".join([*said, flat] if flat else said) or None
