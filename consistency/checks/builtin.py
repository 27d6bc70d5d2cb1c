"""The builtin checks: the ten of the consistency-checks paper (its Table 3), with the paper's field
names, then MONOTONE (horizon/threshold chains, :mod:`.monotone`), which the paper does not have.

NEGATION, PARAPHRASE, ANDOR and BUT leave their condition to be derived from their worlds. Code that
reproduces the paper's tables uses :data:`PAPER_CHECKS`; everything else :data:`BUILTIN_CHECKS`.
"""

from __future__ import annotations

from .check import Check
from .monotone import MONOTONE

NEGATION = Check(
    "NEGATION",
    {"P": "P", "not_P": "not P"},
    class_name="NegChecker",
    aliases=("neg",),
    description="A question and its negation.",
)
PARAPHRASE = Check(
    "PARAPHRASE",
    {"P": "P", "para_P": "P"},
    class_name="ParaphraseChecker",
    aliases=("para",),
    description="Two wordings of the same question.",
)
CONSEQUENCE = Check(
    "CONSEQUENCE",
    {"P": "P", "cons_P": "Q"},
    class_name="ConsequenceChecker",
    aliases=("cons",),
    assume="P implies Q",
    condition="P <= cons_P",
    instantiate={"cons_P": "P or Q"},
    description="A question and one that follows from it.",
)
AND = Check(
    "AND",
    {"P": "P", "Q": "Q", "P_and_Q": "P and Q"},
    class_name="AndChecker",
    condition="max(P + Q - 1, 0) <= P_and_Q <= min(P, Q)",
    description="Two questions and their conjunction (Fréchet bounds).",
)
OR = Check(
    "OR",
    {"P": "P", "Q": "Q", "P_or_Q": "P or Q"},
    class_name="OrChecker",
    condition="max(P, Q) <= P_or_Q <= min(1, P + Q)",
    description="Two questions and their disjunction (Fréchet bounds).",
)
ANDOR = Check(
    "ANDOR",
    {"P": "P", "Q": "Q", "P_and_Q": "P and Q", "P_or_Q": "P or Q"},
    class_name="AndOrChecker",
    description="Inclusion-exclusion over a conjunction and a disjunction.",
)
BUT = Check(
    "BUT",
    {"P": "P", "Q_and_not_P": "Q and not P", "P_or_Q": "P or Q"},
    class_name="ButChecker",
    description="A disjunction split into disjoint parts.",
)
COND = Check(
    "COND",
    {"P": "P", "Q_given_P": "Q given P", "P_and_Q": "P and Q"},
    class_name="CondChecker",
    condition="P * Q_given_P == P_and_Q",
    description="The product rule for a conditional question.",
)
CONDCOND = Check(
    "CONDCOND",
    {"P": "P", "Q_given_P": "Q given P", "R_given_P_and_Q": "R given P and Q", "P_and_Q_and_R": "P and Q and R"},
    class_name="CondCondChecker",
    condition="P * Q_given_P * R_given_P_and_Q == P_and_Q_and_R",
    description="The chain rule over two nested conditions.",
)
EXPEVIDENCE = Check(
    "EXPEVIDENCE",
    {"P": "P", "Q": "Q", "P_given_Q": "P given Q", "P_given_not_Q": "P given not Q"},
    class_name="ExpectedEvidenceChecker",
    aliases=("expev",),
    condition="P == P_given_Q * Q + P_given_not_Q * (1 - Q)",
    description="Conservation of expected evidence (law of total probability).",
)

#: The paper's ten checks, in its order.
PAPER_CHECKS = (NEGATION, PARAPHRASE, CONSEQUENCE, AND, OR, ANDOR, BUT, COND, CONDCOND, EXPEVIDENCE)
#: Every check registered at import: the paper's ten, then MONOTONE.
BUILTIN_CHECKS = (*PAPER_CHECKS, MONOTONE)
