"""Pictures of a multiple-choice or numeric tuple: the distribution beside the yes/no answers it must agree with.

- MC_BINARY: the multiple-choice forecast as one bar per option (the options of the yes/no question coloured), and
  beside it the mass those options get against the yes/no answer and the coherent price.
- CDF_THRESHOLDS: the numeric forecast's CDF over the question's range and, at each threshold t, the CDF value the
  yes/no answer implies (1 − P(X > t)) with the coherent one.
- NUMERIC_PARAPHRASE: the two wordings' CDFs.

:func:`picture_of` reads what to draw from a forecast line (pure data, kept with the report's worst tuples);
:func:`draw` makes the matplotlib figure (imported only then).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import distributions as dist
from ..checks import MC_BINARY, NUMERIC_PARAPHRASE, Check
from ..generate.categorical import format_value
from ..models import ChoiceForecast, ForecastEntry, NumericForecast
from ..outcomes import option_groups, thresholds

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DRAWN = ("MC_BINARY", "CDF_THRESHOLDS", "NUMERIC_PARAPHRASE")


@dataclass
class TuplePicture:
    """What a tuple's picture shows (``kind``: ``options`` or ``cdf``)."""

    kind: str
    title: str
    labels: list[str] = field(default_factory=list)  # options, or tick labels of the x axis
    ticks: list[float] = field(default_factory=list)  # locations in [0, 1] of the x tick labels
    values: list[float] = field(default_factory=list)  # the options' probabilities
    chosen: list[int] = field(default_factory=list)  # the options the yes/no question asks about
    answers: list[float] = field(default_factory=list)  # the yes/no answers (P, or 1 - T_j at the thresholds)
    prices: list[float] = field(default_factory=list)  # the coherent prices in the same terms
    at: list[float] = field(default_factory=list)  # threshold locations in [0, 1]
    curves: list[tuple[str, list[float]]] = field(default_factory=list)  # CDFs on the 201-point grid


def picture_of(check: Check, line: dict[str, Any], prices: dict[str, float] | None) -> TuplePicture | None:
    """The picture of one forecast line of MC_BINARY, CDF_THRESHOLDS<k> or NUMERIC_PARAPHRASE; None for others
    or for a line that does not parse (the report shows its table either way)."""
    family = check.name.rstrip("0123456789") if check.name.startswith("CDF_THRESHOLDS") else check.name
    if family not in DRAWN:
        return None
    try:
        entries = {f: ForecastEntry.model_validate(line[f]) for f in check.field_names}
        return _picture(check, family, entries, prices or {})
    except (KeyError, TypeError, ValueError):
        return None


def _picture(check: Check, family: str, entries: dict[str, ForecastEntry], prices: dict[str, float]) -> TuplePicture:
    questions = {f: e.question for f, e in entries.items()}
    source = questions["X"]
    forecast = entries["X"].forecast
    if family == MC_BINARY.name:
        assert isinstance(forecast, ChoiceForecast)
        answer = entries["P"].forecast
        group = option_groups(check, "X", questions)[0]
        return TuplePicture(
            "options",
            source.title,
            labels=list(source.options or []),
            values=list(forecast.probs),
            chosen=group,
            answers=[float(answer.prob)],  # type: ignore[union-attr]
            prices=[float(prices["P"])] if "P" in prices else [],
        )
    assert isinstance(forecast, NumericForecast) and source.range is not None
    values = source.range.value(np.linspace(0.0, 1.0, 5))
    if source.question_type != "date":  # two significant digits, placed where they fall on the scale
        values = np.array([float(f"{v:.2g}") for v in values])
    ticks = np.clip(source.range.location(values), 0.0, 1.0)
    picture = TuplePicture(
        "cdf",
        source.title,
        labels=[format_value(source, float(v)) for v in values],
        ticks=ticks.tolist(),
        curves=[("forecast" if family != NUMERIC_PARAPHRASE.name else "first wording", list(forecast.cdf))],
    )
    if family == NUMERIC_PARAPHRASE.name:
        other = entries["para_X"].forecast
        assert isinstance(other, NumericForecast)
        picture.curves.append(("second wording", list(other.cdf)))
        return picture
    t = thresholds(check, "X", questions)
    names = [f for f in check.field_names if f != "X"]
    picture.at = [float(v) for v in source.range.location(t)]
    picture.answers = [1.0 - float(entries[f].forecast.prob) for f in names]  # type: ignore[union-attr]
    if all(f in prices for f in names):
        picture.prices = [1.0 - float(prices[f]) for f in names]
    return picture


def draw(p: TuplePicture) -> Figure:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 3.2), layout="constrained")
    fig.set_facecolor("white")
    if p.kind == "options":
        left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 1]})
        colors = ["#1f77b4" if i in p.chosen else "#c7c7c7" for i in range(len(p.values))]
        left.bar(range(len(p.values)), p.values, color=colors)
        left.set_xticks(range(len(p.labels)), [_short(s) for s in p.labels], rotation=20, ha="right")
        left.set_ylabel("probability")
        left.set_title("multiple-choice forecast (blue: the options the yes/no question asks about)", fontsize=9)
        mass = float(np.sum([p.values[i] for i in p.chosen]))
        right.bar([0, 1], [mass, p.answers[0]], color=["#1f77b4", "#d62728"])
        right.set_xticks([0, 1], ["from the\ndistribution", "yes/no\nanswer"])
        if p.prices:
            right.axhline(p.prices[0], color="black", linestyle="--", linewidth=1, label="coherent")
            right.legend(fontsize=8, loc="upper right")
        right.set_ylim(0, 1)
        right.set_title("P(one of the blue options)", fontsize=9)
        return fig
    ax = fig.subplots()
    x = np.linspace(0.0, 1.0, dist.GRID_POINTS)
    for (label, cdf), color in zip(p.curves, ("#1f77b4", "#ff7f0e"), strict=False):
        ax.plot(x, cdf, color=color, label=f"CDF: {label}")
    if p.at:
        ax.plot(p.at, p.answers, "o", color="#d62728", label="1 − yes/no answer P(X > t)")
        if p.prices:
            ax.plot(p.at, p.prices, "x", color="black", label="coherent")
        for t in p.at:
            ax.axvline(t, color="0.8", linewidth=0.8, zorder=0)
    ax.set_xticks(p.ticks, p.labels)
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("P(X ≤ x)")
    ax.legend(fontsize=8, loc="upper left")
    return fig


def caption(check: Check, p: TuplePicture) -> str:
    if p.kind == "options":
        return f"{check.name}: the worst tuple's multiple-choice forecast against its yes/no answer ({p.title})."
    if len(p.curves) == 2:
        return f"{check.name}: the worst tuple's two CDFs, one per wording ({p.title})."
    return f"{check.name}: the worst tuple's CDF against its threshold answers ({p.title})."


def _short(text: str, width: int = 18) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
