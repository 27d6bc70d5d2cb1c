import re

from forecasting_tools import BinaryQuestion, ForecastBot, GeneralLlm, MetaculusQuestion, ReasonedPrediction


class MyBot(ForecastBot):
    @classmethod
    def _llm_config_defaults(cls):
        llm = GeneralLlm(model="openai/gpt-4o-mini", temperature=0)
        return {"default": llm, "summarizer": llm, "researcher": llm, "parser": llm}

    async def run_research(self, question: MetaculusQuestion) -> str:
        prompt = f"Summarise the recent news that matters for this question.\nQuestion: {question.question_text}"
        return await self.get_llm("researcher", "llm").invoke(prompt)

    async def _run_forecast_on_binary(self, question: BinaryQuestion, research: str) -> ReasonedPrediction[float]:
        prompt = (
            "You are a professional forecaster.\n"
            f"Question: {question.question_text}\n"
            f"Resolution criteria: {question.resolution_criteria}\n"
            f"Research: {research}\n"
            "End with your answer as 'Probability: X' where X is between 0 and 1."
        )
        reasoning = await self.get_llm("default", "llm").invoke(prompt)
        found = re.findall(r"Probability:\s*([0-9.]+)", reasoning)
        if not found:
            raise ValueError(f"no probability in the answer: {reasoning[-200:]!r}")
        return ReasonedPrediction(prediction_value=min(0.99, max(0.01, float(found[-1]))), reasoning=reasoning)

    async def _run_forecast_on_multiple_choice(self, question, research):
        raise NotImplementedError

    async def _run_forecast_on_numeric(self, question, research):
        raise NotImplementedError
