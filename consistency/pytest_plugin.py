"""The pytest plugin (entry point ``pytest11``): a consistency gate for a forecaster's test suite.

    def test_my_forecaster_is_consistent(assert_consistent):
        assert_consistent(MyForecaster(), checks=["neg", "para"], n=10, max_violation=0.05)

Loading this module costs pytest next to nothing (standard library only); the framework is
imported when a test asks for the fixture. See :func:`consistency.evaluation.gate.assert_consistent`.
"""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def assert_consistent(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``assert_consistent(forecaster, checks=..., n=..., max_violation=..., seed=..., tuples=...)``; run directories
    go under pytest's temporary directory, answers come from (and go to) the response cache."""
    from consistency.evaluation.gate import assert_consistent as gate

    def run(forecaster: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("out", tmp_path_factory.mktemp("consistency-run"))
        return gate(forecaster, **kwargs)

    return run
