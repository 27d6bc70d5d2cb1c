"""Attack results: every tuple a ``cc attack`` search (and its uniform baseline) scored, from its search log."""

from __future__ import annotations

from typing import Any

from ..jsonl import LineError
from ..store.layout import FORECASTS_DIR, TUPLES_DIR
from .frame import AnalysisError, Backend, Column, Paths, build, check_backend, label, read_runs

ATTACK_COLUMNS = (
    Column("run", "category", "The attack directory's name."),
    Column("forecaster", "category", "The target forecaster's recorded name."),
    Column("check", "category", "The tuple's check."),
    Column("sampler", "category", "search (the attack) or baseline (uniform sampling at the same budget)."),
    Column("round", "Int64", "The search round that produced it."),
    Column("family", "category", "The family of candidates it came from (empty for the baseline)."),
    Column("mutation", "string", "How it was made from its parent (the lineage's mutation; empty when none)."),
    Column("tuple", "string", "The tuple's key (its check and a hash of its questions)."),
    Column("titles", "string", "Its questions' titles, in field order, joined by ' | '."),
    Column("cost", "int64", "New forecasts it was charged."),
    Column("arbitrage", "float64", "Its arbitrage violation (NaN: not scored, see error)."),
    Column("frequentist", "float64", "Its frequentist violation."),
    Column("violated", "bool", "Whether arbitrage exceeds the attack's threshold."),
    Column("returned", "bool", f"Whether the attack returned it (in {TUPLES_DIR}/ and {FORECASTS_DIR}/)."),
    Column("error", "string", "Why it was not scored (a failed forecast, a rejected variant); empty when scored."),
)


def attacks_df(paths: Paths, *, backend: Backend = "pandas") -> Any:
    """One row per tuple every ``cc attack`` directory among ``paths`` scored, in the order found, so a
    ``groupby("family")`` says which kinds of candidates paid off and ``sampler`` sets the search against
    uniform sampling.

    Columns: :data:`ATTACK_COLUMNS`. Results that are not attacks are skipped; none at all is an
    :class:`AnalysisError`; an attack still running has no log yet and is named in ``attrs["errors"]``."""
    check_backend(backend)
    rows: list[dict[str, Any]] = []
    errors: list[str] = []
    attacks = [run for run in read_runs(paths) if run.attack is not None]
    if not attacks:
        raise AnalysisError("no attack results among the paths (cc attack writes them)")
    for run in attacks:
        summary = run.attack.summary if run.attack else None  # typed (store.records.AttackSummary)
        threshold = summary.threshold if summary is not None else None
        logged = False
        for _, entry in run.attack_log():
            logged = True
            if isinstance(entry, LineError):
                errors.append(str(entry))
                continue
            value = entry.violation
            rows.append(
                {
                    "run": label(run), "forecaster": run.name, "check": entry.check, "sampler": entry.sampler,
                    "round": entry.round, "family": entry.family or "",
                    "mutation": str(entry.lineage.get("mutation") or ""), "tuple": entry.key,
                    "titles": " | ".join(entry.titles), "cost": entry.cost,
                    "arbitrage": value, "frequentist": entry.frequentist,
                    "violated": value is not None and threshold is not None and value > threshold,
                    "returned": entry.returned, "error": entry.error or "",
                }
            )  # fmt: skip
        if not logged:
            errors.append(f"{run.path}: no search log yet (the attack has not finished)")
    return build(ATTACK_COLUMNS, {c.name: [r[c.name] for r in rows] for c in ATTACK_COLUMNS}, backend, errors=errors)
