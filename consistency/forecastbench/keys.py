"""What identifies one forecast in ForecastBench, and our question ids that carry it.

A forecast is for one row of a question set exploded by resolution date and direction: a market
question once, a dataset question once per resolution date, a combination once per direction
(and date). :class:`RowKey` is that identity; :func:`question_id` writes it into our question id
(``fb:<due>:<source>:<id>[:<resolution date>][:<direction>]``, ids percent-quoted so the separators
stay unambiguous) and :func:`key_of` reads it back, so any result that names a question (a run's
journal, a tuple's fields, a ground-truth line) maps back to ForecastBench without a lookup.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from urllib.parse import quote, unquote

from .formats import is_market

PREFIX = "fb"
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DIRECTION = re.compile(r"^[+-][+-]$")
_PLAIN = re.compile(r"[A-Za-z0-9._~-]+")  # ids quote() leaves alone (all of ForecastBench's so far)


def _quote(text: str) -> str:
    return text if _PLAIN.fullmatch(text) else quote(text, safe="._-~")


def _unquote(text: str) -> str:
    return unquote(text) if "%" in text else text


@dataclass(frozen=True, order=True, slots=True)
class RowKey:
    due: str  # forecast due date, YYYY-MM-DD
    source: str
    ids: tuple[str, ...]  # one id, or two for a combination
    resolution_date: str | None = None  # dataset questions only
    direction: tuple[int, ...] | None = None  # combinations only
    _hash: int = field(init=False, repr=False, compare=False, default=0)
    market: bool = field(init=False, repr=False, compare=False, default=False)  # a market question's row

    def __post_init__(self) -> None:
        # Keys are looked up by the hundred thousand (rows × forecasters): hash the fields once.
        object.__setattr__(self, "_hash", hash((self.due, self.source, self.ids, self.resolution_date, self.direction)))
        object.__setattr__(self, "market", is_market(self.source))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, RowKey) or self._hash != other._hash:
            return False
        return (self.due, self.source, self.ids, self.resolution_date, self.direction) == (
            other.due, other.source, other.ids, other.resolution_date, other.direction
        )  # fmt: skip

    @property
    def combination(self) -> bool:
        return len(self.ids) > 1

    @property
    def horizon(self) -> int | None:
        """Days from the due date to the resolution date (dataset questions), as ForecastBench counts them."""
        if self.resolution_date is None:
            return None
        return (date.fromisoformat(self.resolution_date) - date.fromisoformat(self.due)).days

    @property
    def fb_id(self) -> str | list[str]:
        """The ``id`` field as ForecastBench writes it."""
        return self.ids[0] if len(self.ids) == 1 else list(self.ids)

    @property
    def question_pk(self) -> str:
        """ForecastBench's leaderboard key: ``due_source_id_horizon`` (dataset) or ``due_source_id`` (market)."""
        base = f"{self.due}_{self.source}_{self.ids[0]}"
        return base if self.market else f"{base}_{self.horizon}"

    def single(self, i: int) -> RowKey:
        """The key of the i-th question of a combination, at the same date."""
        return RowKey(self.due, self.source, (self.ids[i],), None if is_market(self.source) else self.resolution_date)


#: Keys read back from ids (and written into them): one RowKey object per id.
_KNOWN: dict[str, RowKey] = {}
#: One RowKey object per row, whichever file named it (a question set, a resolution set, a forecast set), so
#: the lookups that join them (hundreds of thousands per leaderboard) compare by identity, and a forecast
#: set's rows add no objects of their own.
_CANONICAL: dict[tuple[str, str, tuple[str, ...], str | None, tuple[int, ...] | None], RowKey] = {}
_LIMIT = 1 << 20


def _remember(qid: str, key: RowKey) -> RowKey:
    key = canonical(key)
    if len(_KNOWN) >= _LIMIT:
        _KNOWN.clear()
    _KNOWN[qid] = key
    return key


def canonical(key: RowKey) -> RowKey:
    """The one object of ``key``'s row (``key`` itself when it is the first met)."""
    fields = (key.due, key.source, key.ids, key.resolution_date, key.direction)
    found = _CANONICAL.get(fields)
    if found is not None:
        return found
    if len(_CANONICAL) >= _LIMIT:
        _CANONICAL.clear()
    _CANONICAL[fields] = key
    return key


def make_key(
    due: str, source: str, ids: tuple[str, ...], day: str | None = None, direction: tuple[int, ...] | None = None
) -> RowKey:
    """``RowKey(due, source, ids, day, direction)``, the row's one object (made only when first met)."""
    found = _CANONICAL.get((due, source, ids, day, direction))
    return found if found is not None else canonical(RowKey(due, source, ids, day, direction))


def question_id(key: RowKey) -> str:
    parts = [PREFIX, key.due, key.source, "+".join(_quote(i) for i in key.ids)]
    if key.resolution_date is not None:
        parts.append(key.resolution_date)
    if key.direction is not None:
        parts.append("".join("+" if d > 0 else "-" for d in key.direction))
    qid = ":".join(parts)
    _remember(qid, key)
    return qid


def key_of(qid: str) -> RowKey | None:
    """The key a question id of ours carries; None for any other id (a tuple's derived question, say)."""
    known = _KNOWN.get(qid)
    if known is not None:
        return known
    parts = qid.split(":")
    if len(parts) < 4 or parts[0] != PREFIX or not _DAY.match(parts[1]):
        return None
    due, source, ids, rest = parts[1], parts[2], tuple(_unquote(i) for i in parts[3].split("+")), parts[4:]
    direction = None
    if rest and _DIRECTION.match(rest[-1]):
        direction = tuple(1 if c == "+" else -1 for c in rest.pop())
    day = rest.pop(0) if rest and _DAY.match(rest[0]) else None
    if rest or (direction is not None) != (len(ids) == 2) or len(ids) > 2:
        return None
    return _remember(qid, make_key(due, source, ids, day, direction))
