"""Offline test doubles for the LLM client layer.

:class:`ScriptedServer` is a real OpenAI-compatible HTTP server on 127.0.0.1 whose answers come
from a rule (deterministic forecasts by default) and which can inject faults: rate limits, 5xx,
hangs, malformed bodies and dropped connections. It also serves the OpenAI Files + Batch API
(:mod:`.batches`, knobs in :class:`BatchBehaviour`). ``python -m consistency.testing`` serves it.
"""

from .batches import BatchAPI, BatchBehaviour
from .replies import (
    FAULT_KINDS,
    Fault,
    Reply,
    Rule,
    ScriptedRequest,
    every_nth,
    faults_then,
    random_faults,
    together,
)
from .rules import hypocritical_probability, hypocritical_rule, probability_for, probability_rule, schema_rule, sequence
from .server import DEFAULT_MODEL, ScriptedServer

__all__ = [
    "DEFAULT_MODEL",
    "FAULT_KINDS",
    "BatchAPI",
    "BatchBehaviour",
    "Fault",
    "Reply",
    "Rule",
    "ScriptedRequest",
    "ScriptedServer",
    "every_nth",
    "faults_then",
    "hypocritical_probability",
    "hypocritical_rule",
    "probability_for",
    "probability_rule",
    "random_faults",
    "schema_rule",
    "sequence",
    "together",
]
