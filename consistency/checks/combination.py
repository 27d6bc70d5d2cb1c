"""COMBINATION: two questions and the four ways they can resolve together.

ForecastBench's question sets up to 2025-08-31 paired two questions P and Q of one source and asked
for the probability of each of the four joint outcomes (its ``direction`` [1, 1], [1, -1], [-1, 1],
[-1, -1]: P and Q, P and not Q, not P and Q, neither). With the forecasts of P and Q themselves the
six numbers must form one distribution over the four worlds: each question's probability is the sum
of the two joint outcomes in which it resolves YES, and the four joint outcomes sum to one. The
worlds, the arbitrage metric and the frequentist metric follow from the declaration as for every
check; the condition is declared (rather than derived) so the frequentist metric measures these
three natural identities.
"""

from __future__ import annotations

from .check import Check

#: Field names in ForecastBench's direction order after P and Q: [1, 1], [1, -1], [-1, 1], [-1, -1].
JOINT_FIELDS = ("P_and_Q", "P_and_not_Q", "not_P_and_Q", "not_P_and_not_Q")

#: ForecastBench's ``direction`` of each joint field.
DIRECTIONS = {"P_and_Q": (1, 1), "P_and_not_Q": (1, -1), "not_P_and_Q": (-1, 1), "not_P_and_not_Q": (-1, -1)}

COMBINATION = Check(
    "COMBINATION",
    {
        "P": "P",
        "Q": "Q",
        "P_and_Q": "P and Q",
        "P_and_not_Q": "P and not Q",
        "not_P_and_Q": "not P and Q",
        "not_P_and_not_Q": "not P and not Q",
    },
    class_name="CombinationChecker",
    aliases=("combo",),
    condition=(
        "P == P_and_Q + P_and_not_Q",
        "Q == P_and_Q + not_P_and_Q",
        "P_and_Q + P_and_not_Q + not_P_and_Q + not_P_and_not_Q == 1",
    ),
    description="Two questions and their four joint outcomes (ForecastBench's combination questions).",
)


def field_for_direction(direction: tuple[int, int] | list[int]) -> str:
    """The joint field of a ForecastBench direction pair such as ``[1, -1]``."""
    key = tuple(int(d) for d in direction)
    for name, value in DIRECTIONS.items():
        if value == key:
            return name
    raise ValueError(f"a direction is a pair of 1 and -1, got {list(direction)!r}")
