"""The next-token distribution of a chat completion: what ``logprobs``/``top_logprobs`` report.

OpenAI's chat completions (and llama.cpp's, vLLM's... OpenAI-compatible servers) return, when asked
with ``logprobs: true, top_logprobs: n``, the log-probability of each generated token and of the ``n``
most likely tokens at its position. Reading a probability from that distribution costs one generated
token and gives a real number where a small model asked to *write* a number answers the same one to
everything (:mod:`consistency.forecasters.logprob`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

#: The most ``top_logprobs`` OpenAI accepts (llama.cpp takes more; the forecaster's default is this).
MAX_TOP_LOGPROBS = 20


class TokenChance(BaseModel):
    """One candidate token and its log-probability (natural log)."""

    token: str
    logprob: float


class NextToken(BaseModel):
    """The first token of an answer and the most likely tokens at its position, most likely first."""

    token: str
    top: list[TokenChance]


def next_token(completion: Any) -> NextToken | None:
    """The first position's distribution of a chat completion, or None when it carries no logprobs
    (a server that ignores the parameter, or a response without choices)."""
    try:
        content = completion.choices[0].logprobs.content
    except (AttributeError, IndexError, TypeError):
        return None
    if not content:
        return None
    first = content[0]
    top = first.top_logprobs or [first]  # top_logprobs=0: the chosen token alone
    chances = [TokenChance(token=t.token, logprob=float(t.logprob)) for t in top]
    return NextToken(token=first.token, top=sorted(chances, key=lambda c: -c.logprob))
