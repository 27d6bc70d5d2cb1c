"""Does consistency track accuracy? Each check's mean violation correlated with the Brier score across
forecasters (the paper's Table 1; ``cc correlate``).

The ground truth and consistency outputs are found and paired by :mod:`.sources`; a correlation mixes no
two question sets (tuples built from the scraped questions, from NewsAPI's...), so paired forecasters are
grouped by the set of their tuples and each group with at least three is correlated on its own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..jsonl import LineError
from .inputs import ScoreInputError
from .settings import Correlating
from .sources import ConsistencyRun, Truth

METRICS = ("default", "frequentist")


@dataclass
class Study:
    """Per question set (``""``: the names say none), the correlations of each check (``None`` where undefined),
    the pairs used and the checks averaged; with what was left out, and what the caller should be told."""

    summaries: dict[str, dict[str, Any]]
    left_out: dict[str, str]
    fixed: list[str] | None
    paired: dict[str, str] = field(default_factory=dict)  # forecaster -> its consistency output
    duplicates: int = 0  # repeated forecasts merged by the duplicates policy
    differing: dict[str, list[str]] = field(default_factory=dict)  # forecaster -> checks it lacks in its set

    def notes(self, duplicates: str) -> list[str]:
        """What the caller should be told before the table: forecasts merged by the ``duplicates`` policy, which
        consistency output each forecaster was paired with, forecasters whose set lacks checks, what was left out."""
        merged = f"{self.duplicates} repeated forecast(s) merged by --duplicates {duplicates}"
        return (
            ([merged] if self.duplicates else [])
            + [f"paired {name} with {path}" for name, path in self.paired.items()]
            + [
                f"warning {name} lacks {', '.join(missing)}: the aggregate averages over different checks per "
                "forecaster; pass --checks to fix the set"
                for name, missing in self.differing.items()
            ]
            + [f"left out {name}: {reason}" for name, reason in self.left_out.items()]
        )

    def as_json(self) -> dict[str, Any]:
        """One set: its summary; several: one summary per set (the paper's Table 1 columns), and what was left out."""
        if len(self.summaries) == 1:
            return next(iter(self.summaries.values()))
        return {"splits": self.summaries, "left_out": self.left_out}

    def rows(self) -> list[tuple[str, list[tuple[dict[str, Any] | None, dict[str, Any] | None, int | None]]]]:
        """Per check (then ``aggregate``): per set, the arbitrage and frequentist correlations and how many."""
        checks = list(dict.fromkeys(c for s in self.summaries.values() for c in s["default"] if c != "aggregate"))
        return [
            (
                check,
                [(s["default"].get(check), s["frequentist"].get(check), _n(s, check)) for s in self.summaries.values()],
            )
            for check in [*checks, "aggregate"]
        ]

    def caption(self) -> str:
        checks = [set(p["checks"]) for summary in self.summaries.values() for p in summary["pairs"].values()]
        differing = any(c != set().union(*checks) for c in checks)
        paired = ", ".join(f"{len(s['pairs'])} on {label}" for label, s in self.summaries.items())
        over = (
            "checks " + ", ".join(self.fixed)
            if self.fixed
            else "each forecaster's checks" + (" (they differ)" if differing else "")
        )
        several = len(self.summaries) > 1
        return (
            f"forecasters paired: {paired}" if several else f"{len(checks)} forecasters paired"
        ) + f", {len(self.left_out)} left out; aggregate over {over}"


def _n(summary: dict[str, Any], check: str) -> int | None:
    row = summary["default"].get(check)
    return row["n"] if row else None


def correlate(
    paths: Sequence[Path],
    settings: Correlating | None = None,
    *,
    skipped: list[LineError] | None = None,
    left_out: dict[str, str] | None = None,
) -> Study:
    """Correlate each check's mean violation with the Brier score across the forecasters of ``paths``.

    ``settings`` (``cc correlate``'s options): ``pairs``, ``NAME=DIR`` overrides of the automatic pairing;
    ``splits``, ``TUPLES=SPLIT`` pairings of tuple runs with ground-truth runs by split name; ``checks``, the
    comma-separated checks the aggregate averages over (a forecaster lacking one is left out). Bad rows go to
    ``skipped``; forecasters left out, with the reason, to ``left_out`` as they are found (so that a caller still
    has them when too few remain and this raises :class:`ScoreInputError`)."""
    from .sources import find_sources, pair, read_consistency

    s = settings or Correlating()
    left = left_out if left_out is not None else {}
    found = find_sources(list(paths), s.duplicates, skipped)
    overrides = {name: read_consistency(Path(directory)) for name, directory in _pairs(s.pairs or ())}
    pairing = pair(
        found.runs,
        found.truth,
        overrides,
        max_brier=s.max_brier,
        min_questions=s.min_questions,
        splits=_splits(s.splits or ()),
    )
    left.update(pairing.left_out)
    fixed = _checks(s.checks)
    used = {}
    for name, run in pairing.pairs.items():
        have = set(run.violations["default"]) & set(run.violations["frequentist"])
        missing = sorted(set(fixed or ()) - have)
        if missing:
            left[name] = f"lacks check(s) {', '.join(missing)} of --checks"
        else:
            used[name] = sorted(fixed or have)
    groups = _by_tuples(used, pairing.pairs, left)
    if not groups:
        raise ScoreInputError(
            f"need at least 3 paired forecasters to correlate; got {len(used)}"
            + (f" ({', '.join(used)})" if used else "")
        )
    study = Study({}, left, fixed, {n: str(pairing.pairs[n].path) for n in used}, found.duplicates)
    for label, members in groups.items():
        study.summaries[label] = _correlate(members, pairing.pairs, found.truth, fixed, s.bootstrap, left)
        union = sorted({c for cs in members.values() for c in cs})
        study.differing.update({n: sorted(set(union) - set(cs)) for n, cs in members.items() if set(cs) != set(union)})
    return study


def _pairs(items: Sequence[str]) -> list[tuple[str, str]]:
    found = []
    for item in items:
        name, sep, directory = item.partition("=")
        if not sep:
            raise ScoreInputError(f"--pair {item!r}: expected NAME=DIR")
        found.append((name, directory))
    return found


def _splits(items: Sequence[str]) -> dict[str, str]:
    found = {}
    for item in items:
        tuples_split, sep, truth_split = item.partition("=")
        if not sep or not tuples_split.strip() or not truth_split.strip():
            raise ScoreInputError(f"--split {item!r}: expected TUPLES=SPLIT, e.g. scraped=20240501_20240815")
        found[tuples_split.strip()] = truth_split.strip()
    return found


def _checks(checks: str | None) -> list[str] | None:
    from ..checks import get_check

    if not checks:
        return None
    try:
        return [get_check(c.strip()).name for c in checks.split(",") if c.strip()]
    except KeyError as exc:
        raise ScoreInputError(f"--checks: {exc.args[0]}") from None


def _by_tuples(
    used: dict[str, list[str]], pairs: dict[str, ConsistencyRun], left_out: dict[str, str]
) -> dict[str, dict[str, list[str]]]:
    """Paired forecasters grouped by the question set of their tuples (``scraped``, ``newsapi``; ``""`` when the
    names say none): a correlation mixes no two sets. A set with fewer than 3 forecasters is left out."""
    from .pairing import split_of

    groups: dict[str, dict[str, list[str]]] = {}
    for name, checks in used.items():
        groups.setdefault(split_of(pairs[name].identity.names), {})[name] = checks
    if len(groups) > 1:  # in the order of the question sets' ground truth (the paper's: scraped, then NewsAPI)
        groups = dict(sorted(groups.items(), key=lambda kv: (min(split_of([n]) for n in kv[1]), kv[0])))
    if len(groups) == 1:  # one set: fewer than 3 is the error the caller reports
        return groups if len(next(iter(groups.values()))) >= 3 else {}
    for label, members in list(groups.items()):
        if len(members) < 3:
            where = f" on the {label} tuples" if label else ""
            for name in members:
                left_out[name] = f"only {len(members)} paired forecaster(s){where}; a correlation needs 3"
            del groups[label]
    return groups


def _correlate(
    members: dict[str, list[str]],
    pairs: dict[str, ConsistencyRun],
    truth: dict[str, Truth],
    fixed: list[str] | None,
    bootstrap: int,
    left_out: dict[str, str],
) -> dict[str, Any]:
    from .versus import consistency_vs_brier

    brier = {n: truth[n].brier for n in members}
    summary: dict[str, Any] = {}
    for metric in METRICS:
        violations = {n: {c: pairs[n].violations[metric][c] for c in members[n]} for n in members}
        results = consistency_vs_brier(violations, brier, checks=fixed, max_brier=None, bootstrap=bootstrap)
        summary[metric] = {
            c: {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in vars(r).items()}
            for c, r in results.items()
        }
    summary["pairs"] = {
        n: {"consistency": str(pairs[n].path), "brier": brier[n], "checks": members[n]} for n in members
    }
    summary["aggregate_checks"] = fixed or sorted({c for cs in members.values() for c in cs})
    summary["left_out"] = left_out
    return summary
