"""A forecaster that reads the probability off the model's next-token distribution.

Asked to write a probability, a small model answers nearly the same number to every question (the
bundled SmolLM2-135M wrote 0.9999 or more to all 33 questions of the quick start). Asked to answer
Yes or No, its first token's distribution still weighs the two answers differently from question to
question: ``P(Yes) / (P(Yes) + P(No))`` is a forecast, read from one generated token. Any endpoint
that returns ``logprobs`` serves (OpenAI's, llama.cpp's, vLLM's), through the project's LLM layer.

The same reading extends to the other question types. A multiple-choice question lists its options
lettered A, B, C...; the forecast is the first token's distribution over those letters, renormalised
over the options. A numeric or date question is asked as yes/no questions at a few thresholds ("Will
the answer be greater than t?", worded as the CDF_THRESHOLDS check words them), and the CDF runs through
one minus their answers, made non-decreasing (:mod:`.logprob_numeric`).
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from ..llm.logprobs import MAX_TOP_LOGPROBS, NextToken
from ..models import NUMERIC_TYPES, AnyForecast, ChoiceForecast, Forecast, ForecastingQuestion
from .answers import letter_marks, option_lines
from .base import ForecastError
from .llm import LLMForecaster, forecast_messages
from .loading import ForecasterSpecError
from .logprob_numeric import THRESHOLDS, cdf_through_thresholds, threshold_questions

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


def letter_mass(top: NextToken, letters: list[str]) -> dict[str, float]:
    """The probability the listed tokens give to each option letter (``A``, `` A``, ``A.``... summed; a letter
    counts in capitals only, so the article "a" is not option A); letters not listed are left out."""
    mass: dict[str, float] = {}
    wanted = set(letters)
    for chance in top.top:
        letter = chance.token.strip(_WRAPPING)
        if letter in wanted:
            mass[letter] = mass.get(letter, 0.0) + math.exp(chance.logprob)
    return mass


class LogprobForecaster(LLMForecaster):
    """One token per question: the model answers Yes or No, and the forecast is the share of Yes in the
    probability its first token gives to the two answers (every spelling of each summed).

    ``top_logprobs`` is how many of the most likely first tokens the endpoint lists (OpenAI allows
    up to 20). A question for which neither answer is among them gets a failed forecast saying so.
    A multiple-choice question is answered with the letter of an option; an option whose letter is not
    listed gets the probability of the least likely token listed (an upper bound on its own), noted in the
    forecast's metadata. A numeric or date question is asked at ``thresholds`` thresholds (1 to 8), one
    token each.
    """

    name = "logprob"

    def __init__(
        self, model: str = "local", top_logprobs: int = MAX_TOP_LOGPROBS, thresholds: int = THRESHOLDS, **params: Any
    ) -> None:
        super().__init__(model, **params)
        if not 1 <= top_logprobs <= 100:
            raise ForecasterSpecError(f"top_logprobs must be a whole number from 1 to 100, got {top_logprobs}")
        if not 1 <= thresholds <= 8:
            raise ForecasterSpecError(f"thresholds must be a whole number from 1 to 8, got {thresholds}")
        self.top_logprobs = top_logprobs
        self.thresholds = thresholds

    def request(self, question: ForecastingQuestion) -> list[dict[str, str]]:
        """The messages sent for ``question`` (a multiple-choice one: its options lettered)."""
        if question.question_type == "multiple_choice":
            letters = option_lines(question, letters=True)
            return forecast_messages(question, "forecast_letter_system", "forecast_letter_user", options=letters)
        return forecast_messages(question, "forecast_yesno_system", "forecast_yesno_user")

    async def forecast(self, question: ForecastingQuestion) -> AnyForecast:
        if question.question_type == "multiple_choice":
            return await self._choice(question)
        if question.question_type in NUMERIC_TYPES:
            return await self._numeric(question)
        return await self._yes_share(question)

    async def _next(self, question: ForecastingQuestion) -> tuple[NextToken, str | None]:
        result = await self._client().next_token(self.model, self.request(question), self.top_logprobs, **self.params)
        return self._value(result), result.raw

    async def _yes_share(self, question: ForecastingQuestion) -> Forecast:
        top, raw = await self._next(question)
        yes, no = yes_no_mass(top)
        if yes + no <= 0.0:
            listed = ", ".join(repr(c.token) for c in top.top[:5])
            raise ForecastError(
                f"neither Yes nor No is among the model's {len(top.top)} most likely first tokens ({listed}, ...)",
                raw,
            )
        return Forecast(prob=yes / (yes + no), metadata={"p_yes": yes, "p_no": no, "token": top.token})

    async def _choice(self, question: ForecastingQuestion) -> ChoiceForecast:
        try:
            letters = letter_marks(len(question.options or []))
        except ValueError as exc:
            raise ForecastError(f"the logprob forecaster letters the options: {exc}") from None
        top, raw = await self._next(question)
        mass = letter_mass(top, letters)
        if not mass:
            listed = ", ".join(repr(c.token) for c in top.top[:5])
            raise ForecastError(
                f"none of the option letters {letters[0]}-{letters[-1]} is among the model's {len(top.top)} most "
                f"likely first tokens ({listed}, ...)",
                raw,
            )
        unlisted = [x for x in letters if x not in mass]
        # Every token not listed is less likely than every one listed; a list shorter than asked holds them all.
        floor = min(math.exp(c.logprob) for c in top.top) if len(top.top) >= self.top_logprobs else 0.0
        weights = [mass.get(x, floor) for x in letters]
        metadata: dict[str, Any] = {"letter_mass": mass, "token": top.token}
        if unlisted:
            metadata["unlisted"] = {x: floor for x in unlisted}
        try:
            return ChoiceForecast.normalised(question, weights, metadata=metadata)
        except ValueError as exc:  # every letter listed with no mass at all
            raise ForecastError(f"the option letters carry no probability: {exc}", raw) from None

    async def _numeric(self, question: ForecastingQuestion) -> AnyForecast:
        asked = threshold_questions(question, self.thresholds)
        answers = await asyncio.gather(*(self._yes_share(q) for _, q in asked), return_exceptions=True)
        for answer in answers:
            if isinstance(answer, BaseException) and not isinstance(answer, ForecastError):
                raise answer
        got = [(t, a.prob) for (t, _), a in zip(asked, answers, strict=True) if isinstance(a, Forecast)]
        failed = [str(a) for a in answers if isinstance(a, ForecastError)]
        return cdf_through_thresholds(question, got, failed)
