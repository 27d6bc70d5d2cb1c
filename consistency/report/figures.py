"""The report's figures, drawn with matplotlib's object API (no pyplot state, Agg for PNG).

Each figure is inlined in the page as SVG with text kept as text (small, searchable, selectable)
and, with ``--png DIR``, also written there as PNG (200 dpi) and SVG for papers. Distributions
are drawn from every tuple (box plots summarise any number of values in a fixed size), so no
sampling is needed here. matplotlib is imported only when a report is made.
"""

from __future__ import annotations

import io
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .compare import Comparison
from .gather import Accuracy, CheckResult, Run

if TYPE_CHECKING:
    from matplotlib.figure import Figure

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"]
METRIC_LABEL = {"default": "arbitrage violation (nats)", "frequentist": "frequentist violation (z)"}


@dataclass
class Drawn:
    name: str  # file stem for --png, and the figure's id in the page
    caption: str
    svg: str


class Figures:
    """Renders figures to inline SVG and, when ``png_dir`` is set, to PNG and SVG files."""

    def __init__(self, png_dir: Path | None = None) -> None:
        import matplotlib

        matplotlib.use("Agg")
        self.png_dir = png_dir
        self.written: list[Path] = []
        if png_dir is not None:
            png_dir.mkdir(parents=True, exist_ok=True)

    def render(self, fig: Figure, name: str, caption: str) -> Drawn:
        import matplotlib

        name = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-")
        # A salt per figure keeps clip-path ids distinct across the SVGs inlined in one page.
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": name}):
            buf = io.StringIO()
            fig.savefig(buf, format="svg", metadata={"Date": None})
        svg = buf.getvalue()
        svg = svg[svg.index("<svg") :]  # drop the XML prolog and doctype: not allowed inside HTML
        if self.png_dir is not None:
            for ext in ("png", "svg"):
                target = self.png_dir / f"{name}.{ext}"
                with matplotlib.rc_context({"svg.hashsalt": name}):
                    fig.savefig(target, dpi=200, metadata={"Date": None} if ext == "svg" else None)
                self.written.append(target)
        return Drawn(name, caption, svg)


def _figure(width: float, height: float, margins: tuple[float, float, float, float] | None = None) -> Figure:
    """A figure laid out by constrained layout, or with fixed margins in inches (left, right, bottom, top):
    figures drawn once per run use fixed margins, which skip a layout pass (half the drawing time)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout=None if margins else "constrained")
    if margins:
        left, right, bottom, top = margins
        fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height)
    fig.set_facecolor("white")
    return fig


def violations(checks: list[CheckResult]) -> Figure:
    """Per check, box plots of the arbitrage and frequentist violations of every tuple, with thresholds."""
    shown = [c for c in checks if len(c.violations["default"])]
    fig = _figure(9, 0.45 * max(len(shown), 2) + 1.2, margins=(1.4, 0.25, 0.6, 0.35))
    axes = fig.subplots(1, 2, sharey=True, gridspec_kw={"wspace": 0.06})
    names = [c.check.name for c in shown]
    for ax, metric in zip(axes, ("default", "frequentist"), strict=True):
        data = [c.violations[metric] for c in shown]
        if data:
            parts = ax.boxplot(
                data,
                orientation="horizontal",
                whis=(5, 95),
                showfliers=False,
                showmeans=True,
                meanprops={"marker": "D", "markerfacecolor": "black", "markeredgecolor": "black", "markersize": 4},
                medianprops={"color": COLORS[1]},
            )
            for line in (line for lines in parts.values() for line in lines):
                line.set_clip_on(False)  # a mean or whisker at the axis' end is drawn whole, not cut in half
            ax.set_yticks(range(1, len(names) + 1), names)
            threshold = shown[0].stats[metric]["threshold"]
            ax.axvline(threshold, color="0.4", linestyle=":", linewidth=1)
        ax.set_xscale("symlog", linthresh=1e-3 if metric == "default" else 1e-2)
        ax.set_xlim(left=0)
        if data:  # room past the largest whisker or mean, so its marker does not sit on the frame
            ax.set_xlim(right=_past(max(_reach(v) for v in data), 1e-3 if metric == "default" else 1e-2))
        ax.set_xlabel(METRIC_LABEL[metric])
        ax.grid(axis="x", alpha=0.3)
    axes[0].invert_yaxis()  # shared y: once for both; checks read top to bottom in the table's order
    axes[0].set_title("boxes: quartiles; whiskers: 5th–95th percentile; ◆ mean", fontsize=9, loc="left")
    axes[1].set_title("dotted: the failing threshold", fontsize=9, loc="left")
    return fig


def reliability(acc: Accuracy, title: str) -> Figure:
    """Observed frequency against mean forecast per bin, with each bin's count written and drawn below."""
    table = acc.calibration
    fig = _figure(5.2, 5.8, margins=(0.75, 0.2, 0.55, 0.75))
    top, bottom = fig.subplots(2, 1, height_ratios=(3, 1), sharex=True, gridspec_kw={"hspace": 0.08})
    top.plot([0, 1], [0, 1], color="0.6", linestyle="--", linewidth=1, label="perfect calibration")
    used = table.count > 0
    top.plot(table.mean_forecast[used], table.frequency[used], marker="o", color=COLORS[0], label="forecaster")
    for x, yv, n in zip(table.mean_forecast[used], table.frequency[used], table.count[used], strict=True):
        top.annotate(f"{n}", (x, yv), textcoords="offset points", xytext=(4, -10), fontsize=7, color="0.3")
    top.set_xlim(0, 1)
    top.set_ylim(-0.02, 1.02)
    top.set_ylabel("observed frequency")
    top.set_title(f"{title}\nBrier {acc.brier:.3f}, calibration error {acc.calibration_error:.3f}", fontsize=9, pad=20)
    # above the plot, not in a corner: a corner is where a well-calibrated extreme bin, (0.05, 1.0) or
    # (0.95, 0.0), is drawn
    top.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncols=2, fontsize=8, frameon=False, borderaxespad=0.2)
    top.grid(alpha=0.3)
    edges = table.edges if table.edges is not None else np.linspace(0, 1, table.n_bins + 1)
    bottom.bar(
        edges[:-1], table.count, width=np.diff(edges), align="edge", color=COLORS[0], alpha=0.5, edgecolor="white"
    )
    bottom.set_xlabel("forecast probability (bins of 0.1)")
    bottom.set_ylabel("forecasts")
    return fig


