"""Adversarial consistency checks: search for the tuples on which a forecaster is most incoherent.

``attack(forecaster, budget=N)`` spends at most N forecasts of the target: it starts from seed tuples,
keeps the most violated, and proposes new tuples around them through candidate *families* (other
checks over the same base questions, variants of the weak questions), giving the budget to the
families that pay off (UCB1, :mod:`.search`). ``cc attack`` is the command-line face of it.
Plug in your own proposal strategy: any object with a ``name`` and a ``propose(state)`` generator
of :class:`Candidate` (see :mod:`.families`).

Imports are lazy: ``cc attack --help`` reads :mod:`.options` without loading numpy or the forecasters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..names import lazy_exports

if TYPE_CHECKING:
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
    from .options import SearchSettings
    from .run import AttackError, AttackResult, attack
    from .search import Evaluated, SearchOptions

_EXPORTS = {
    "Candidate": ".families",
    "CheckFamily": ".families",
    "Family": ".families",
    "MutationFamily": ".families",
    "SearchState": ".families",
    "WeakTuple": ".families",
    "default_families": ".families",
    "template_tuple": ".families",
    "MODEL_MUTATIONS": ".mutations",
    "TEMPLATE_MUTATIONS": ".mutations",
    "Variant": ".mutations",
    "AttackError": ".run",
    "AttackResult": ".run",
    "attack": ".run",
    "Evaluated": ".search",
    "SearchOptions": ".search",
    "SearchSettings": ".options",
}

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
    "SearchSettings",
    "SearchState",
    "Variant",
    "WeakTuple",
    "attack",
    "default_families",
    "template_tuple",
]

__getattr__ = lazy_exports(__name__, _EXPORTS)
