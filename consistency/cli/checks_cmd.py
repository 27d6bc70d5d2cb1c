"""``cc checks``: list the registered checks with their fields, worlds and condition."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from ..checks import all_checks, chain_fields
from .console import out


def checks(as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False) -> None:
    """List the consistency checks: names, fields and their meaning, |Ω| and the condition S."""
    rows = [
        {
            "name": c.name,
            "class_name": c.class_name,
            "aliases": _names(c),
            "fields": {name: f.symbol() for name, f in c.formulas.items()},
            "question_types": c.question_types,
            "assume": c.assume,
            "worlds": len(c.worlds),
            "condition": [str(x) for x in c.constraints],
        }
        for c in all_checks()
    ]
    if as_json:
        out.print_json(json.dumps(rows))
        return
    table = Table(title="Consistency checks (| marks a conditional question)", box=None, pad_edge=False)
    for col in ("check", "also", "fields = meaning", "|Ω|", "condition S"):
        table.add_column(col, overflow="fold")
    for c, row in zip(all_checks(), rows, strict=True):
        fields = ", ".join(name if name == sym else f"{name}={sym}" for name, sym in row["fields"].items())
        chain = chain_fields(c)
        if chain:
            fields += f" ({' ⇒ '.join(chain)})"
        elif c.assume:
            fields += f" ({c.assume})"
        names = ", ".join([c.class_name, *row["aliases"]])
        table.add_row(c.name, names, fields, str(row["worlds"]), "; ".join(row["condition"]))
    out.print(table)


def _names(check) -> list[str]:
    """Every short name ``-c``/``--check`` accepts besides the paper's name and class name: the aliases, then
    the lower-case name (``neg``, ``negation``), the same in the table and in ``--json``."""
    return list(dict.fromkeys([*check.aliases, check.name.lower()]))
