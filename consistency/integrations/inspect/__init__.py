"""inspect_ai integration (the ``[inspect]`` extra): consistency checks as inspect tasks, and inspect
logs to and from ``cc`` forecast files.

``_registry`` is inspect's entry point (``inspect eval consistency/negation``). :mod:`.answers`,
:mod:`.dataset` and :mod:`.logs` (the converters behind ``cc score LOG.eval`` and ``cc export inspect``)
import inspect_ai only inside the functions that need it.
"""
