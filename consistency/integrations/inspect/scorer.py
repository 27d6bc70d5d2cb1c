"""The scorer and metrics: each tuple's exact arbitrage and frequentist violation, through our metrics.

Per-tuple numbers come from :func:`~consistency.metrics.scoring.score_forecasts` with the same
parameters as ``cc score`` (ε, thresholds), and the metrics summarise them as ``cc score`` does: the
mean and the fraction above the threshold per check, and across checks the mean of the per-check
figures (each check weighs the same). A tuple with an unusable answer is scored as a failure: its
value holds ``failed = 1`` and no violations, its explanation the reason.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import numpy as np
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import TaskState

from ...checks import get_check
from ...metrics import DEFAULT_EPSILON
from ...metrics.scoring import ScoreParams, score_forecasts
from .answers import Answer
from .compat import registered_name
from .dataset import ANSWERS_KEY

#: The two metrics ``cc`` reports, by the key they have in a Score's value.
METRIC_KEYS = {"arbitrage": "default", "frequentist": "frequentist"}


def tuple_score(check_name: str, answers: dict[str, Answer], params: ScoreParams) -> Score:
    """The Score of one tuple's answers (also used to rebuild Scores when exporting a ``cc`` run)."""
    check = get_check(check_name)
    shown = {field: a.model_dump() for field, a in answers.items()}
    problems = [
        f"{field}: {answers[field].error if field in answers else 'not asked'}"
        for field in check.field_names
        if field not in answers or not answers[field].ok
    ]
    if problems:
        reason = "; ".join(problems)
        return Score(
            value={"arbitrage": None, "frequentist": None, "failed": 1.0},
            answer=None,
            explanation=f"no forecast for {reason}",
            metadata={"check": check.class_name, "answers": shown, "error": reason},
        )
    probs = [answers[field].prob for field in check.field_names]
    scores = score_forecasts(check, np.array([probs], dtype=float), params=params)
    data = scores.violation_data(0)
    arb, freq = data["default"], data["frequentist"]
    return Score(
        value={"arbitrage": arb["violation"], "frequentist": freq["violation"], "failed": 0.0},
        answer=json.dumps(dict(zip(check.field_names, probs, strict=True))),
        explanation=(
            f"arbitrage {arb['violation']:.6g} nats ({arb['check_result'].lower()}), "
            f"frequentist {freq['violation']:.6g} ({freq['check_result'].lower()})"
        ),
        metadata={
            "check": check.class_name,
            "answers": shown,
            "violation_data": data,
            "certificate": {"prices": arb["arbitrage_prices"], "gap": arb["gap"], "epsilon": arb["epsilon"]},
        },
    )


def check_metrics(rows: list[tuple[str, dict[str, Any]]], params: ScoreParams | None = None) -> dict[str, float]:
    """The summary of (check class name, Score value) rows: overall and ``<check>/...`` per check."""
    params = params or ScoreParams()
    per_check: dict[str, dict[str, list[float]]] = defaultdict(lambda: {k: [] for k in METRIC_KEYS})
    failed = 0
    for check, value in rows:
        if value.get("failed"):
            failed += 1
            per_check[check]
            continue
        for key in METRIC_KEYS:
            per_check[check][key].append(float(value[key]))
    out: dict[str, float] = {}
    figures: dict[str, list[float]] = defaultdict(list)
    for check in sorted(per_check, key=_check_order):
        for key, cc_metric in METRIC_KEYS.items():
            values = np.array(per_check[check][key], dtype=float)
            if not len(values):
                continue
            mean = float(values.mean())
            violated = float((values > params.threshold(cc_metric)).mean())
            figures[f"{key}_mean"].append(mean)
            figures[f"{key}_violated"].append(violated)
            if len(per_check) > 1:
                name = get_check(check).name.lower()
                out[f"{name}/{key}_mean"], out[f"{name}/{key}_violated"] = mean, violated
    for name in ("arbitrage_mean", "arbitrage_violated", "frequentist_mean", "frequentist_violated"):
        if figures[name]:
            out[name] = float(np.mean(figures[name]))
    out["scored"] = float(len(rows) - failed)
    out["failed"] = float(failed)
    return {k: out[k] for k in sorted(out, key=lambda k: ("/" in k, k))}


def _check_order(class_name: str) -> int:
    from ...checks import all_checks

    return [c.class_name for c in all_checks()].index(class_name)


# scores="unreduced": every epoch is a tuple forecast, as in `cc score LOG`
@metric(name=registered_name("consistency"), scores="unreduced")
def consistency_metrics() -> Metric:
    """Mean violation and fraction violated (arbitrage, frequentist), overall and per check."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        rows = []
        for s in scores:
            check = (s.score.metadata or {}).get("check") or (s.sample_metadata or {}).get("check")
            value = s.score.value if isinstance(s.score.value, dict) else {"failed": 1.0}
            rows.append((str(check), value))
        return check_metrics(rows)

    return compute  # type: ignore[return-value]


@scorer(metrics=[consistency_metrics()], name=registered_name("consistency_scorer"))
def consistency_scorer(epsilon: float = DEFAULT_EPSILON) -> Scorer:
    """Exact arbitrage (with its certificate: prices, gap, ε) and frequentist violation of the tuple."""
    params = ScoreParams(epsilon=epsilon)

    async def score(state: TaskState, target: Target) -> Score:
        recorded = state.store.get(ANSWERS_KEY, {})
        answers = {field: Answer.model_validate(a) for field, a in recorded.items()}
        return tuple_score(state.metadata["check"], answers, params)

    return score
