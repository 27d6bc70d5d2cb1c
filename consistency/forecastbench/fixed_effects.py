"""ForecastBench's published question fixed effects: its difficulty scale, to place a forecaster on.

ForecastBench writes ``question_fixed_effects.<date>.<leaderboard>.json``: records of
``forecast_due_date``, ``source``, ``id``, ``horizon`` (null for market questions),
``leaderboard_type`` and ``question_fixed_effect`` (γ_j), one per question of its leaderboard. With
them a forecaster's rescaled score on a part is the mean over its rows of b − γ_j plus the mean of
γ_j over all of the file's questions of that part: what its leaderboard would give a forecaster with
those rows (Always 0.5 answers every question there, so the shift that makes it 0.25 is that mean).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..jsonl import parse_json
from .formats import ForecastBenchError, is_market, load_document
from .keys import RowKey

FeKey = tuple[str, str, str, int | None]


def fe_key(key: RowKey) -> FeKey:
    return (key.due, key.source, key.ids[0], key.horizon)


@dataclass
class FixedEffects:
    file: str
    gamma: dict[FeKey, float] = field(default_factory=dict)
    leaderboard: str | None = None

    def shift(self, market: bool) -> float:
        """Mean γ over the file's questions of one part: the rescaling its leaderboard applies."""
        values = [g for k, g in self.gamma.items() if is_market(k[1]) == market]
        if not values:
            part = "market" if market else "dataset"
            raise ForecastBenchError(f"{self.file}: no {part} questions in this fixed-effects file")
        return math.fsum(values) / len(values)


def _horizon(value: Any) -> int | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return int(float(value))


def read_fixed_effects(path: str | Path) -> FixedEffects:
    """A fixed-effects file (a JSON list of records, as ForecastBench writes it)."""
    if not Path(path).is_file():
        raise ForecastBenchError(f"{path}: no such file")
    raw = Path(path).read_bytes()
    if raw.lstrip()[:1] == b"[":
        try:
            records: Any = parse_json(raw)
        except ValueError as exc:
            raise ForecastBenchError(f"{path}: not JSON ({exc})") from None
    else:
        doc = load_document(path)  # names a Git LFS pointer or a broken file
        records = doc.get("records", doc.get("data"))
    if not isinstance(records, list):
        raise ForecastBenchError(f"{path}: expected a list of question fixed effects")
    out = FixedEffects(str(path))
    kinds = set()
    for i, r in enumerate(records):
        try:
            key = (str(r["forecast_due_date"])[:10], str(r["source"]).lower(), str(r["id"]), _horizon(r.get("horizon")))
            value = float(r["question_fixed_effect"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ForecastBenchError(f"{path}: record {i}: {exc!r} (expected forecast_due_date, source, id, "
                                     "horizon, question_fixed_effect)") from None  # fmt: skip
        if not math.isfinite(value):
            raise ForecastBenchError(f"{path}: record {i}: question_fixed_effect is not a number")
        kinds.add(r.get("leaderboard_type"))
        out.gamma[key] = value
    if len(kinds - {None}) > 1:
        raise ForecastBenchError(
            f"{path}: holds the fixed effects of several leaderboards ({', '.join(sorted(map(str, kinds - {None})))}); "
            "give the file of one"
        )
    out.leaderboard = next(iter(kinds - {None}), None)
    if not out.gamma:
        raise ForecastBenchError(f"{path}: holds no question fixed effects")
    return out


def records(keys: Iterable[RowKey], gamma: Iterable[float], leaderboard: str = "local") -> list[dict[str, Any]]:
    """Fixed effects in ForecastBench's layout (what :func:`read_fixed_effects` reads)."""
    return [
        {
            "forecast_due_date": k.due,
            "source": k.source,
            "id": k.ids[0],
            "horizon": k.horizon,
            "leaderboard_type": leaderboard,
            "question_fixed_effect": float(g),
        }
        for k, g in zip(keys, gamma, strict=True)
    ]
