"""``cc correlate``: does consistency track accuracy? Per-check correlation with the Brier score."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated

import typer

from ..store.layout import GROUND_TRUTH, GROUND_TRUTH_SUMMARY
from .console import err, escape, out
from .table_options import Duplicates, skipping


def correlate(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help=f"Ground truth ({GROUND_TRUTH} or {GROUND_TRUTH_SUMMARY} files or directories of them, "
            "long tables) and consistency outputs (`cc score`/`cc evaluate` directories, or directories of them)."
        ),
    ],
    pairs: Annotated[
        list[str] | None,
        typer.Option(
            "--pair",
            "--scores",
            "-s",
            help="NAME=DIR: pair forecaster NAME with this `cc score` output (overrides the automatic pairing).",
        ),
    ] = None,
    splits: Annotated[
        list[str] | None,
        typer.Option(
            "--split",
            help="TUPLES=SPLIT: pair tuple runs named *_tuples_TUPLES with ground-truth runs named *_SPLIT, e.g. "
            "scraped=20240501_20240815 (default: the ground-truth run whose questions the tuples were built from).",
        ),
    ] = None,
    checks: Annotated[
        str | None,
        typer.Option(help="Comma-separated checks the aggregate averages over; forecasters lacking one are left out."),
    ] = None,
    max_brier: Annotated[
        float, typer.Option(min=0, max=1, help="Leave out forecasters worse than this Brier (the paper: 0.25).")
    ] = 0.25,
    min_questions: Annotated[int, typer.Option(min=1, help="Leave out forecasters with fewer resolved questions.")] = 1,
    duplicates: Duplicates = "error",
    bootstrap: Annotated[int, typer.Option(min=1, help="Bootstrap resamples over forecasters.")] = 1000,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Correlate each check's mean violation with the Brier score across forecasters."""
    from ..accuracy.inputs import ScoreInputError
    from ..accuracy.sources import find_sources, pair, read_consistency
    from ..checks import get_check

    left_out: dict[str, str] = {}
    try:
        with skipping() as skipped:
            found = find_sources(paths, duplicates, skipped)
        if found.duplicates:
            err.print(f"{found.duplicates} repeated forecast(s) merged by --duplicates {duplicates}")
        overrides = {}
        for item in pairs or []:
            name, sep, directory = item.partition("=")
            if not sep:
                raise ScoreInputError(f"--pair {item!r}: expected NAME=DIR")
            overrides[name] = read_consistency(Path(directory))
        split_map = {}
        for item in splits or []:
            tuples_split, sep, truth_split = item.partition("=")
            if not sep or not tuples_split.strip() or not truth_split.strip():
                raise ScoreInputError(f"--split {item!r}: expected TUPLES=SPLIT, e.g. scraped=20240501_20240815")
            split_map[tuples_split.strip()] = truth_split.strip()
        pairing = pair(
            found.runs, found.truth, overrides, max_brier=max_brier, min_questions=min_questions, splits=split_map
        )
        left_out.update(pairing.left_out)
        fixed = None
        if checks:
            try:
                fixed = [get_check(c.strip()).name for c in checks.split(",") if c.strip()]
            except KeyError as exc:
                raise ScoreInputError(f"--checks: {exc.args[0]}") from None
        used = {}
        for name, run in pairing.pairs.items():
            have = set(run.violations["default"]) & set(run.violations["frequentist"])
            missing = sorted(set(fixed or ()) - have)
            if missing:
                left_out[name] = f"lacks check(s) {', '.join(missing)} of --checks"
            else:
                used[name] = sorted(fixed or have)
        for name in used:
            err.print(f"paired {escape(name)} with {escape(str(pairing.pairs[name].path))}")
        groups = _by_tuples(used, pairing.pairs, left_out)
        if not groups:
            raise ScoreInputError(
                f"need at least 3 paired forecasters to correlate; got {len(used)}"
                + (f" ({', '.join(used)})" if used else "")
            )
        summaries = {
            label: _correlate(members, pairing.pairs, found.truth, fixed, bootstrap, left_out)
            for label, members in groups.items()
        }
    except ScoreInputError:  # said by the error mapping, after what was left out and why
        for name, reason in left_out.items():
            err.print(f"  left out {escape(name)}: {escape(reason)}")
        raise
    for name, reason in left_out.items():
        err.print(f"left out {escape(name)}: {escape(reason)}")
    if as_json:
        if len(summaries) == 1:
            out.print_json(json.dumps(next(iter(summaries.values()))))
        else:  # tuples on several question sets: one correlation each, as the paper's Table 1 columns
            out.print_json(json.dumps({"splits": summaries, "left_out": left_out}))
        return
    _print_table(summaries, len(left_out), fixed)