#: What a check without a value is labelled in :func:`checks_by_run`, by why it has none.
NOT_RUN, NOT_SCORED = "not run", "none scored"


def gaps(runs: list[Run]) -> dict[str, dict[str, str]]:
    """Per run, the checks (of any run) it has no mean violation for, and why: :data:`NOT_RUN` (the run did
    not include the check) or :data:`NOT_SCORED` (it did, but no tuple of it could be scored)."""
    names = [c.name for c in _checks_of(runs)]
    out: dict[str, dict[str, str]] = {}
    for run in runs:
        by_name = {c.check.name: c for c in run.checks}
        missing = {}
        for name in names:
            found = by_name.get(name)
            if found is None:
                missing[name] = NOT_RUN
            elif not np.isfinite(_num(found.stats["default"].get("avg_violation"))):
                missing[name] = NOT_SCORED
        if missing:
            out[run.name] = missing
    return out


def checks_by_run(runs: list[Run]) -> Figure:
    """Each check's mean violation per run, side by side, with bootstrap 95% intervals.

    Three things must not look alike: a mean of 0 (a flat mark labelled "0"), a check the run did not
    include, and one with no scored tuple (a hatched empty slot labelled "not run" or "none scored")."""
    names = [c.name for c in _checks_of(runs)]
    missing = gaps(runs)
    fig = _figure(10, 6)
    axes = fig.subplots(2, 1, sharex=True)
    width = 0.8 / max(len(runs), 1)
    x = np.arange(len(names))
    for ax, metric in zip(axes, ("default", "frequentist"), strict=True):
        for k, run in enumerate(runs):
            by_name = {c.check.name: c.stats[metric] for c in run.checks}
            means = np.array([_num(by_name.get(n, {}).get("avg_violation")) for n in names])
            lows = np.array([_ci(by_name.get(n), 0) for n in names])
            highs = np.array([_ci(by_name.get(n), 1) for n in names])
            err = np.vstack([np.clip(means - lows, 0, None), np.clip(highs - means, 0, None)])
            err = np.where(np.isfinite(err), err, 0)
            at = x + (k - (len(runs) - 1) / 2) * width
            color = COLORS[k % len(COLORS)]
            ax.bar(at, means, width, yerr=err, capsize=2, label=run.name, color=color)
            zero = means == 0  # a bar of height 0 is invisible: mark it, so it does not read as a missing value
            ax.hlines(np.zeros(zero.sum()), at[zero] - width / 2, at[zero] + width / 2, colors=color, linewidth=2.5)
            for xz in at[zero]:
                ax.annotate(
                    "0", (xz, 0), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=7, color=color
                )
            for j, name in enumerate(names):
                why = missing.get(run.name, {}).get(name)
                if why is not None:
                    _empty_slot(ax, at[j], width, color, why)
        ax.set_ylabel(METRIC_LABEL[metric])
        ax.grid(axis="y", alpha=0.3)
    axes[1].set_xticks(x, names, rotation=30, ha="right")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside upper center", ncols=min(len(runs), 3), fontsize=8)
    return fig


