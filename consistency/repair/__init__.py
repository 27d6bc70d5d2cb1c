"""Repair a forecaster's incoherent forecasts without new model calls (math: branch ``repairmath``)."""

from ._standin import GraphRepair, Score, TupleRepair, guaranteed_improvement, repair_graph, repair_tuples

__all__ = ["GraphRepair", "Score", "TupleRepair", "guaranteed_improvement", "repair_graph", "repair_tuples"]
