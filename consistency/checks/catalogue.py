"""The registered checks described for a reader (``cc checks``): names, fields and their meaning, worlds and
condition, the same in the table and in JSON."""

from __future__ import annotations

from typing import Any

from . import all_checks, chain_fields
from .check import Check


def catalogue() -> list[dict[str, Any]]:
    """One entry per listed check: its names (``aliases``: every other short name ``-c`` accepts: the aliases,
    then the lower-case name), fields as formulas, question types, |Ω| and the condition S."""
    return [
        {
            "name": c.name,
            "class_name": c.class_name,
            "aliases": list(dict.fromkeys([*c.aliases, c.name.lower()])),
            "fields": {name: f.symbol() for name, f in c.formulas.items()},
            "question_types": c.question_types,
            "assume": c.assume,
            "worlds": len(c.worlds),
            "condition": [str(x) for x in c.constraints],
        }
        for c in all_checks()
    ]


def fields_text(check: Check, fields: dict[str, str]) -> str:
    """``name=formula, ...`` and what they assume: a monotone chain (``a ⇒ b``), or the check's assumption."""
    text = ", ".join(name if name == sym else f"{name}={sym}" for name, sym in fields.items())
    chain = chain_fields(check)
    if chain:
        return text + f" ({' ⇒ '.join(chain)})"
    return text + (f" ({check.assume})" if check.assume else "")
