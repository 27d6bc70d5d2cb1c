"""What ``cc evaluate`` prints about money: the dry run's estimate, and a run stopped at its spending cap."""

from __future__ import annotations

import json

import typer

from ..evaluation import Estimate, EvaluationResult
from .console import err, escape, out, table
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
    rows = [(m.model, m.calls, m.cache_hits, m.prompt_tokens, m.completion_tokens,
             "no price" if m.cost is None else f"{m.cost:.4f}") for m in found.models]  # fmt: skip
    if len(found.models) != 1:
        f = found
        rows.append(("total", f.calls, f.cache_hits, f.prompt_tokens, f.completion_tokens, f"{f.cost:.4f}"))
    columns = ("model", "calls", "cache hits", "prompt tokens", "completion tokens", "USD")
    out.print(table(f"What the run would ask: {found.forecaster}", columns, rows, title_justify="left"))
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
