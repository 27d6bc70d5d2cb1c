"""What an attack found, against uniform sampling at the same budget, and which families paid off.

``summarize`` makes the numbers (kept in ``attack.json``, read by ``cc report``); ``write_outputs``
writes the returned tuples and the search log; ``render_markdown`` is the text of ``report.md``.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import distributions as dist
from ..checks import get_check
from ..jsonl import atomic_write, dump_line
from ..metrics.scoring import score_forecasts
from ..models import ForecastingQuestion
from ..store import layout
from ..store.records import AttackSummary, TopTuple
from .families import bases_of
from .mutations import Lineage

if TYPE_CHECKING:
    from ..llm.accounting import RunStats
    from .search import Evaluated, Search

TOP_SHOWN = 5
#: A categorical field with more columns than this (a numeric question's grid) is shown by its quartiles.
SHOWN_COLUMNS = 12
QUARTILES = (0.25, 0.5, 0.75)


def _stats(values: list[float], threshold: float) -> dict[str, Any]:
    if not values:
        return {"n": 0, "mean": None, "max": None, "above_threshold": 0}
    arr = np.asarray(values)
    return {
        "n": len(values),
        "mean": float(arr.mean()),
        "max": float(arr.max()),
        "above_threshold": int((arr > threshold).sum()),
    }


def returned(search: Search, per_root: int = 1) -> list[Evaluated]:
    """The search's ``keep`` most violated scored tuples, worst first (ties: first found).

    Every weakness found is represented: the most violated tuple over each set of base questions (a
    variant counts as the pool question it was made from) comes first, then the next most violated."""
    scored = [e for e in search.evaluated if e.sampler == "search" and e.violation is not None]
    order = sorted(range(len(scored)), key=lambda i: (-(scored[i].violation or 0.0), i))
    threshold = search.options.params.arbitrage_threshold
    chosen: list[int] = []
    count: dict[frozenset[str], int] = defaultdict(int)
    for i in order:
        root = _root(scored[i])
        if (scored[i].violation or 0.0) > threshold and count[root] < per_root:
            count[root] += 1
            chosen.append(i)
    picked = set(chosen)
    chosen += [i for i in order if i not in picked]
    chosen = sorted(chosen[: search.options.keep], key=lambda i: (-(scored[i].violation or 0.0), i))
    return [scored[i] for i in chosen]


def _root(e: Evaluated) -> frozenset[str]:
    """The pool questions a tuple was made from (a variant counts as the question it came from)."""
    return frozenset(Lineage.of(q).root or q.id for q in bases_of(e.tuple).values())


def summarize(search: Search, target: RunStats, generator: RunStats | None, with_baseline: bool) -> dict[str, Any]:
    threshold = search.options.params.arbitrage_threshold
    found = returned(search)
    uniform = [e for e in search.evaluated if e.sampler == "baseline" and e.violation is not None]
    uniform_top = sorted((e.violation or 0.0 for e in uniform), reverse=True)[: search.options.keep]
    attack_mean = float(np.mean([e.violation for e in found])) if found else None
    random_mean = float(np.mean(uniform_top)) if uniform_top else None
    per_check: dict[str, dict[str, Any]] = {}
    for check in search.checks:
        per_check[check.name] = {
            "found": _stats([e.violation for e in found if e.check.name == check.name], threshold),  # type: ignore[misc]
            "searched": _stats(
                [
                    e.violation
                    for e in search.evaluated
                    if e.sampler == "search" and e.check.name == check.name and e.violation is not None
                ],
                threshold,
            ),  # type: ignore[misc]
            "uniform": _stats([e.violation for e in uniform if e.check.name == check.name], threshold),  # type: ignore[misc]
        }
    kept = {id(e) for e in found}
    families: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"tuples": 0, "forecasts": 0, "rejected": 0, "violations": [], "returned": 0}
    )
    for e in search.evaluated:
        if e.sampler != "search":
            continue
        row = families[e.family]
        row["tuples"] += 1
        row["forecasts"] += e.cost
        row["rejected"] += e.error is not None and e.error.startswith("verification")
        row["returned"] += id(e) in kept
        if e.violation is not None:
            row["violations"].append(e.violation)
    family_rows = {}
    for name, row in families.items():
        values = row.pop("violations")
        family_rows[name] = row | {
            "mean_violation": float(np.mean(values)) if values else None,
            "above_threshold": int(sum(v > threshold for v in values)),
        }
    return {
        "threshold": threshold,
        "budget": search.options.budget,
        "keep": search.options.keep,
        "rounds": search.rounds,
        "forecasts": {
            "search": search.used("search"),
            "baseline": search.used("baseline") if with_baseline else None,
            "asked_this_session": search.asked,
        },
        "target_llm": _llm(target),
        "generator_llm": _llm(generator) if generator is not None else None,
        "tuples_evaluated": sum(e.sampler == "search" for e in search.evaluated),
        "attack_mean_violation": attack_mean,
        "random_mean_violation": random_mean,
        "random_all_mean_violation": float(np.mean([e.violation for e in uniform])) if uniform else None,
        "attack_over_random": attack_mean / random_mean if attack_mean is not None and random_mean else None,
        "found_above_threshold": sum((e.violation or 0) > threshold for e in found),
        "per_check": per_check,
        "families": dict(sorted(family_rows.items(), key=lambda kv: -(kv[1]["mean_violation"] or 0))),
        "top": [_top_entry(e) for e in found[:TOP_SHOWN]],
    }


def _llm(stats: RunStats) -> dict[str, Any]:
    return {"calls": stats.calls, "cache_hits": stats.cache_hits, "cost": round(stats.cost, 6)}


def _top_entry(e: Evaluated) -> dict[str, Any]:
    """A most violated tuple: each field's title and forecast (a categorical field's in the check's columns)."""
    row = e.probs or []
    fields = []
    for f in e.check.field_names:
        where = e.check.column_slices[f]
        values = [float(v) for v in row[where]] if row else []
        entry: dict[str, Any] = {"field": f, "title": e.tuple[f]["title"]}
        if f in e.check.categorical and len(values) > SHOWN_COLUMNS:  # a whole grid: its quartiles say more
            entry["quantiles"] = _quartiles(e.tuple[f], (e.forecasts or {}).get(f) or {})
            entry["date"] = e.tuple[f].get("question_type") == "date"
        elif f in e.check.categorical:
            entry["columns"] = dict(zip(e.check.columns[where], values, strict=True))
        else:
            entry["prob"] = values[0] if values else None
        fields.append(entry)
    return {"check": e.check.name, "violation": e.violation, "family": e.family, "lineage": e.lineage, "fields": fields}


