"""Reading the template instantiator's titles back into formulas, for scripted forecasters that reason.

A template-made field quotes its base questions' titles (“...”) inside a fixed sentence ("Will “A”
resolve NO?", "Given that “A” resolves YES, will “B” resolve YES?"). :func:`parse_title` turns such
a title into a :class:`~consistency.checks.logic.Formula` whose atoms are the innermost titles, so a
scripted rule can answer every field of a tuple from one joint distribution: a perfectly coherent
forecaster, and coherent ones with a weakness planted in a known region.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from functools import lru_cache

from consistency.checks.logic import And, Formula, Given, Not, Or, Var

OPEN, CLOSE = "\u201c", "\u201d"
#: Appended by the deterministic ``detail`` mutation of :mod:`consistency.attack`; it changes nothing.
DETAIL_MARK = " (Background, irrelevant to the resolution: "
_MAX_ATOMS = 12
_SLOT = re.compile(r"^\u00a7(\d+)$")
_SIMPLE = re.compile(r"^\u00a7(\d+) resolves? (YES|NO)$")
_WRAPPERS = (
    re.compile(r"^Will the following question resolve YES: \u00a7(\d+)\?$"),
    re.compile(r"^Is the answer to \u00a7(\d+) YES\?$"),
)


def split_quotes(text: str) -> tuple[str, list[str]] | None:
    """The text with each top-level “quoted” part replaced by ``§i``, and those parts (None if unbalanced)."""
    skeleton, parts, depth, start = [], [], 0, 0
    for i, ch in enumerate(text):
        if ch == OPEN:
            if depth == 0:
                start = i + 1
            depth += 1
        elif ch == CLOSE:
            depth -= 1
            if depth < 0:
                return None
            if depth == 0:
                skeleton.append(f"\u00a7{len(parts)}")
                parts.append(text[start:i])
        elif depth == 0:
            skeleton.append(ch)
    return ("".join(skeleton), parts) if depth == 0 else None


def strip_detail(title: str) -> str:
    """The title without an irrelevant-detail suffix added by the ``detail`` mutation."""
    cut = title.find(DETAIL_MARK)
    return title[:cut] if cut > 0 and title.endswith(")") else title


@lru_cache(maxsize=65536)
def parse_title(title: str) -> Formula:
    """The formula a title states over base titles; a title no template wrote is an atom (``Var``)."""
    title = strip_detail(title.strip())
    split = split_quotes(title)
    if split is None or not split[1]:
        return Var(title)
    skeleton, parts = split
    slots = [parse_title(p) for p in parts]
    found = _formula(skeleton, slots)
    return found if found is not None else Var(title)


def _formula(skeleton: str, slots: list[Formula]) -> Formula | None:
    for wrapper in _WRAPPERS:
        if match := wrapper.match(skeleton):
            return slots[int(match.group(1))]
    if skeleton.startswith("Given that ") and skeleton.endswith("?") and ", will " in skeleton:
        condition, _, outcome = skeleton[len("Given that ") : -1].partition(", will ")
        cond, out = _clause(condition, slots), _clause(outcome, slots)
        return Given(out, cond) if cond is not None and out is not None else None
    if skeleton.startswith("Will ") and skeleton.endswith("?"):
        return _clause(skeleton[len("Will ") : -1], slots)
    return None


def _items(text: str, slots: list[Formula]) -> list[Formula] | None:
    names = [n.strip() for n in re.split(r", | and ", text)]
    matches = [_SLOT.match(n) for n in names]
    return [slots[int(m.group(1))] for m in matches] if all(matches) else None  # type: ignore[union-attr]


def _clause(text: str, slots: list[Formula]) -> Formula | None:
    if match := _SIMPLE.match(text):
        inner = slots[int(match.group(1))]
        return inner if match.group(2) == "YES" else Not(inner)
    for prefix, kind in (("both ", And), ("all of ", And), ("at least one of ", Or)):
        if text.startswith(prefix):
            body = re.sub(r" resolves? YES$", "", text[len(prefix) :])
            items = _items(body, slots) if body != text[len(prefix) :] else None
            return kind(tuple(items)) if items else None
    for word, kind in ((" and ", And), (" or ", Or)):
        pieces = text.split(word)
        if len(pieces) > 1:
            parsed = [_clause(p, slots) for p in pieces]
            if all(p is not None for p in parsed):
                return kind(tuple(parsed))  # type: ignore[arg-type]
    return None


def probability(formula: Formula, atom: Callable[[str], float]) -> float:
    """P(formula) when the atoms are independent events with probabilities ``atom(title)``; a
    conditional formula gets P(outcome | condition). Too many atoms: the first atom's probability."""
    names = sorted(formula.atoms())
    if len(names) > _MAX_ATOMS:
        return atom(names[0])
    probs = [atom(n) for n in names]
    yes = resolved = 0.0
    for values in itertools.product((True, False), repeat=len(names)):
        weight = 1.0
        for p, v in zip(probs, values, strict=True):
            weight *= p if v else 1.0 - p
        truth = formula.evaluate(dict(zip(names, values, strict=True)))
        if truth is not None:
            resolved += weight
            yes += weight * truth
    return yes / resolved if resolved > 0 else atom(names[0])


def negated_inner(title: str) -> str | None:
    """The quoted title of a plain negation (“Will “X” resolve NO?”), else None."""
    split = split_quotes(strip_detail(title.strip()))
    if split is None or split[0] != "Will \u00a70 resolve NO?":
        return None
    return split[1][0]
