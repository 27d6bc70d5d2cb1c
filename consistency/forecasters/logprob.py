"""A forecaster that reads the probability off the model's next-token distribution.

Asked to write a probability, a small model answers nearly the same number to every question (the
bundled SmolLM2-135M wrote 0.9999 or more to all 33 questions of the quick start). Asked to answer
Yes or No, its first token's distribution still weighs the two answers differently from question to
question: ``P(Yes) / (P(Yes) + P(No))`` is a forecast, read from one generated token. Any endpoint
that returns ``logprobs`` serves (OpenAI's, llama.cpp's, vLLM's), through the project's LLM layer.
"""

from __future__ import annotations

import math
from typing import Any

from ..llm.logprobs import MAX_TOP_LOGPROBS, NextToken
from ..models import Forecast, ForecastingQuestion
from .base import ForecastError
from .llm import LLMForecaster, forecast_messages
from .loading import ForecasterSpecError

#: What surrounds an answer word in a token: whitespace, tokenizers' space markers, quotes, punctuation.
_WRAPPING = " \t\r\n\u2581\u0120\"'`*.,:;!()[]"


def answer_word(token: str) -> str | None:
    """``"yes"`` or ``"no"`` when a token spells that answer (" Yes", "yes", "YES", "No."), else None."""
    word = token.strip(_WRAPPING).lower()
    return word if word in ("yes", "no") else None


def yes_no_mass(top: NextToken) -> tuple[float, float]:
    """The probability the listed tokens give to Yes and to No, each summed over its spellings."""
    mass = {"yes": 0.0, "no": 0.0}
    for chance in top.top:
        word = answer_word(chance.token)
        if word is not None:
            mass[word] += math.exp(chance.logprob)
    return mass["yes"], mass["no"]


class LogprobForecaster(LLMForecaster):
    """One token per question: the model answers Yes or No, and the forecast is the share of Yes in the
    probability its first token gives to the two answers (every spelling of each summed).

    ``top_logprobs`` is how many of the most likely first tokens the endpoint lists (OpenAI allows
    up to 20). A question for which neither answer is among them gets a failed forecast saying so.
    """

    name = "logprob"

    def __init__(self, model: str = "local", top_logprobs: int = MAX_TOP_LOGPROBS, **params: Any) -> None:
        super().__init__(model, **params)
        if not 1 <= top_logprobs <= 100:
            raise ForecasterSpecError(f"top_logprobs must be a whole number from 1 to 100, got {top_logprobs}")
        self.top_logprobs = top_logprobs

    def request(self, question: ForecastingQuestion) -> list[dict[str, str]]:
        """The messages sent for ``question``."""
        return forecast_messages(question, "forecast_yesno_system", "forecast_yesno_user")

    async def forecast(self, question: ForecastingQuestion) -> Forecast:
        result = await self._client().next_token(self.model, self.request(question), self.top_logprobs, **self.params)
        top: NextToken = self._value(result)
        yes, no = yes_no_mass(top)
        if yes + no <= 0.0:
            listed = ", ".join(repr(c.token) for c in top.top[:5])
            raise ForecastError(
                f"neither Yes nor No is among the model's {len(top.top)} most likely first tokens ({listed}, ...)",
                result.raw,
            )
        return Forecast(prob=yes / (yes + no), metadata={"p_yes": yes, "p_no": no, "token": top.token})
