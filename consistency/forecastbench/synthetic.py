"""Made-up ForecastBench files in the published shapes: for the bundled sample, benchmarks and tests.

A round is a question set and its resolution set, the way ForecastBench writes them: market
questions (manifold, metaculus, polymarket, infer) and dataset questions (acled, dbnomics, fred,
wikipedia, yfinance) at every horizon, ``{resolution_date}``/``{forecast_due_date}`` placeholders,
freeze values, resolution rows for the horizons already past, markets resolved or carrying their
current value; older rounds may hold combination questions. The text is ours and the numbers are
drawn: each row has a latent probability, outcomes are drawn from it, and :func:`forecast_set`
makes forecasters of any skill from the same latent values. :class:`Shape` holds the counts; its
defaults were measured from ForecastBench's 2025-10-26 round (:func:`shape_of` measures any round).

``python -m consistency.forecastbench.synthetic`` rewrites the bundled sample
(``consistency/datasets/forecastbench/``) identically.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, timedelta
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from .formats import DATASET_SOURCES, HORIZONS, MARKET_SOURCES, is_market

_THINGS = (
    "the river port", "the northern grid", "the city council", "the harbour index", "the wheat harvest",
    "the metro line", "the regional bank", "the solar auction", "the coastal survey", "the tram strike",
)  # fmt: skip
_EVENTS = ("announce a merger", "miss its target", "publish the report", "hold a referendum", "reach a record",
           "change its chair", "open the new terminal", "settle the dispute")  # fmt: skip
_SERIES = {"acled": "reported protest events in {place}", "dbnomics": "the daily mean temperature at {place}",
           "fred": "the {place} lending rate", "wikipedia": "the listed population of {place}",
           "yfinance": "the closing price of {place} shares"}  # fmt: skip
_PLACES = ("Avonmere", "Brasca", "Corlin", "Dunvale", "Esterby", "Falkrath", "Gorsemoor", "Hollin", "Istra", "Jarrow")


@dataclass(frozen=True)
class Shape:
    """How many of what a round holds, and how much of it has resolved."""

    markets: dict[str, int] = field(
        default_factory=lambda: {"manifold": 77, "metaculus": 76, "polymarket": 76, "infer": 21}
    )
    datasets: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DATASET_SOURCES, 50))
    market_rows: float = 0.924  # share of market questions with a resolution-set row
    market_resolved: float = 0.485  # share of those rows resolved
    combinations: int = 0  # combination questions per source (sets up to 2025-08-31)


def shape_of(question_set: dict[str, Any], resolution_set: dict[str, Any]) -> Shape:
    """The shape of a published round (question and resolution set documents)."""
    per = Counter(q["source"] for q in question_set["questions"] if not isinstance(q["id"], list))
    combos = Counter(q["source"] for q in question_set["questions"] if isinstance(q["id"], list))
    rows = [r for r in resolution_set["resolutions"] if not isinstance(r["id"], list) and is_market(r["source"])]
    n_market = sum(per[s] for s in MARKET_SOURCES)
    return Shape(
        {s: per[s] for s in MARKET_SOURCES},
        {s: per[s] for s in DATASET_SOURCES},
        len(rows) / max(n_market, 1),
        sum(r["resolved"] for r in rows) / max(len(rows), 1),
        max(combos.values(), default=0),
    )


@dataclass
class Round:
    question_set: dict[str, Any]
    resolution_set: dict[str, Any]
    latent: dict[tuple, float]  # (id, source, resolution date or None) -> the probability outcomes were drawn from


def _market(source: str, i: int, due: date, rng: np.random.Generator) -> dict[str, Any]:
    thing, event = _THINGS[i % len(_THINGS)], _EVENTS[(i // len(_THINGS)) % len(_EVENTS)]
    close = due + timedelta(days=int(rng.integers(20, 400)))
    return {
        "id": f"{source[:3]}{due:%y%m%d}{i:04d}", "source": source,
        "question": f"Will {thing} {event} by {close.isoformat()}?",
        "resolution_criteria": f"Resolves as the {source.title()} market on this question resolves.",
        "background": f"A made-up market about {thing}, for examples and tests.",
        "market_info_open_datetime": f"{(due - timedelta(days=90)).isoformat()}T00:00:00+00:00",
        "market_info_close_datetime": f"{close.isoformat()}T00:00:00+00:00",
        "market_info_resolution_criteria": "N/A", "url": f"https://example.org/{source}/{i}",
        "freeze_datetime": f"{(due - timedelta(days=10)).isoformat()}T00:00:00+00:00",
        "freeze_datetime_value": "", "freeze_datetime_value_explanation": "The market value.",
        "source_intro": f"A prediction market on {source.title()}; predict whether it resolves Yes.",
        "resolution_dates": "N/A",
    }  # fmt: skip


def _dataset(source: str, i: int, due: date, rng: np.random.Generator) -> dict[str, Any]:
    place = _PLACES[i % len(_PLACES)] + ("" if i < len(_PLACES) else f" {i // len(_PLACES) + 1}")
    series = _SERIES[source].format(place=place)
    return {
        "id": f"{source}-{i:04d}", "source": source,
        "question": f"Will {series} be higher on {{resolution_date}} than on {{forecast_due_date}}?\n\n"
                    "Compare the last published values on or before each date.",
        "resolution_criteria": f"Resolves from the published {source} data.",
        "background": f"A made-up series ({series}), for examples and tests.",
        "market_info_open_datetime": "N/A", "market_info_close_datetime": "N/A",
        "market_info_resolution_criteria": "N/A", "url": f"https://example.org/{source}",
        "freeze_datetime": f"{(due - timedelta(days=10)).isoformat()}T00:00:00+00:00",
        "freeze_datetime_value": f"{rng.uniform(1, 100):.2f}",
        "freeze_datetime_value_explanation": f"The latest value of {series}.",
        "source_intro": f"Questions built from {source} data; predict how they resolve.",
        "resolution_dates": [(due + timedelta(days=h)).isoformat() for h in HORIZONS],
    }  # fmt: skip


def make_round(due: date, as_of: date, shape: Shape = Shape(), seed: int = 0) -> Round:
    """One round due ``due``, resolved as ForecastBench would have published it on ``as_of``."""
    rng = np.random.default_rng([seed, due.toordinal()])
    questions, rows, latent = [], [], {}
    last = (as_of - timedelta(days=1)).isoformat()
    for source, n in shape.markets.items():
        for i in range(n):
            q = _market(source, i, due, rng)
            p = float(rng.beta(0.6, 0.6))
            q["freeze_datetime_value"] = f"{float(np.clip(p + rng.normal(0, 0.15), 0.01, 0.99)):.4f}"
            questions.append(q)
            latent[(q["id"], source, None)] = p
            if rng.random() < shape.market_rows:
                resolved = bool(rng.random() < shape.market_resolved)
                value = float(rng.random() < p) if resolved else round(float(np.clip(p + rng.normal(0, 0.1), 0, 1)), 4)
                when = min(due + timedelta(days=int(rng.integers(5, 60))), as_of - timedelta(days=1))
                rows.append({"id": q["id"], "source": source, "direction": None,
                             "resolution_date": when.isoformat() if resolved else last,
                             "resolved_to": value, "resolved": resolved})  # fmt: skip
    for source, n in shape.datasets.items():
        for i in range(n):
            q = _dataset(source, i, due, rng)
            questions.append(q)
            base = float(rng.uniform(0.2, 0.8))
            for day in q["resolution_dates"]:
                p = float(np.clip(base + rng.normal(0, 0.1), 0.02, 0.98))
                latent[(q["id"], source, day)] = p
                if day <= last:
                    rows.append({"id": q["id"], "source": source, "direction": None, "resolution_date": day,
                                 "resolved_to": float(rng.random() < p), "resolved": True})  # fmt: skip
    questions += _combinations(questions, rows, shape.combinations, rng)
    name = f"{due.isoformat()}-llm.json"
    qset = {"forecast_due_date": due.isoformat(), "question_set": name, "questions": questions}
    rset = {"forecast_due_date": due.isoformat(), "question_set": name, "resolutions": rows}
    return Round(qset, rset, latent)


def _combinations(questions: list[dict], rows: list[dict], per_source: int, rng: np.random.Generator) -> list[dict]:
    """Combination questions in the format of sets up to 2025-08-31, with their resolution rows."""
    out = []
    outcome = {(r["id"], r["source"], None if is_market(r["source"]) else r["resolution_date"]): r for r in rows}
    for source in (*MARKET_SOURCES, *DATASET_SOURCES):
        pool = [q for q in questions if q["source"] == source]
        for _ in range(min(per_source, len(pool) // 2)):
            a, b = (pool[i] for i in rng.choice(len(pool), 2, replace=False))
            parts = [{**a, "resolution_dates": "N/A"}, {**b, "resolution_dates": "N/A"}]
            out.append({
                "id": [a["id"], b["id"]], "source": source, "combination_of": parts,
                "question": "Two questions follow: give the probability of each way they can resolve together.",
                "resolution_criteria": "N/A", "background": "N/A", "market_info_open_datetime": "N/A",
                "market_info_close_datetime": "N/A", "market_info_resolution_criteria": "N/A", "url": "N/A",
                "freeze_datetime": a["freeze_datetime"], "freeze_datetime_value": "N/A",
                "freeze_datetime_value_explanation": "N/A", "source_intro": "N/A",
                "resolution_dates": a["resolution_dates"],
            })  # fmt: skip
            days = a["resolution_dates"] if isinstance(a["resolution_dates"], list) else [None]
            for day in days:
                ra, rb = outcome.get((a["id"], source, day)), outcome.get((b["id"], source, day))
                if not (ra and rb and ra["resolved"] and rb["resolved"]):
                    continue
                for d in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
                    value = _signed(ra["resolved_to"], d[0]) * _signed(rb["resolved_to"], d[1])
                    rows.append({"id": [a["id"], b["id"]], "source": source, "direction": list(d),
                                 "resolution_date": day or max(ra["resolution_date"], rb["resolution_date"]),
                                 "resolved_to": value, "resolved": True})  # fmt: skip
    return out


def _signed(value: float, direction: int) -> float:
    return value if direction == 1 else 1.0 - value


def forecast_set(
    rnd: Round, organization: str, model: str, *, noise: float, seed: int = 0, coverage: float = 1.0
) -> dict[str, Any]:
    """A forecaster's submission for ``rnd``: the latent probability plus noise of ``noise`` in log-odds."""
    rng = np.random.default_rng([seed, sum(model.encode())])
    rows = []
    for (qid, source, day), p in rnd.latent.items():
        if rng.random() >= coverage:
            continue
        logit = np.log(p / (1 - p)) + rng.normal(0, noise) if 0 < p < 1 else 0.0
        rows.append({"id": qid, "source": source, "forecast": round(float(1 / (1 + np.exp(-logit))), 4),
                     "resolution_date": day, "direction": None})  # fmt: skip
    return {"organization": organization, "model": model, "model_organization": organization,
            "question_set": rnd.question_set["question_set"], "forecasts": rows}  # fmt: skip


