"""The offline demo and test server for the OpenAI wire protocol and Batch API (and the platforms' fixture server).

Not part of the tool's runtime: nothing else in ``consistency`` imports it. It lets every command run
offline (the documentation's demos) and lets the tests drive the real clients over real HTTP. Serving
needs ``h11``, from the ``fake-openai`` extra (``dev`` includes it).

:class:`ScriptedServer` is a real OpenAI-compatible HTTP server on 127.0.0.1 whose answers come
from a rule (deterministic forecasts by default) and which can inject faults: rate limits, 5xx,
hangs, malformed bodies and dropped connections. It also serves the OpenAI Files + Batch API
(:mod:`.batches`, knobs in :class:`BatchBehaviour`). ``python -m consistency.fake_openai`` serves it.
"""

from consistency.fake_openai.batches import BatchAPI, BatchBehaviour
from consistency.fake_openai.replies import (
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
from consistency.fake_openai.rules import (
    hypocritical_probability,
    hypocritical_rule,
    probability_for,
    probability_rule,
    schema_rule,
    sequence,
)
from consistency.fake_openai.server import DEFAULT_MODEL, ScriptedServer

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