def _empty_slot(ax, at: float, width: float, color: str, why: str) -> None:
    """A bar's place with no value: a faint hatched outline standing on the axis (its height is a fixed share
    of the axes, not a value, and it is drawn as an outline, never filled) with the reason written up it."""
    ax.bar(
        at,
        0.3,
        width,
        bottom=0,
        fill=False,
        hatch="///",
        edgecolor=color,
        alpha=0.35,
        linewidth=0.6,
        transform=ax.get_xaxis_transform(),  # x in data, y in axes fractions: no effect on the y limits
        gid=f"empty-slot:{why}",
    )
    ax.text(
        at,
        0.03,
        why,
        rotation=90,
        ha="center",
        va="bottom",
        fontsize=8,
        color=color,
        style="italic",
        bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0},
        transform=ax.get_xaxis_transform(),
    )


def versus(comparison: Comparison, metric: str = "default") -> Figure:
    """Mean violation per check against the Brier score, one point per forecaster, with Pearson r."""
    correlations = comparison.correlations.get(metric, {})
    panels = list(correlations)
    cols = 4
    rows = math.ceil(len(panels) / cols)
    fig = _figure(11, 2.6 * rows)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    entries = [e for e in comparison.entries if e.consistency is not None and e.brier is not None]
    entries = [e for e in entries if e.brier is not None and e.brier <= comparison.max_brier]
    for ax, check in zip(axes, panels, strict=False):
        r = correlations[check]
        for k, entry in enumerate(entries):
            values = entry.violations(metric)
            x = float(np.mean(list(values.values()))) if check == "aggregate" and values else values.get(check)
            if x is not None:
                ax.scatter([x], [entry.brier], color=COLORS[k % len(COLORS)], s=22, label=entry.name)
        title = f"{check}: r = {r.r:+.2f}" if np.isfinite(r.r) else f"{check}: r undefined"
        if np.isfinite(r.low):
            title += f" [{r.low:+.2f}, {r.high:+.2f}]"
        ax.set_title(title, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    for ax in axes[: len(panels)][::cols]:
        ax.set_ylabel("Brier score", fontsize=8)
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 4), fontsize=8)
    fig.suptitle(f"x: mean {METRIC_LABEL[metric]} per check; y: Brier score", fontsize=9)
    return fig


def depth(series: dict[int, Run], title: str) -> Figure:
    """Mean violation per check (thin) and over checks (thick) against the ArbitrageForecaster's depth."""
    depths = sorted(series)
    fig = _figure(9, 3.6)
    axes = fig.subplots(1, 2)
    names = [c.name for c in _checks_of(list(series.values()))]
    for ax, metric in zip(axes, ("default", "frequentist"), strict=True):
        for k, name in enumerate(names):
            ys = [
                _num(next((c.stats[metric]["avg_violation"] for c in series[d].checks if c.check.name == name), None))
                for d in depths
            ]
            ax.plot(depths, ys, marker="o", linewidth=1, color=COLORS[k % len(COLORS)], label=name)
        ax.plot(
            depths,
            [_num(series[d].aggregate(metric)) for d in depths],
            color="black",
            linewidth=2.5,
            marker="s",
            label="mean over checks",
        )
        ax.set_xticks(depths)
        ax.set_xlabel("depth")
        ax.set_ylabel(METRIC_LABEL[metric])
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=7, loc="best")
    fig.suptitle(title, fontsize=9)
    return fig


def _reach(values: np.ndarray) -> float:
    """The right end of a box plot: its 95th-percentile whisker or its mean, whichever is further."""
    values = np.asarray(values, dtype=float)
    return float(max(np.percentile(values, 95), values.mean())) if len(values) else 0.0


def _past(value: float, linthresh: float) -> float:
    """A symlog axis limit a little beyond ``value`` (one tenth of a decade, or of the linear part)."""
    return value * 10**0.1 if value > linthresh else value + 0.1 * linthresh


def _checks_of(runs: list[Run]):
    seen: dict[str, object] = {}
    for run in runs:
        for c in run.checks:
            seen.setdefault(c.check.name, c.check)
    from ..checks import all_checks

    order = {c.name: i for i, c in enumerate(all_checks())}
    return sorted(seen.values(), key=lambda c: order.get(c.name, len(order)))  # type: ignore[attr-defined]


def _num(value) -> float:
    return float("nan") if value is None else float(value)


def _ci(stats: dict | None, i: int) -> float:
    if not stats or not stats.get("ci95"):
        return float("nan")
    return float(stats["ci95"][i])
