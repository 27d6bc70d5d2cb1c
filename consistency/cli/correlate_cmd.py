"""``cc correlate``: does consistency track accuracy? Per-check correlation with the Brier score."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated

import typer

from .console import err, escape, out
from .table_options import Duplicates, skipping


def correlate(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Ground truth (ground_truth_results.jsonl or ground_truth_summary.json files or directories of them, "
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
    checks: Annotated[
        str | None,
        typer.Option(help="Comma-separated checks the aggregate averages over; forecasters lacking one are left out."),
    ] = None,
    max_brier: Annotated[
        float, typer.Option(help="Leave out forecasters worse than this Brier (the paper: 0.25).")
    ] = 0.25,
    min_questions: Annotated[int, typer.Option(help="Leave out forecasters with fewer resolved questions.")] = 1,
    duplicates: Duplicates = "error",
    bootstrap: Annotated[int, typer.Option(help="Bootstrap resamples over forecasters.")] = 1000,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Correlate each check's mean violation with the Brier score across forecasters."""
    from ..accuracy.inputs import ScoreInputError
    from ..accuracy.sources import find_sources, pair, read_consistency
    from ..accuracy.versus import consistency_vs_brier
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
        pairing = pair(found.runs, found.truth, overrides, max_brier=max_brier, min_questions=min_questions)
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
        if len(used) < 3:
            raise ScoreInputError(
                f"need at least 3 paired forecasters to correlate; got {len(used)}"
                + (f" ({', '.join(used)})" if used else "")
            )
        violations = {
            metric: {n: {c: pairing.pairs[n].violations[metric][c] for c in used[n]} for n in used}
            for metric in ("default", "frequentist")
        }
        brier = {n: found.truth[n].brier for n in used}
        results = {
            metric: consistency_vs_brier(violations[metric], brier, checks=fixed, max_brier=None, bootstrap=bootstrap)
            for metric in ("default", "frequentist")
        }
    except ScoreInputError as exc:
        for name, reason in left_out.items():
            err.print(f"  left out {escape(name)}: {escape(reason)}")
        err.print(f"[red]error[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    union = sorted({c for cs in used.values() for c in cs})
    differing = {n: sorted(set(union) - set(cs)) for n, cs in used.items() if set(cs) != set(union)}
    summary = {
        metric: {
            c: {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in vars(r).items()}
            for c, r in res.items()
        }
        for metric, res in results.items()
    }
    summary["pairs"] = {
        n: {"consistency": str(pairing.pairs[n].path), "brier": brier[n], "checks": used[n]} for n in used
    }
    summary["aggregate_checks"] = fixed or union
    summary["left_out"] = left_out
    for name, missing in differing.items():
        err.print(
            f"[yellow]warning[/yellow] {escape(name)} lacks {', '.join(missing)}: the aggregate averages over "
            "different checks per forecaster; pass --checks to fix the set"
        )
    for name, reason in left_out.items():
        err.print(f"left out {escape(name)}: {escape(reason)}")
    if as_json:
        out.print_json(json.dumps(summary))
        return
    from rich.table import Table

    grid = Table(
        title="Correlation of mean violation with Brier score across forecasters (95% bootstrap CI)",
        caption=f"{len(used)} forecasters paired, {len(left_out)} left out; aggregate over "
        + (
            "checks " + ", ".join(fixed)
            if fixed
            else "each forecaster's checks" + (" (they differ)" if differing else "")
        ),
        caption_justify="left",
    )
    for col in ("check", "arbitrage", "frequentist", "forecasters"):
        grid.add_column(col, justify="left" if col == "check" else "right")
    for check in results["default"]:
        cells = []
        for metric in ("default", "frequentist"):
            r = results[metric].get(check)
            cells.append("-" if r is None or math.isnan(r.r) else f"{r.r:+.2f} [{r.low:+.2f}, {r.high:+.2f}]")
        grid.add_row(check, *cells, str(results["default"][check].n))
    out.print(grid)
