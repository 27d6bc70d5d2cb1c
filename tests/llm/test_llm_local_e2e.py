"""End to end: the bundled local model, through our LLM layer, gives a validated Forecast.

Runs wherever the ``local`` extra is installed (and must, under ``CC_REQUIRE_LOCAL=1`` as in CI); llama.cpp's
answers at temperature 0 can vary between calls, so only their validity is checked.
"""

from __future__ import annotations

import asyncio

import pytest

from consistency.forecasters.llm import ForecastAnswer
from consistency.llm import LLM, LLMSettings
from consistency.models import Forecast, ForecastingQuestion
from consistency.prompts import question_block, render

pytestmark = pytest.mark.local


@pytest.fixture(autouse=True)
def _bundled_weights(local_model, tmp_path, monkeypatch):
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CC_LOCAL_MODEL", str(local_model))  # the session's verified bundled weights
    for name in ("CC_LOCAL_THREADS", "CC_LOCAL_PARALLEL", "CC_LOCAL_GPU_LAYERS"):
        monkeypatch.delenv(name, raising=False)


def test_local_model_gives_a_validated_forecast(tmp_path):
    question = ForecastingQuestion(
        title="Will the global average temperature in 2028 exceed that of 2024?",
        body="Resolves YES if the Copernicus annual report for 2028 shows a higher global mean than for 2024.",
    )
    messages = [
        {"role": "system", "content": render("forecast_system")},
        {"role": "user", "content": render("forecast_user", question=question_block(question))},
    ]

    async def go():
        async with LLM(LLMSettings(max_reasks=3), transcript=tmp_path / "llm_calls.jsonl") as llm:
            first = await llm.structured("local", messages, ForecastAnswer)
            again = await llm.structured("local", messages, ForecastAnswer)
            return first, again, llm.stats

    first, again, stats = asyncio.run(go())
    assert first.ok, f"{first.error}; raw: {first.raw}"
    forecast = Forecast(prob=first.value.prob, metadata={"reasoning": first.value.reasoning})
    assert 0.0 <= forecast.prob <= 1.0
    assert again.cache_hit and again.value.model_dump() == first.value.model_dump()
    assert stats.calls >= 1 and stats.cache_hits == 1
    assert (tmp_path / "llm_calls.jsonl").read_text().count("\n") == 2


def test_layer_follows_a_restarted_local_server():
    """If the local server goes away mid-run (e.g. the process that started it exited), the next
    call's retry finds or starts another one and goes on."""
    from consistency.llm.local import get_local_server

    messages = [{"role": "user", "content": "Will it snow in Paris in December 2027? Answer with a probability."}]

    async def go():
        async with LLM(LLMSettings(cache=False, max_attempts=4, max_backoff=0.5)) as llm:
            first = await llm.structured("local", messages, ForecastAnswer)
            get_local_server().stop()  # we own it: this really stops the llama.cpp process
            second = await llm.structured("local", messages, ForecastAnswer)
            return first, second

    first, second = asyncio.run(go())
    assert first.ok and second.ok, second.error
    assert second.attempts >= 2
    assert get_local_server().is_running()
