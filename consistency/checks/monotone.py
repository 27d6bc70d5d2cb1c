"""MONOTONE chains: k questions about one event, each implying the next.

"X by 2027" ⇒ "X by 2028" ⇒ "X by 2029" (a later horizon), or "at least 10" ⇒ "at least 8" ⇒
"at least 5" (a lower threshold). Fields are ``P_1`` … ``P_k``, strongest first: ``P_1`` has the
earliest horizon (or the highest bar) and ``P_k`` the latest. Each field is its own base event and
the declaration assumes the chain of implications, so the worlds are the k + 1 monotone rows
(for k = 3: FFF, FFT, FTT, TTT) and the condition ``P_1 <= P_2 <= … <= P_k``; the arbitrage and
frequentist metrics and resolution propagation follow from that as for every other check.

:func:`monotone_check` declares a chain of any length from 3 to :data:`MAX_LENGTH`; the registry
creates ``MONOTONE4``, ``MONOTONE5`` … on first use of the name. MONOTONE is not one of the paper's
ten checks (it follows Fluri et al., who caught GPT-4 forecasting quantities that move
non-monotonically over time).
"""

from __future__ import annotations

import itertools
import re
from functools import cache

from ..errors import InputError
from .check import Check
from .logic import And, Implies, Var, parse

#: The builtin chain's length, and the longest chain the factory declares (2^k faces in the solver).
DEFAULT_LENGTH = 3
MAX_LENGTH = 8

_NAME = re.compile(r"^monotone(\d+)$")


def chain_field(i: int) -> str:
    """The i-th field (1-based), strongest first."""
    return f"P_{i}"


@cache
def monotone_check(k: int = DEFAULT_LENGTH) -> Check:
    """The chain check of length ``k`` (``MONOTONE`` for 3, else ``MONOTONE<k>``)."""
    if not DEFAULT_LENGTH <= k <= MAX_LENGTH:
        raise InputError(f"a MONOTONE chain has {DEFAULT_LENGTH} to {MAX_LENGTH} questions, got {k}")
    names = [chain_field(i) for i in range(1, k + 1)]
    name = "MONOTONE" if k == DEFAULT_LENGTH else f"MONOTONE{k}"
    return Check(
        name,
        {f: f for f in names},
        class_name="MonotoneChecker" if k == DEFAULT_LENGTH else f"Monotone{k}Checker",
        aliases=("mono",) if k == DEFAULT_LENGTH else (f"mono{k}",),
        assume=" and ".join(f"({a} implies {b})" for a, b in itertools.pairwise(names)),
        condition=" <= ".join(names),
        description=f"{k} questions about one event at later horizons or lower thresholds, each implying the next.",
    )


def chain_from_name(name: str) -> Check | None:
    """``MONOTONE4``/``Monotone4Checker``/``mono4`` → the chain of that length (None: not such a name)."""
    key = name.strip().lower().removesuffix(".jsonl")
    for pattern in (_NAME, re.compile(r"^monotone(\d+)checker$"), re.compile(r"^mono(\d+)$")):
        m = pattern.match(key)
        if m:
            return monotone_check(int(m.group(1)))
    return None


def chain_fields(check: Check) -> tuple[str, ...] | None:
    """The fields in implication order when ``check`` is a chain (every field a bare base event and the
    assumption exactly ``(F_1 implies F_2) and … ``); None for any other check. Read from the declaration,
    so a user's own chain declared that way is instantiated and verified as one too."""
    if not check.assume or len(check.fields) < 2:
        return None
    if any(not (isinstance(f, Var) and f.name == name) for name, f in check.formulas.items()):
        return None
    assumption = parse(check.assume)
    links = assumption.args if isinstance(assumption, And) else (assumption,)
    edges = []
    for link in links:
        if not (isinstance(link, Implies) and isinstance(link.premise, Var) and isinstance(link.conclusion, Var)):
            return None
        edges.append((link.premise.name, link.conclusion.name))
    order = list(check.field_names)
    if edges != list(itertools.pairwise(order)):
        return None
    return tuple(order)


MONOTONE = monotone_check(DEFAULT_LENGTH)
