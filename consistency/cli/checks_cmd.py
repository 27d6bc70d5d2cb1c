"""``cc checks``: list the registered checks with their fields, worlds and condition."""

from __future__ import annotations

from .console import show, table
from .options import AsJson


def checks(as_json: AsJson = False) -> None:
    """List the consistency checks: names, fields and their meaning, |Ω| and the condition S."""
    from ..checks import all_checks
    from ..checks.catalogue import catalogue, fields_text

    entries = catalogue()
    rows = [
        (e["name"], ", ".join([e["class_name"], *e["aliases"]]), fields_text(c, e["fields"]), e["worlds"],
         "; ".join(e["condition"]))
        for c, e in zip(all_checks(), entries, strict=True)
    ]  # fmt: skip
    columns = ("check", "also", "fields = meaning", "|Ω|", "condition S")
    title = "Consistency checks (| marks a conditional question)"
    show(entries, as_json, lambda: table(title, columns, rows, left=len(columns), fold=columns, box=None,
                                         pad_edge=False))  # fmt: skip