def _quartiles(question: dict[str, Any], forecast: dict[str, Any]) -> dict[str, float] | None:
    """A numeric forecast's quartiles in the question's unit (outside the range: the nearest bound)."""
    q = ForecastingQuestion.model_validate(question)
    if q.range is None or "cdf" not in forecast:
        return None
    where = np.interp(QUARTILES, np.asarray(forecast["cdf"], dtype=float), dist.locations())
    return {f"{p:g}": float(v) for p, v in zip(QUARTILES, q.range.value(where), strict=True)}


def write_outputs(search: Search, out: Path, summary: dict[str, Any]) -> list[Evaluated]:
    found = returned(search)
    by_check: dict[str, list[Evaluated]] = defaultdict(list)
    for e in found:
        by_check[e.check.class_name].append(e)
    for sub in (layout.TUPLES_DIR, layout.FORECASTS_DIR):
        (out / sub).mkdir(parents=True, exist_ok=True)
        for stale in layout.forecast_files_in(out / sub):
            if stale.stem not in by_check:
                stale.unlink()
    for name, items in by_check.items():
        check = get_check(name)
        scores = score_forecasts(check, [e.probs for e in items], params=search.options.params)
        with atomic_write(out / layout.TUPLES_DIR / layout.forecast_file(check)) as fh:
            for e in items:
                tup = {f: e.tuple[f] for f in check.field_names}
                metadata = dict(e.tuple.get("metadata") or {})
                metadata["attack"] = {
                    "violation": e.violation, "family": e.family, "lineage": e.lineage, "round": e.round,
                    "forecasts": dict(zip(check.columns, e.probs or [], strict=False)),
                }  # fmt: skip
                fh.write(dump_line({**tup, "metadata": metadata}))
        with atomic_write(out / layout.FORECASTS_DIR / layout.forecast_file(check)) as fh:
            for i, e in enumerate(items):
                line = {f: {"question": e.tuple[f], "forecast": (e.forecasts or {})[f]} for f in check.field_names}
                fh.write(dump_line({"line": line, "violation_data": scores.violation_data(i)}))
    kept = {id(e) for e in found}
    with atomic_write(out / layout.SEARCH_LOG) as fh:
        for e in search.evaluated:
            fh.write(dump_line(_log_line(e, id(e) in kept)))
    with atomic_write(out / layout.ATTACK_MARKDOWN) as fh:
        fh.write(render_markdown(summary))
    return found