def write_round(rnd: Round, root: str | Path) -> tuple[Path, Path]:
    """``root/question_sets/<due>-llm.json`` and ``root/resolution_sets/<due>_resolution_set.json``."""
    root = Path(root)
    due = rnd.question_set["forecast_due_date"]
    qpath = root / "question_sets" / f"{due}-llm.json"
    rpath = root / "resolution_sets" / f"{due}_resolution_set.json"
    for path, doc in ((qpath, rnd.question_set), (rpath, rnd.resolution_set)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return qpath, rpath


# ---------------------------------------------------------------------------------------------- the sample

SAMPLE_SHAPE = Shape(
    {"manifold": 3, "metaculus": 3, "polymarket": 2, "infer": 2}, {"acled": 1, "fred": 1, "yfinance": 1},
    market_rows=0.9, market_resolved=0.7, combinations=1,
)  # fmt: skip
SAMPLE_ROUNDS = (date(2026, 3, 1), date(2026, 11, 15))  # an older round (with combinations) and the latest
SAMPLE_AS_OF = date(2026, 11, 20)


def sample_dir() -> Path:
    """The bundled sample: ``question_sets/``, ``resolution_sets/`` and ``latest-llm.json``."""
    return Path(str(files("consistency.datasets").joinpath("forecastbench")))


def make_sample(root: Path) -> list[Path]:
    written = []
    for i, due in enumerate(SAMPLE_ROUNDS):
        shape = SAMPLE_SHAPE if i == 0 else Shape(SAMPLE_SHAPE.markets, SAMPLE_SHAPE.datasets, 0.9, 0.2)
        written += write_round(make_round(due, SAMPLE_AS_OF, shape, seed=7), root)
    pointer = root / "question_sets" / "latest-llm.json"
    pointer.write_text(f"{SAMPLE_ROUNDS[-1].isoformat()}-llm.json\n", encoding="utf-8")
    return [*written, pointer]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Rewrite the bundled ForecastBench-format sample.")
    parser.add_argument("--out", type=Path, default=None, help="Folder (default: the bundled sample's).")
    args = parser.parse_args(argv)
    for path in make_sample(args.out or sample_dir()):
        print(path)


if __name__ == "__main__":
    main()