def _by_tuples(used: dict[str, list[str]], pairs: dict, left_out: dict[str, str]) -> dict[str, dict[str, list[str]]]:
    """Paired forecasters grouped by the question set of their tuples (``scraped``, ``newsapi``; ``""`` when the
    names say none): a correlation mixes no two sets. A set with fewer than 3 forecasters is left out."""
    from ..accuracy.pairing import split_of

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


def _correlate(members, pairs, truth, fixed, bootstrap, left_out) -> dict:
    from ..accuracy.versus import consistency_vs_brier

    violations = {
        metric: {n: {c: pairs[n].violations[metric][c] for c in members[n]} for n in members}
        for metric in ("default", "frequentist")
    }
    brier = {n: truth[n].brier for n in members}
    results = {
        metric: consistency_vs_brier(violations[metric], brier, checks=fixed, max_brier=None, bootstrap=bootstrap)
        for metric in ("default", "frequentist")
    }
    union = sorted({c for cs in members.values() for c in cs})
    differing = {n: sorted(set(union) - set(cs)) for n, cs in members.items() if set(cs) != set(union)}
    summary: dict = {
        metric: {
            c: {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in vars(r).items()}
            for c, r in res.items()
        }
        for metric, res in results.items()
    }
    summary["pairs"] = {
        n: {"consistency": str(pairs[n].path), "brier": brier[n], "checks": members[n]} for n in members
    }
    summary["aggregate_checks"] = fixed or union
    summary["left_out"] = left_out
    for name, missing in differing.items():
        err.print(
            f"[yellow]warning[/yellow] {escape(name)} lacks {', '.join(missing)}: the aggregate averages over "
            "different checks per forecaster; pass --checks to fix the set"
        )
    return summary


def _print_table(summaries: dict[str, dict], n_left: int, fixed: list[str] | None) -> None:
    """One table; with tuples on several question sets, two columns per set (the shape of the paper's Table 1)."""
    from rich.table import Table

    several = len(summaries) > 1
    checks = [set(p["checks"]) for summary in summaries.values() for p in summary["pairs"].values()]
    differing = any(c != set().union(*checks) for c in checks)
    paired = ", ".join(f"{len(s['pairs'])} on {label}" for label, s in summaries.items())
    grid = Table(
        title="Correlation of mean violation with Brier score across forecasters (95% bootstrap CI)",
        caption=(f"forecasters paired: {paired}" if several else f"{len(checks)} forecasters paired")
        + f", {n_left} left out; aggregate over "
        + (
            "checks " + ", ".join(fixed)
            if fixed
            else "each forecaster's checks" + (" (they differ)" if differing else "")
        ),
        caption_justify="left",
    )
    grid.add_column("check", justify="left")
    for label in summaries:
        for metric in ("arbitrage", "frequentist"):
            grid.add_column(f"{label} {metric}" if several else metric, justify="right")
        grid.add_column(f"{label} n" if several else "forecasters", justify="right")
    rows = list(dict.fromkeys(c for s in summaries.values() for c in s["default"] if c != "aggregate"))
    for check in [*rows, "aggregate"]:
        cells = []
        for summary in summaries.values():
            for metric in ("default", "frequentist"):
                r = summary[metric].get(check)
                cells.append(
                    "-" if r is None or r["r"] is None else f"{r['r']:+.2f} [{r['low']:+.2f}, {r['high']:+.2f}]"
                )
            row = summary["default"].get(check)
            cells.append(str(row["n"]) if row else "-")
        grid.add_row(check, *cells)
    out.print(grid)
