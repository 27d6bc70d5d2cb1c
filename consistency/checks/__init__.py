"""Consistency checks: declarations, and a registry that resolves the paper's names to them.

``get_check`` accepts the paper's check name (``COND``), its class name (``CondChecker``) or
a short name (``cond``), case-insensitively. ``register`` adds a check of your own. COMBINATION
(ForecastBench's two-question combinations) is found by name but is not in :func:`all_checks`. Longer MONOTONE
chains (``MONOTONE4``, ``mono5`` ...) are declared and registered the first time they are named.

The checks over multiple-choice and numeric questions (:mod:`.categorical`: ``PARTITION4`` …, ``MC_BINARY``,
``CDF_THRESHOLDS`` …, ``NUMERIC_PARAPHRASE``) are found by name too, but stay out of :func:`all_checks` until the
bundled benchmark has their tuples.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import InputError
from .builtin import BUILTIN_CHECKS, PAPER_CHECKS
from .categorical import (
    CATEGORICAL_CHECKS,
    CDF_THRESHOLDS,
    MC_BINARY,
    NUMERIC_PARAPHRASE,
    cdf_thresholds_check,
    family_from_fields,
    family_from_name,
    partition_check,
)
from .check import BINARY, CONDITIONAL, MULTIPLE_CHOICE, NUMERIC, Check, CheckDeclarationError
from .combination import COMBINATION
from .condition import ConditionError, Constraint
from .logic import Formula, parse
from .monotone import MONOTONE, chain_fields, chain_from_name, monotone_check

__all__ = [
    "BINARY",
    "BUILTIN_CHECKS",
    "CATEGORICAL_CHECKS",
    "CDF_THRESHOLDS",
    "COMBINATION",
    "CONDITIONAL",
    "MC_BINARY",
    "MONOTONE",
    "MULTIPLE_CHOICE",
    "NUMERIC",
    "NUMERIC_PARAPHRASE",
    "PAPER_CHECKS",
    "Check",
    "CheckDeclarationError",
    "ConditionError",
    "Constraint",
    "Formula",
    "UnknownCheckError",
    "all_checks",
    "cdf_thresholds_check",
    "chain_fields",
    "check_for_fields",
    "get_check",
    "monotone_check",
    "parse",
    "partition_check",
    "register",
]


class UnknownCheckError(InputError, KeyError):
    """No registered check has this name."""

    def __str__(self) -> str:
        return str(self.args[0])


_CHECKS: dict[str, Check] = {}
_NAMES: dict[str, Check] = {}


def _keys(check: Check) -> Iterable[str]:
    yield check.name
    yield check.class_name
    yield check.name.lower()
    yield from check.aliases


def register(check: Check, *, replace: bool = False, listed: bool = True) -> Check:
    """Make ``check`` available by name to the library and the CLI.

    An unlisted check is found by its names but stays out of :func:`all_checks`, the default set of
    commands that run "every check" (the bundled benchmark has no tuples of it).
    """
    for key in _keys(check):
        owner = _NAMES.get(key.lower())
        if owner is not None and not replace and owner.declaration() != check.declaration():
            raise CheckDeclarationError(f"name {key!r} already belongs to check {owner.name}")
    if listed:
        _CHECKS[check.name] = check
    for key in _keys(check):
        _NAMES[key.lower()] = check
    return check


def get_check(name: str | Check) -> Check:
    if isinstance(name, Check):
        return name
    found = _NAMES.get(name.strip().lower().removesuffix(".jsonl"))
    if found is None:
        found = _chain(name)
    if found is None:
        import difflib

        known = ", ".join(sorted({c.aliases[0] if c.aliases else c.name.lower() for c in _CHECKS.values()}))
        close = difflib.get_close_matches(name.strip().lower(), list(_NAMES), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UnknownCheckError(f"unknown check {name!r}{hint} (known checks: {known})")
    return found


def _chain(name: str) -> Check | None:
    """``MONOTONE4``, ``PARTITION5``, ``CDF_THRESHOLDS2`` and the like: declared and registered on first use."""
    try:
        chain = chain_from_name(name)
        family = None if chain is not None else family_from_name(name)
    except ValueError as exc:
        raise UnknownCheckError(f"unknown check {name!r}: {exc}") from None
    if chain is not None:
        return register(chain)
    return None if family is None else register(family, listed=False)


def all_checks() -> list[Check]:
    return list(_CHECKS.values())


def check_for_fields(fields: Iterable[str]) -> Check | None:
    """The registered check whose field names are exactly ``fields`` (ignoring ``metadata``)."""
    wanted = set(fields) - {"metadata"}
    for check in dict.fromkeys(_NAMES.values()):  # unlisted checks too (COMBINATION), in registration order
        if set(check.field_names) == wanted:
            return check
    family = family_from_fields(wanted)  # PARTITION<k>, CDF_THRESHOLDS<k>: registered on first use, as by name
    return None if family is None else register(family, listed=False)


for _check in BUILTIN_CHECKS:
    register(_check)
register(COMBINATION, listed=False)  # ForecastBench's combination questions: by name, not in the default set
for _check in CATEGORICAL_CHECKS:  # no bundled tuples yet: by name, not in the default set
    register(_check, listed=False)
