"""What a repair did, per check and in total: the repair report (``repair.json``) and how it is computed.

Figures: the divergence moved (Brier: the squared distance; log: the arbitrage profit), the guaranteed
improvement (the least the score improves by, over every possible world), the mean arbitrage violation
before and after, and where questions are resolved the realized change in Brier and log score.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from ..checks import Check
from ..metrics.arbitrage import clip_forecasts
from ..metrics.scoring import score_forecasts


class Realized(BaseModel):
    """Mean scores on resolved questions before and after the repair (lower is better; log loss in nats).

    Tuples whose resolutions fit no possible world of their check are left out (no guarantee covers them).

    ``unit`` ``forecast``: every forecast in the files whose question resolved (a question in three
    tuples counts three times); ``question``: every distinct resolved question once, before = the mean
    of its forecasts (where a joint repair starts), after = its repaired value (the mean of its
    repaired values, per tuple)."""

    unit: Literal["forecast", "question"]
    n: int = 0
    brier_before: float | None = None
    brier_after: float | None = None
    log_before: float | None = None
    log_after: float | None = None

    @property
    def brier_change(self) -> float | None:
        return None if self.brier_after is None or self.brier_before is None else self.brier_after - self.brier_before

    @property
    def log_change(self) -> float | None:
        return None if self.log_after is None or self.log_before is None else self.log_after - self.log_before


class CheckRepair(BaseModel):
    check: str
    class_name: str
    tuples: int
    unreadable_lines: int = 0
    moved: float = 0.0  # summed over the check's tuples
    guaranteed: float = 0.0  # summed over tuples, each on its own worlds
    guaranteed_min: float | None = None  # the least of one tuple (negative can happen in a joint repair)
    violation_before: float | None = None  # mean arbitrage violation (nats), as `cc score`
    violation_after: float | None = None
    realized: Realized = Field(default_factory=lambda: Realized(unit="forecast"))
    contradictory_resolutions: int = 0  # tuples whose resolutions fit no possible world: no guarantee there


class ConflictTuple(BaseModel):
    """A tuple of a conflicting set: where it is and what its fields ask."""

    check: str
    file: str
    line: int
    questions: dict[str, str]  # field name -> question title
    conflict: int = 0  # which conflicting set (numbered from 0) it belongs to

    def describe(self) -> str:
        fields = "; ".join(f"{name}: {title}" for name, title in self.questions.items())
        return f"{self.check} {self.file}:{self.line} ({fields})"


class RepairTotal(BaseModel):
    tuples: int = 0
    moved: float = 0.0
    guaranteed: float = 0.0
    violation_before: float | None = None  # mean over checks of each check's mean, as `cc score`'s aggregate
    violation_after: float | None = None
    realized: Realized = Field(default_factory=lambda: Realized(unit="forecast"))
    realized_questions: Realized = Field(default_factory=lambda: Realized(unit="question"))


class RepairReport(BaseModel):
    source: str
    out: str | None = None
    score: Literal["brier", "log"]
    joint: bool
    model_calls: int = 0
    questions: int
    disagreeing_questions: int  # forecast differently in different tuples: a joint repair starts from the mean
    conflicting_resolutions: int  # questions resolved differently in different tuples: left unresolved
    resolved_questions: int
    checks: list[CheckRepair]
    total: RepairTotal
    solver_status: str | None = None
    iterations: int | None = None
    seconds: float | None = None
    errors: list[str] = Field(default_factory=list)  # lines left out, file:line: reason
    #: Joint repair with ``skip_conflicts``: the tuples left out, set by set (each an irreducible set that no
    #: forecasts satisfy together); the guarantee is over the worlds of the other tuples.
    left_out: list[ConflictTuple] = Field(default_factory=list)
    #: Joint repair: whether a world consistent with every tuple repaired was found ("found"), or the search
    #: ran out of budget ("unknown"); the guarantee is about those worlds (a set without any is a conflict).
    joint_worlds: Literal["found", "unknown"] | None = None

    @property
    def method(self) -> str:
        return f"{self.score} {'joint' if self.joint else 'per-tuple'}"

    def table(self) -> tuple[str, tuple[str, ...], list[list[object]], list[object]]:
        """Title, columns, a row per check and the total row: tuples, distance moved, guaranteed gain,
        violations and Brier scores before and after."""
        guaranteed = "guaranteed gain" if self.score == "brier" else "guaranteed gain (nats)"
        columns = ("check", "tuples", "moved", guaranteed, "violation before", "after", "resolved", "Brier before",
                   "after")  # fmt: skip

        def cells(name: str, c: CheckRepair | RepairTotal, gain: str) -> list[object]:
            r = c.realized
            return [name, c.tuples, _fmt(c.moved), gain, _fmt(c.violation_before), _fmt(c.violation_after), r.n,
                    _fmt(r.brier_before), _fmt(r.brier_after)]  # fmt: skip

        rows = [cells(c.check, c, "(whole graph)" if self.joint else _fmt(c.guaranteed)) for c in self.checks]
        title = f"Repair ({self.method}; no model calls; arbitrage and log in nats)"
        return title, columns, rows, cells("total", self.total, _fmt(self.total.guaranteed))

    def notes(self) -> list[str]:
        """What the table does not say: tuples left out as conflicting, what the joint guarantee covers,
        questions forecast or resolved differently in different tuples, the realized change per question."""
        from ..checks import get_check
        from ..store.layout import REPAIR_REPORT

        lines, t = [], self.total
        if self.left_out:
            sets = len({c.conflict for c in self.left_out})
            lines.append(f"{len(self.left_out)} tuple(s) left out: {sets} set(s) of tuples that contradict each "
                         f"other (--skip-conflicts; all listed in {REPAIR_REPORT}):")  # fmt: skip
            lines += [f"  set {c.conflict + 1}: {c.describe()}" for c in self.left_out[:10]]
        if self.joint:
            which = "all its tuples" if not self.left_out else "all its other tuples"
            categorical = any(get_check(c.check).categorical for c in self.checks)
            counted = " (a multiple-choice or numeric question's outcomes counted one by one)" if categorical else ""
            lines.append(f"{self.questions} distinct questions{counted}, one value each; the guaranteed gain "
                         f"holds for the whole graph in every world consistent with {which}: "
                         f"{_fmt(t.guaranteed)}")  # fmt: skip
            if self.joint_worlds == "unknown":
                lines.append("no such world was found within the search's budget, nor ruled out: where there is "
                             "none, the guarantee is about no world")  # fmt: skip
        if self.disagreeing_questions:
            how = "started from the mean of its forecasts" if self.joint else "repaired in each tuple separately"
            lines.append(
                f"{self.disagreeing_questions} question(s) were forecast differently in different tuples: {how}"
            )
        q = t.realized_questions
        if q.n:
            lines.append(f"resolved questions, each once: Brier {_fmt(q.brier_before)} → {_fmt(q.brier_after)}, "
                         f"log loss {_fmt(q.log_before)} → {_fmt(q.log_after)} (n={q.n})")  # fmt: skip
        contradictory = sum(c.contradictory_resolutions for c in self.checks)
        if contradictory:
            lines.append(f"{contradictory} tuple(s) have resolutions no possible world allows (left out of the "
                         "realized scores: no guarantee covers them)")  # fmt: skip
        if self.conflicting_resolutions:
            lines.append(
                f"{self.conflicting_resolutions} question(s) resolved differently in two places: left unresolved"
            )
        return lines


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


# --------------------------------------------------------------------------- computing the figures


def losses(p: np.ndarray, o: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Brier, log loss in nats) per forecast; log forecasts clipped as the arbitrage metric clips them."""
    c = clip_forecasts(p)
    return (p - o) ** 2, -np.log(np.where(o == 1.0, c, 1.0 - c))


