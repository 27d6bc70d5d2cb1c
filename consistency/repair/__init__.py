"""Post-hoc repair of incoherent forecasts, without model calls: pure functions of forecast arrays.

:func:`repair_tuples` repairs each tuple of one check on its own; :func:`repair_graph` repairs tuples of
several checks that share questions jointly, one value per question. Brier repairs are Euclidean
projections onto the coherent forecasts (a fixed point of one where a field is conditional); log repairs
are the arbitrage prices. Each repair scores better in every possible world: by at least the squared
distance moved (Brier) or the arbitrage profit (log).

Imports are lazy: ``cc repair --help`` reads :mod:`.options` without loading numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..names import lazy_exports

if TYPE_CHECKING:
    from .graph import GraphRepair, repair_graph
    from .tuples import Score, TupleRepair, guaranteed_improvement, repair_tuples

_EXPORTS = {
    "GraphRepair": ".graph",
    "repair_graph": ".graph",
    "Score": ".tuples",
    "TupleRepair": ".tuples",
    "guaranteed_improvement": ".tuples",
    "repair_tuples": ".tuples",
}

__all__ = ["GraphRepair", "Score", "TupleRepair", "guaranteed_improvement", "repair_graph", "repair_tuples"]

__getattr__ = lazy_exports(__name__, _EXPORTS)
