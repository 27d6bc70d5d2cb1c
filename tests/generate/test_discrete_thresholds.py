"""CDF_THRESHOLDS on a discrete numeric question: the thresholds fall on the edges between whole outcomes, where
P(X > t) is the mass of whole outcomes, never inside a bucket, where the CDF interpolates over one outcome."""

from __future__ import annotations

import numpy as np
import pytest

from consistency import distributions as dist
from consistency.checks import get_check
from consistency.generate.categorical import bucket_edges, categorical_tuple, choose_thresholds, fits
from consistency.models import ForecastingQuestion, NumericForecast
from consistency.outcomes import forecast_row


def seats(crowd: list[float] | None = None, n: int = 10) -> ForecastingQuestion:
    """Seats won, 0 to n - 1: n buckets of one seat between -0.5 and n - 0.5 (Metaculus's discrete layout)."""
    meta: dict = {"discrete_outcomes": n}
    if crowd is not None:
        meta["crowd_forecast"] = {"cdf": crowd}
    return ForecastingQuestion(
        id=f"seats{n}", title="How many seats will the Green party win?", question_type="numeric",
        range={"lower": -0.5, "upper": n - 0.5, "unit": "seats"}, metadata=meta, resolution=7.0,
    )  # fmt: skip


def crowd_of(masses: list[float]) -> list[float]:
    """The 201-point CDF of whole-outcome masses, linear inside each bucket (as the scraper regrids it)."""
    edges = np.concatenate([[0.0], np.cumsum(masses)])
    return np.interp(dist.locations(), np.linspace(0, 1, len(masses) + 1), edges).tolist()


MASSES = [0.02, 0.03, 0.05, 0.1, 0.2, 0.18, 0.14, 0.12, 0.1, 0.06]


def test_the_thresholds_of_a_discrete_question_are_bucket_edges_and_ask_about_whole_outcomes():
    q = seats(crowd_of(MASSES))
    at = choose_thresholds(q, 3)  # the crowd's quartiles fall inside buckets 3, 5 and 7 ...
    crowd = np.asarray(q.metadata["crowd_forecast"]["cdf"])
    inside = np.interp([0.25, 0.5, 0.75], crowd, q.range.grid())
    assert not np.allclose(inside % 1, 0.5)
    assert at == [3.5, 5.5, 6.5]  # ... and the thresholds are the nearest edges between whole seats
    check = get_check("CDF_THRESHOLDS")
    tup = categorical_tuple(check, q)
    assert [tup[f]["metadata"]["outcome_event"]["above"] for f in ("T_1", "T_2", "T_3")] == at
    assert tup["T_1"]["title"].endswith("be greater than 3.5 seats?")
    assert [tup[f]["resolution"] for f in ("T_1", "T_2", "T_3")] == [True, True, True]  # 7 seats
    # the forecast's bins between the thresholds are sums of whole outcomes: 0-3, 4-5, 6, 7-9 seats
    from consistency.models import ForecastEntry, tuple_model

    made = tuple_model(check).model_validate(tup)
    forecast = NumericForecast(cdf=crowd.tolist())
    entries = {"X": ForecastEntry(question=made.X, forecast=forecast)}
    for f in ("T_1", "T_2", "T_3"):
        entries[f] = ForecastEntry(question=getattr(made, f), forecast={"prob": 0.5})
    bins = forecast_row(check, entries)[:4]
    expected = [sum(MASSES[:4]), sum(MASSES[4:6]), MASSES[6], sum(MASSES[7:])]
    assert bins == pytest.approx(expected, abs=1e-12)


def test_without_a_crowd_the_edges_are_spread_and_too_many_thresholds_do_not_fit():
    assert choose_thresholds(seats(), 3) == [2.5, 4.5, 7.5]  # even steps 0.25, 0.5, 0.75 of 10 buckets: edges 3, 5, 8
    assert choose_thresholds(seats(n=4), 3) == [0.5, 1.5, 2.5]  # every edge of 4 buckets
    assert fits(get_check("CDF_THRESHOLDS"), seats(n=4))
    assert not fits(get_check("CDF_THRESHOLDS"), seats(n=3))  # two edges between three outcomes
    assert fits(get_check("CDF_THRESHOLDS2"), seats(n=3))
    with pytest.raises(ValueError, match="has 2 edges between them, not 3"):
        choose_thresholds(seats(n=3), 3)
    # crowded targets still get distinct edges, in order
    assert bucket_edges(np.array([0.96, 0.97, 0.98]), 10).tolist() == [0.7, 0.8, 0.9]
    assert bucket_edges(np.array([0.01, 0.02, 0.03]), 10).tolist() == [0.1, 0.2, 0.3]
