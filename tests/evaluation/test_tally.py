"""The live counts of a run (what cc evaluate's bar shows) come from the journal records alone."""

from __future__ import annotations

from consistency.evaluation import Tally


def test_a_tally_counts_answers_failures_cache_and_cost_from_the_records():
    tally = Tally(total=4)
    tally.add({"forecast": {"prob": 0.3}, "calls": 2, "cache_hits": 2, "cost": 0.0})  # served whole from the cache
    tally.add({"forecast": {"prob": 0.6}, "calls": 2, "cache_hits": 1, "cost": 0.25})
    tally.add({"forecast": None, "error": "timeout", "calls": 1, "cache_hits": 0, "cost": None})
    tally.add({"forecast": {"prob": 0.5}})  # no calls recorded (a constant forecaster): not a cache hit
    assert (tally.done, tally.failed, tally.cached, tally.finished) == (3, 1, 1, 4)
    assert tally.text() == "failed 1  cached 1  $0.2500"
