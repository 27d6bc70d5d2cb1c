"""A forecasting-tools bot as a bot builder writes one (research, then a binary forecast, through the
library's own GeneralLlm), with its LLMs pointed at an OpenAI-compatible server: BOT_BASE_URL."""

import os

from forecasting_tools import (
    BinaryQuestion,
    ForecastBot,
    GeneralLlm,
    MetaculusQuestion,
    PredictionExtractor,
    ReasonedPrediction,
)


def server_llm() -> GeneralLlm:
    return GeneralLlm(model="openai/scripted", base_url=os.environ["BOT_BASE_URL"], api_key="not-a-key", temperature=0)


class ScriptedBot(ForecastBot):
    @classmethod
    def _llm_config_defaults(cls):
        return {"default": server_llm(), "summarizer": server_llm(), "researcher": server_llm(), "parser": server_llm()}

    async def run_research(self, question: MetaculusQuestion) -> str:
        prompt = f"Find the news that matters for this question.\nQuestion: {question.question_text}"
        return await self.get_llm("researcher", "llm").invoke(prompt)

    async def _run_forecast_on_binary(self, question: BinaryQuestion, research: str) -> ReasonedPrediction[float]:
        prompt = (
            "You are a professional forecaster.\n"
            f"Question: {question.question_text}\n"
            f"Resolution criteria: {question.resolution_criteria}\n"
            f"Research: {research}\n"
            'The last thing you write is your final answer as: "Probability: ZZ%", 0-100'
        )
        reasoning = await self.get_llm("default", "llm").invoke(prompt)
        prediction = PredictionExtractor.extract_last_percentage_value(reasoning, max_prediction=1, min_prediction=0)
        return ReasonedPrediction(prediction_value=prediction, reasoning=reasoning)

    async def _run_forecast_on_multiple_choice(self, question, research):
        raise NotImplementedError("binary questions only")

    async def _run_forecast_on_numeric(self, question, research):
        raise NotImplementedError("binary questions only")


class BrokenBot(ScriptedBot):
    async def _run_forecast_on_binary(self, question: BinaryQuestion, research: str) -> ReasonedPrediction[float]:
        raise ValueError("the parser could not read a probability")
