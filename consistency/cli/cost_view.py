"""What ``cc evaluate`` prints about money: the dry run's estimate, and a run stopped at its spending cap."""

from __future__ import annotations

import json

import typer

from ..evaluation import Estimate, EvaluationResult
from .console import err, escape, out
from .exits import ExitCode


def stopped_at_cap(result: EvaluationResult) -> None:
    """The spending cap stopped the run: say where it stands and how to go on, and exit with its own code."""
    record, where = result.record, escape(str(result.run_dir))
    stopped = record.stopped
    assert stopped is not None  # called only when the cap stopped the run
    err.print(
        f"[yellow]spending cap reached[/yellow]: ${stopped.spent or 0:.4f} recorded against --max-cost "
        f"{stopped.max_cost or 0:g}; {record.answered} of {record.questions or 0} forecasts are saved in {where} "
        f"(interrupted); go on with a higher cap: cc evaluate --resume {where} --max-cost USD"
    )
    raise typer.Exit(ExitCode.SPENDING_CAP)


def print_estimate(found: Estimate, as_json: bool, max_cost: float | None = None) -> None:
    """The dry run's figures: per model and in total (a table, or JSON), then how they were had."""
    if as_json:
        out.print_json(json.dumps(found.as_dict()))
        return
    from rich.table import Table

    table = Table(title=f"What the run would ask: {found.forecaster}", title_justify="left")
    for name in ("model", "calls", "cache hits", "prompt tokens", "completion tokens", "USD"):
        table.add_column(name, justify="left" if name == "model" else "right")
    for m in found.models:
        usd = "no price" if m.cost is None else f"{m.cost:.4f}"
        table.add_row(m.model, str(m.calls), str(m.cache_hits), str(m.prompt_tokens), str(m.completion_tokens), usd)
    if len(found.models) != 1:
        table.add_row(
            "total",
            str(found.calls),
            str(found.cache_hits),
            str(found.prompt_tokens),
            str(found.completion_tokens),
            f"{found.cost:.4f}",
        )
    out.print(table)
    done = f", {found.answered} already answered" if found.answered else ""
    err.print(f"{found.forecasts} forecasts{done}; no model was called and no run directory written", markup=False)
    for m in found.models:
        lengths = "; ".join(f"{shape}: {how}" for shape, how in m.answers.items())
        err.print(f"{m.model}: tokens counted with {m.tokenizer}; answer lengths: {lengths}", markup=False)
    if max_cost is not None and found.cost >= max_cost:
        err.print(
            f"the estimate (${found.cost:.4f}) reaches --max-cost {max_cost:g}: the run would stop at the cap, "
            "resumable",
            markup=False,
        )
    if found.unpriced:
        err.print(f"no price for {', '.join(found.unpriced)}: add it to CC_PRICES to see dollars", markup=False)
    if found.not_simulated:
        err.print(
            f"{found.not_simulated} forecast(s) failed in the dry run, so their later calls are not counted "
            f"({'; '.join(found.reasons)})",
            markup=False,
        )
