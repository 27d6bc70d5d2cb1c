"""forecasting-tools bots as a bot builder writes them (research, then a forecast, through the library's own
GeneralLlm), with their LLMs pointed at an OpenAI-compatible server: BOT_BASE_URL. ScriptedBot forecasts
binary questions only; AllTypesBot multiple-choice and numeric ones too."""

import os

from forecasting_tools import (
    BinaryQuestion,
    ForecastBot,
    GeneralLlm,
    MetaculusQuestion,
    MultipleChoiceQuestion,
    NumericQuestion,
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


class AllTypesBot(ScriptedBot):
    """A bot that also forecasts multiple-choice and numeric questions, as the library's older template bots do:
    one LLM call each, its option percentages or percentile lines read by the library's PredictionExtractor."""

    async def _run_forecast_on_multiple_choice(self, question: MultipleChoiceQuestion, research: str):
        options = "\n".join(f"{i}. {o}" for i, o in enumerate(question.options, start=1))
        prompt = (
            "You are a professional forecaster.\n"
            f"Question: {question.question_text}\n"
            f"Options:\n{options}\n"
            f"Research: {research}\n"
            'End with one line per option, in order: "Option: NN%"'
        )
        reasoning = await self.get_llm("default", "llm").invoke(prompt)
        prediction = PredictionExtractor.extract_option_list_with_percentage_afterwards(reasoning, question.options)
        return ReasonedPrediction(prediction_value=prediction, reasoning=reasoning)

    async def _run_forecast_on_numeric(self, question: NumericQuestion, research: str):
        def side(open_: bool) -> str:
            return "open" if open_ else "closed"

        scale = "linear" if question.zero_point is None else f"logarithmic around {question.zero_point:g}"
        prompt = (
            "You are a professional forecaster.\n"
            f"Question: {question.question_text}\n"
            f"Lower bound: {question.lower_bound:g} ({side(question.open_lower_bound)})\n"
            f"Upper bound: {question.upper_bound:g} ({side(question.open_upper_bound)})\n"
            f"Scale: {scale}\n"
            f"Research: {research}\n"
            'End with lines "Percentile N: X" for N = 5, 10, 25, 50, 75, 90, 95.'
        )
        reasoning = await self.get_llm("default", "llm").invoke(prompt)
        prediction = PredictionExtractor.extract_numeric_distribution_from_list_of_percentile_number_and_probability(
            reasoning, question
        )
        return ReasonedPrediction(prediction_value=prediction, reasoning=reasoning)
