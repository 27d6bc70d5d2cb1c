"""Checks over multiple-choice and numeric questions, declared like the others over a categorical base X.

- PARTITION<k> (k = 2 … 10): the k options of one multiple-choice question asked as k yes/no questions
  ``P_i`` = "will the outcome be option i?". Exactly one is true in each world (one-hot worlds), so the forecasts
  must sum to 1.
- MC_BINARY: a multiple-choice question ``X`` and a yes/no question ``P`` = "will the outcome be one of the options
  S?" (one option or a union). The check sees ``X`` as two outcomes, S (``X[0]``) and the rest (``X[1]``): the tuple
  says which options S holds (``P``'s ``metadata.outcome_event``). Condition ``X[0] == P``.
- CDF_THRESHOLDS<k> (k = 1 … 8; CDF_THRESHOLDS is k = 3): a numeric question ``X`` binned at k thresholds
  t_1 < … < t_k and the yes/no questions ``T_j`` = "will X be greater than t_j?". ``X[b]`` is the mass between
  t_b and t_{b+1} (``X[0]`` below t_1, ``X[k]`` above t_k), so ``T_j == X[j] + … + X[k]``; the worlds allow only
  T_k ⇒ … ⇒ T_1, the threshold questions' own MONOTONE chain.
- NUMERIC_PARAPHRASE: two wordings ``X`` and ``para_X`` of one numeric question on the same range: both categorical
  over the 202 bins of the grid, equal in every world; condition: equal CDFs.

Worlds, the arbitrage and frequentist metrics, repair and resolution propagation follow from these declarations
as for every check (:mod:`consistency.metrics.categorical` has the closed forms).
"""

from __future__ import annotations

import re
from functools import cache

from ..distributions import BINS
from .check import NUMERIC, Check

PARTITION_SIZES = (2, 10)
THRESHOLD_COUNTS = (1, 8)
DEFAULT_THRESHOLDS = 3


def partition_fields(k: int) -> tuple[str, ...]:
    return tuple(f"P_{i}" for i in range(1, k + 1))


def threshold_fields(k: int) -> tuple[str, ...]:
    return tuple(f"T_{j}" for j in range(1, k + 1))


@cache
def partition_check(k: int) -> Check:
    """PARTITION<k>: option i of the source question is outcome i - 1 of the base X."""
    lo, hi = PARTITION_SIZES
    if not lo <= k <= hi:
        raise ValueError(f"a PARTITION has {lo} to {hi} questions, got {k}")
    return Check(
        f"PARTITION{k}",
        {name: f"X == {i}" for i, name in enumerate(partition_fields(k))},
        class_name=f"Partition{k}Checker",
        aliases=(f"partition{k}", f"part{k}"),
        outcomes={"X": k},
        description=f"The {k} options of one multiple-choice question asked one by one: exactly one comes true.",
    )


MC_BINARY = Check(
    "MC_BINARY",
    {"X": "X", "P": "X == 0"},
    class_name="McBinaryChecker",
    aliases=("mcbin", "mc_binary"),
    outcomes={"X": 2},
    description="A multiple-choice question and the yes/no question for one of its options or a union of them.",
)


@cache
def cdf_thresholds_check(k: int = DEFAULT_THRESHOLDS) -> Check:
    """CDF_THRESHOLDS<k>: bin b of X lies between thresholds b and b + 1; T_j is "X above threshold j"."""
    lo, hi = THRESHOLD_COUNTS
    if not lo <= k <= hi:
        raise ValueError(f"a CDF_THRESHOLDS check has {lo} to {hi} thresholds, got {k}")
    names = threshold_fields(k)
    suffix = "" if k == DEFAULT_THRESHOLDS else str(k)
    above = [" + ".join(f"X[{b}]" for b in range(j, k + 1)) for j in range(1, k + 1)]
    return Check(
        f"CDF_THRESHOLDS{suffix}",
        {"X": "X", **{name: f"X >= {j}" for j, name in enumerate(names, start=1)}},
        class_name=f"CdfThresholds{suffix}Checker",
        aliases=(f"cdf{suffix}", f"cdf_thresholds{suffix}"),
        outcomes={"X": k + 1},
        kinds={"X": NUMERIC},
        condition=tuple(f"{name} == {mass}" for name, mass in zip(names, above, strict=True)),
        description=f"A numeric forecast against the yes/no questions at {k} thresholds of the same quantity.",
    )


NUMERIC_PARAPHRASE = Check(
    "NUMERIC_PARAPHRASE",
    {"X": "X", "para_X": "X"},
    class_name="NumericParaphraseChecker",
    aliases=("numpara", "numeric_paraphrase"),
    outcomes={"X": BINS},
    kinds={"X": NUMERIC},
    condition="X == para_X",
    description="Two wordings of one numeric question: the same distribution.",
)

CDF_THRESHOLDS = cdf_thresholds_check(DEFAULT_THRESHOLDS)

_FAMILIES = (
    (re.compile(r"^(?:partition|part)(\d+)(?:checker)?$"), partition_check),
    (re.compile(r"^(?:cdf_thresholds|cdfthresholds|cdf)(\d+)(?:checker)?$"), cdf_thresholds_check),
)


def family_from_name(name: str) -> Check | None:
    """``PARTITION4``/``Partition4Checker``/``part4``, ``CDF_THRESHOLDS5``/``cdf5`` → that check; None: no such name."""
    key = name.strip().lower().removesuffix(".jsonl")
    for pattern, factory in _FAMILIES:
        m = pattern.match(key)
        if m:
            return factory(int(m.group(1)))
    return None


def family_from_fields(fields: set[str]) -> Check | None:
    """The PARTITION<k> or CDF_THRESHOLDS<k> whose field names are exactly ``fields``; None: neither."""
    lo, hi = PARTITION_SIZES
    for k in range(lo, hi + 1):
        if fields == set(partition_fields(k)):
            return partition_check(k)
    lo, hi = THRESHOLD_COUNTS
    for k in range(lo, hi + 1):
        if fields == {"X", *threshold_fields(k)}:
            return cdf_thresholds_check(k)
    return None


@cache
def columns_check(check: Check) -> Check:
    """``check`` with each categorical field written as its outcomes' yes/no fields ``X_0`` … ``X_{m-1}``.

    Its fields are ``check``'s forecast columns and its worlds ``check``'s expanded worlds: the form a joint
    repair needs, where every column is a value of its own (a multi-class Brier score is the sum of its columns'
    Brier scores). A check with no categorical field is returned as it is."""
    if not check.categorical:
        return check
    fields: dict[str, str] = {}
    for name, text in check.fields.items():
        m = check.categorical.get(name)
        if m is None:
            fields[name] = text
            continue
        base = check.formulas[name].name  # type: ignore[attr-defined]
        fields.update({f"{name}_{o}": f"{base} == {o}" for o in range(m)})
    return Check(
        check.name, fields, class_name=check.class_name, outcomes=check.outcomes, description=check.description
    )


#: The categorical checks declared at import (longer PARTITIONs and CDF_THRESHOLDS come by name).
CATEGORICAL_CHECKS = (MC_BINARY, CDF_THRESHOLDS, NUMERIC_PARAPHRASE)
