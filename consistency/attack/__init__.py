"""Adversarial consistency checks: search for the tuples on which a forecaster is most incoherent.

``attack(forecaster, budget=N)`` spends at most N forecasts of the target: it starts from seed tuples,
keeps the most violated, and proposes new tuples around them through candidate *families* (other
checks over the same base questions, variants of the weak questions), giving the budget to the
families that pay off (UCB1, :mod:`.search`). ``cc attack`` is the command-line face of it.
Plug in your own proposal strategy: any object with a ``name`` and a ``propose(state)`` generator
of :class:`Candidate` (see :mod:`.families`).
"""

from .families import (
    Candidate,
    CheckFamily,
    Family,
    MutationFamily,
    SearchState,
    WeakTuple,
    default_families,
    template_tuple,
)
from .mutations import MODEL_MUTATIONS, TEMPLATE_MUTATIONS, Variant
from .run import AttackError, AttackResult, attack
from .search import Evaluated, SearchOptions

__all__ = [
    "MODEL_MUTATIONS",
    "TEMPLATE_MUTATIONS",
    "AttackError",
    "AttackResult",
    "Candidate",
    "CheckFamily",
    "Evaluated",
    "Family",
    "MutationFamily",
    "SearchOptions",
    "SearchState",
    "Variant",
    "WeakTuple",
    "attack",
    "default_families",
    "template_tuple",
]
