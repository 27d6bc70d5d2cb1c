"""The one-line usage of a run and the batches' state, as the commands print them."""

from __future__ import annotations

from consistency.llm import RunStats
from consistency.llm.batch import BatchProgress


def test_the_usage_line_counts_unpriced_calls_apart():
    stats = RunStats(calls=3, cache_hits=1, failures=0, retries=2, prompt_tokens=100, completion_tokens=7, cost=0.5)
    assert stats.text() == "LLM: 3 calls, 1 cache hits, 2 retries, 0 failures; 100+7 tokens; $0.5000"
    stats.unpriced_calls = 2
    assert stats.text().endswith("$0.5000 (+2 unpriced calls)")


def test_the_batches_line_says_every_count():
    p = BatchProgress(batches=2, requests=10, in_progress=1, completed=6, failed=1, expected_cost=0.125)
    assert p.text() == "2 submitted (10 requests)  in progress 1  answered 6  failed 1  expected $0.1250"
