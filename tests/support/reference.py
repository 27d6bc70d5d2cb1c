"""Where the paper's published data lives for tests, and the one skip used when it is absent.

A user's clone has no ``../shared`` beside it; every test that reads the published files is marked
``@needs_reference`` and skips with the same reason. ``CC_REFERENCE_DATA`` points elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REFERENCE = Path(
    os.environ.get("CC_REFERENCE_DATA") or Path(__file__).resolve().parents[3] / "shared" / "reference-data"
)
FORECASTS = REFERENCE / "forecasts" / "BasicForecaster_gpt4o_mini_2024-07-18_tuples_scraped"
GROUND_TRUTH = REFERENCE / "ground_truth"
GROUND_TRUTH_RUN = GROUND_TRUTH / "BasicForecaster_gpt4o-mini-2024-07-18_20240501_20240815"

needs_reference = pytest.mark.skipif(
    not REFERENCE.is_dir(),
    reason=f"the paper's published data is not at {REFERENCE} (put ../shared/reference-data beside the "
    "repository or set CC_REFERENCE_DATA)",
)