class Sums:
    """Running sums of the two losses before and after, over resolved items."""

    def __init__(self) -> None:
        self.n = 0
        self.values = np.zeros(4)  # brier before, brier after, log before, log after

    def add(self, before: np.ndarray, after: np.ndarray, outcome: np.ndarray) -> None:
        known = ~np.isnan(outcome)
        if not known.any():
            return
        o = outcome[known]
        b0, l0 = losses(before[known], o)
        b1, l1 = losses(after[known], o)
        self.n += int(known.sum())
        self.values += [b0.sum(), b1.sum(), l0.sum(), l1.sum()]

    def result(self, unit: Literal["forecast", "question"]) -> Realized:
        if not self.n:
            return Realized(unit=unit)
        b0, b1, l0, l1 = (float(v / self.n) for v in self.values)
        return Realized(unit=unit, n=self.n, brier_before=b0, brier_after=b1, log_before=l0, log_after=l1)


def mean_violation(check: Check, probs: np.ndarray) -> float | None:
    return float(score_forecasts(check, probs).values("default").mean()) if len(probs) else None


def contradictory(check: Check, outcome: np.ndarray) -> np.ndarray:
    """Per tuple: whether its known resolutions (NaN: unknown) match no possible world of the check
    (a data error, such as the paper's P_or_Q questions that always resolve NO)."""
    known = ~np.isnan(outcome)
    fits = np.zeros(len(outcome), dtype=bool)
    for world in check.expanded_worlds:  # one column per outcome of a categorical field
        fits |= np.all(~known | (world[None, :] == outcome), axis=1)
    return ~fits