def _log_line(e: Evaluated, kept: bool) -> dict[str, Any]:
    return {
        "key": e.key, "sampler": e.sampler, "round": e.round, "family": e.family, "check": e.check.name,
        "lineage": e.lineage, "cost": e.cost, "violation": e.violation, "frequentist": e.frequentist,
        "probs": e.probs, "titles": [e.tuple[f]["title"] for f in e.check.field_names], "error": e.error,
        "returned": kept,
    }  # fmt: skip


def _num(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _row(*cells: object) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _table(head: list[str]) -> list[str]:
    return [_row(*head), _row(*["---"] * len(head))]


def render_markdown(summary: AttackSummary | dict[str, Any]) -> str:
    """The attack's report as Markdown (also what ``cc attack`` prints)."""
    s = AttackSummary.model_validate(summary) if isinstance(summary, dict) else summary
    f, t, g = s.forecasts, s.target_llm, s.generator_llm
    base = f"; uniform baseline {f.baseline}" if f.baseline is not None else ""
    lines = [
        "# Adversarial search",
        "",
        f"Forecasts of the target: search {f.search}/{s.budget}{base}. "
        f"Rounds: {s.rounds}, tuples evaluated: {s.tuples_evaluated}.",
        f"Target model calls this session: {t.calls} ({t.cache_hits} cache hits, ${t.cost:.4f}).",
    ]
    if g is not None:
        lines.append(f"Generator model calls: {g.calls} ({g.cache_hits} cache hits, ${g.cost:.4f}).")
    lines += [f"Seeds: {note}." for note in s.seeds_skipped]
    lines.append("")
    n_returned = sum(row.found.n for row in s.per_check.values())
    if not s.found_above_threshold:
        lines.append(f"**Nothing found above the threshold ({s.threshold:g})**: no returned tuple is a violation.")
    else:
        lines.append(
            f"**{s.found_above_threshold} of the {n_returned} returned tuples are above the threshold "
            f"({s.threshold:g}).**"
        )
    ratio = s.attack_over_random
    if f.baseline is None:
        lines.append(
            f"Mean violation of the returned tuples {_num(s.attack_mean_violation)} (no uniform baseline: "
            "--no-baseline)."
        )
    else:
        lines.append(
            f"Mean violation of the returned tuples {_num(s.attack_mean_violation)}; of the top {s.keep} "
            f"uniformly sampled at the same budget {_num(s.random_mean_violation)} (all sampled: "
            f"{_num(s.random_all_mean_violation)}); ratio {'—' if ratio is None else f'{ratio:.1f}x'}."
        )
    lines += ["", "## Per check (arbitrage violation)", ""]
    lines += _table(["check", "returned", "mean", "max", "above", "uniform", "mean", "max", "above"])
    for name, row in s.per_check.items():
        a, u = row.found, row.uniform
        lines.append(
            _row(name, a.n, _num(a.mean), _num(a.max), a.above_threshold, u.n, _num(u.mean), _num(u.max),
                 u.above_threshold)
        )  # fmt: skip
    lines += ["", "## Families (what paid off)", ""]
    lines += _table(["family", "tuples", "forecasts", "mean violation", "above", "returned", "rejected"])
    for name, fam in s.families.items():
        lines.append(
            _row(name, fam.tuples, fam.forecasts, _num(fam.mean_violation), fam.above_threshold, fam.returned,
                 fam.rejected)
        )  # fmt: skip
    lines += ["", "## Most violated tuples", ""]
    for i, top in enumerate(s.top, 1):
        lines.append(f"{i}. {top.check}, violation {_num(top.violation)} ({top.family}{_how(top)})")
        lines += [f"   - {row.field} = {row.shown()}: {row.title}" for row in top.fields]
    return "\n".join(lines) + "\n"


def _how(top: TopTuple) -> str:
    return f", {top.how}" if top.how else ""
