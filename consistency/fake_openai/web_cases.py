"""The fixture web server's data sets: ``special_data``, the cases the scraper tests name one by one
(binary and typed, in a known order), and ``bulk_data``, many plain binary items for speed and paging."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from .web_data import T0, FixtureData, manifold_market, metaculus_post, polymarket_market, sample_articles
from .web_typed import (
    DAY,
    fixture_cdf,
    manifold_multi_market,
    manifold_pseudo_numeric,
    metaculus_group_post,
    metaculus_typed_post,
    metaculus_typed_question,
    polymarket_event,
)

#: The Metaculus tournament some special posts belong to (``projects.tournament`` in ``/api/posts/``).
TOURNAMENT = {"id": 32600, "type": "tournament", "name": "Fixture AI Benchmark", "slug": "fixture-aib"}
TOURNAMENT_POSTS = (101, 102, 201, 202, 203, 204, 205, 206, 207)


def special_data() -> FixtureData:
    """The cases each source must handle, in a known order (window 2024-05-01 .. 2024-08-15)."""
    d = timedelta(days=1)
    meta = [
        metaculus_post(101, "Will A happen by June 2024?", resolution="yes", resolve=T0 + 30 * d, created=T0 - 60 * d),
        metaculus_post(102, "Will B happen by July 2024?", resolution="no", resolve=T0 + 60 * d, created=T0 - 60 * d),
        metaculus_post(103, "Will C happen?", resolution="annulled", resolve=T0 + 20 * d, created=T0 - 60 * d),
        metaculus_post(104, "Will D happen?", resolution="ambiguous", resolve=T0 + 20 * d, created=T0 - 60 * d),
        metaculus_typed_post(105, metaculus_typed_question(
            100105, "Which E?", kind="multiple_choice", resolution="E2", resolve=T0 + 20 * d, created=T0 - 60 * d,
            options=["E1", "E2", "E3"], early=[0.4, 0.4, 0.2], final=[0.1, 0.8, 0.1])),
        metaculus_post(106, "Group F", resolution=None, resolve=T0 + 20 * d, created=T0 - 60 * d, kind="group"),
        metaculus_post(107, "Will G happen by 2023?", resolution="yes", resolve=T0 - 200 * d, created=T0 - 300 * d),
        metaculus_post(108, "Will H happen this weekend?", resolution="no", resolve=T0 + 12 * d, created=T0 + 10 * d),
        metaculus_post(109, "Will I happen by August 2024?", resolution="yes", resolve=T0 + 90 * d,
                       created=T0 - 10 * d, forecasters=3),
    ]  # fmt: skip
    mani = [
        manifold_market("m1", "Will J happen by June 2024?", resolution="YES", close=T0 + 30 * d, created=T0 - 40 * d),
        manifold_market("m2", "Will K happen by July 2024?", resolution="NO", close=T0 + 60 * d, created=T0 - 40 * d),
        manifold_market("m3", "Will L happen?", resolution="MKT", close=T0 + 30 * d, created=T0 - 40 * d),
        manifold_market("m4", "Will M happen?", resolution="CANCEL", close=T0 + 30 * d, created=T0 - 40 * d),
        manifold_market("m6", "Will J happen by June 2024?", resolution="YES", close=T0 + 30 * d, created=T0 - 40 * d,
                        token="CASH"),
        manifold_market("m7", "Will O happen?", resolution=None, close=T0 + 300 * d, created=T0 - 40 * d),
    ]  # fmt: skip
    poly = [
        polymarket_market(501, "Will P happen by June 30?", prices=("1", "0"), closed=True, end=T0 + 60 * d,
                          created=T0 - 30 * d),
        polymarket_market(502, "Will Q happen by June 30?", prices=("0", "1"), closed=True, end=T0 + 60 * d,
                          created=T0 - 30 * d),
        polymarket_market(503, "Will R happen by June 30?", prices=("0.5", "0.5"), closed=True, end=T0 + 60 * d,
                          created=T0 - 30 * d),
        polymarket_market(504, "Who wins S?", prices=("1", "0", "0"), closed=True, end=T0 + 60 * d,
                          created=T0 - 30 * d, outcomes=("Ann", "Bob", "Cy")),
        polymarket_market(505, "Will T happen by 2030?", prices=("0.25", "0.75"), closed=False, end=T0 + 2000 * d,
                          created=T0 - 30 * d),
    ]  # fmt: skip
    typed_meta, typed_mani, events, early = typed_cases()
    for post in meta + typed_meta:  # a tournament of mixed questions, as the AI benchmarking ones are
        if post["id"] in TOURNAMENT_POSTS:
            post["projects"] = {"tournament": [TOURNAMENT], "default_project": TOURNAMENT}
    return FixtureData(
        metaculus=meta + typed_meta,
        manifold=mani + typed_mani,
        polymarket=poly,
        articles=sample_articles(),
        polymarket_events=events,
        early=early,
    )


def bulk_data(n: int, seed: int = 0, typed: bool = False) -> FixtureData:
    """``n`` ordinary resolved binary questions per platform (for benchmarks and end-to-end runs);
    ``typed``: a third of the Metaculus ones multiple-choice and a third numeric (each with its
    community history; a numeric one's CDF at the cut-off in the listing, so no extra request)."""
    rng = random.Random(seed)
    meta, mani, poly = [], [], []
    for i in range(n):
        resolve = T0 + timedelta(days=rng.randint(1, 100), hours=rng.randint(0, 23))
        created = resolve - timedelta(days=rng.randint(10, 400))
        yes = rng.random() < 0.4
        topic = f"event {i} in region {i % 37}"
        if typed and i % 3 == 1:
            p = round(rng.uniform(0.1, 0.6), 3)
            meta.append(metaculus_typed_post(10000 + i, metaculus_typed_question(
                20000 + i, f"Which region will report {topic}?", kind="multiple_choice", resolution="North",
                resolve=resolve, created=created, options=["North", "South", "Other"],
                early=[p, 0.3, round(0.7 - p, 3)], final=[0.8, 0.1, 0.1])))  # fmt: skip
        elif typed and i % 3 == 2:
            mid = round(rng.uniform(0.2, 0.8), 3)
            meta.append(metaculus_typed_post(10000 + i, metaculus_typed_question(
                20000 + i, f"How many reports of {topic}?", kind="numeric", resolution=str(round(100 * mid, 1)),
                resolve=resolve, created=created, bounds=(0.0, 100.0), early=fixture_cdf(200, mid, 0.1),
                final=fixture_cdf(200, mid, 0.05), final_days=9)))  # fmt: skip
        else:
            meta.append(
                metaculus_post(
                    10000 + i,
                    f"Will {topic} occur?",
                    resolution="yes" if yes else "no",
                    resolve=resolve,
                    created=created,
                    cp=round(rng.random(), 3),
                )
            )
        mani.append(
            manifold_market(
                f"bulk{i}",
                f"Will {topic} be reported?",
                resolution="YES" if yes else "NO",
                close=resolve,
                created=created,
                prob=round(rng.random(), 3),
                traders=rng.randint(1, 80),
            )
        )
        poly.append(
            polymarket_market(
                90000 + i,
                f"Will {topic} be confirmed?",
                prices=("1", "0") if yes else ("0", "1"),
                closed=True,
                end=resolve,
                created=created,
            )
        )
    return FixtureData(metaculus=meta, manifold=mani, polymarket=poly)  # fmt: skip


def typed_cases() -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], dict[str, float]]:
    """The awkward multiple-choice and numeric cases, one per kind (window 2024-05-01 .. 2024-08-15):
    Metaculus posts, Manifold markets, Polymarket events, and the prices/probabilities in force before
    the last day (by CLOB token or Manifold answer id) that the fixture's histories report."""
    d = DAY
    party = ["Red", "Blue", "Other"]
    meta = [
        metaculus_typed_post(201, metaculus_typed_question(
            200201, "Which party will win the F election?", kind="multiple_choice", resolution="Other",
            resolve=T0 + 40 * d, created=T0 - 50 * d, options=party, early=[0.5, 0.3, 0.2], final=[0.1, 0.1, 0.8])),
        metaculus_typed_post(202, metaculus_typed_question(
            200202, "How many G units will be sold in 2024?", kind="numeric", resolution="above_upper_bound",
            resolve=T0 + 50 * d, created=T0 - 50 * d, bounds=(10.0, 10000.0), open_bounds=(True, True),
            zero_point=0.0, unit="units", early=fixture_cdf(200, 0.5, 0.15, 0.05, 0.05),
            final=fixture_cdf(200, 0.9, 0.1, 0.01, 0.3))),
        metaculus_typed_post(203, metaculus_typed_question(
            200203, "What will H measure in July 2024?", kind="numeric", resolution="42.5",
            resolve=T0 + 60 * d, created=T0 - 50 * d, bounds=(0.0, 100.0), unit="%",
            early=fixture_cdf(200, 0.4, 0.1), final=fixture_cdf(200, 0.45, 0.08), final_days=30)),
        metaculus_typed_post(204, metaculus_typed_question(
            200204, "When will I launch?", kind="date", resolution="2024-07-04 00:00:00+00:00",
            resolve=T0 + 70 * d, created=T0 - 50 * d,
            bounds=(datetime(2024, 6, 1, tzinfo=UTC).timestamp(), datetime(2024, 9, 1, tzinfo=UTC).timestamp()),
            open_bounds=(False, True), early=fixture_cdf(200, 0.3, 0.2, 0.0, 0.1),
            final=fixture_cdf(200, 0.35, 0.05, 0.0, 0.02))),
        metaculus_typed_post(205, metaculus_typed_question(
            200205, "How many J seats will be won?", kind="discrete", resolution="7.0", resolve=T0 + 45 * d,
            created=T0 - 50 * d, bounds=(-0.5, 9.5), outcomes=10, unit="seats",
            early=fixture_cdf(10, 0.6, 0.15), final=fixture_cdf(10, 0.65, 0.05))),
        metaculus_typed_post(206, metaculus_typed_question(
            200206, "Which K option will be chosen?", kind="multiple_choice", resolution="annulled",
            resolve=T0 + 30 * d, created=T0 - 50 * d, options=["K1", "K2"], early=[0.5, 0.5], final=[0.6, 0.4])),
        metaculus_typed_post(208, metaculus_typed_question(
            200209, "What will Y cost in 2025?", kind="numeric", resolution=None, resolve=T0 + 400 * d,
            created=T0 - 50 * d, bounds=(1.0, 500.0), open_bounds=(False, True), zero_point=-1.0, unit="$",
            early=fixture_cdf(200, 0.5, 0.2, 0.0, 0.1), final=fixture_cdf(200, 0.6, 0.1, 0.0, 0.05))),
        metaculus_group_post(207, "L outcomes in 2024", [
            metaculus_typed_question(200207, "L outcomes in 2024 (share)", kind="numeric", resolution="12.0",
                                     resolve=T0 + 55 * d, created=T0 - 50 * d, bounds=(0.0, 50.0),
                                     early=fixture_cdf(200, 0.3, 0.1), final=fixture_cdf(200, 0.25, 0.05),
                                     label="share"),
            metaculus_typed_question(200208, "L outcomes in 2024 (count)", kind="numeric", resolution="250.0",
                                     resolve=T0 + 55 * d, created=T0 - 50 * d, bounds=(0.0, 1000.0),
                                     early=fixture_cdf(200, 0.2, 0.1), final=fixture_cdf(200, 0.25, 0.02),
                                     label="count", final_days=20),
        ]),
    ]  # fmt: skip
    mani = [
        manifold_multi_market("mc1", "Which M team will win?", answers=["North", "South", "Other"],
                              probs=[0.15, 0.05, 0.8], resolution="Other", close=T0 + 35 * d, created=T0 - 40 * d,
                              other=True),
        manifold_multi_market("mc2", "Which N topics will be covered?", answers=["N1", "N2", "N3"],
                              probs=[0.4, 0.4, 0.2], resolution="CHOOSE_MULTIPLE", close=T0 + 35 * d,
                              created=T0 - 40 * d),
        manifold_multi_market("mc3", "Which O events will happen?", answers=["O1", "O2"], probs=[0.7, 0.6],
                              resolution="O1", close=T0 + 35 * d, created=T0 - 40 * d, sum_to_one=False),
        manifold_multi_market("mc4", "Which P city will host?", answers=["Paris", "Porto", "Prague"],
                              probs=[0.5, 0.3, 0.2], resolution=None, close=T0 + 300 * d, created=T0 - 40 * d),
        manifold_multi_market("mn1", "How many Q goals will be scored?", answers=["0-1", "2-3", "4+"],
                              probs=[0.2, 0.7, 0.1], resolution="2-3", close=T0 + 36 * d, created=T0 - 40 * d,
                              kind="MULTI_NUMERIC", midpoints=[0.5, 2.5, 5.0]),
        manifold_pseudo_numeric("pn1", "How many R downloads by July?", low=1.0, high=1000.0, log=True, prob=0.8,
                                resolution="MKT", close=T0 + 37 * d, created=T0 - 40 * d),
        manifold_pseudo_numeric("pn2", "How high will S go?", low=0.0, high=10.0, log=False, prob=0.3,
                                resolution="CANCEL", close=T0 + 37 * d, created=T0 - 40 * d),
    ]  # fmt: skip
    poly = [
        polymarket_event(701, "Who will win the T race?", labels=["Tia", "Tom", "Other"], yes_prices=["0", "1", "0"],
                         closed=True, end=T0 + 60 * d, created=T0 - 30 * d),
        polymarket_event(702, "Who will win the U cup?", labels=["Uma", "Ugo", "Other"],
                         yes_prices=["0.55", "0.3", "0.25"], closed=False, end=T0 + 3000 * d, created=T0 - 30 * d),
        polymarket_event(703, "How high will V close?", labels=["Above 10", "Above 20"], yes_prices=["1", "0"],
                         closed=True, end=T0 + 60 * d, created=T0 - 30 * d, neg_risk=False),
        polymarket_event(704, "Who will chair W?", labels=["Wes", "Wil"], yes_prices=["0", "0"], closed=True,
                         end=T0 + 60 * d, created=T0 - 30 * d),
        polymarket_event(705, "Will X happen?", labels=["X"], yes_prices=["1"], closed=True, end=T0 + 60 * d,
                         created=T0 - 30 * d),
    ]  # fmt: skip
    # before the last day: Manifold answers' probabilities and the events' Yes prices (701 sums to 1.1)
    early = {"mc1-a0": 0.5, "mc1-a1": 0.3, "mc1-a2": 0.2, "mn1-a0": 0.3, "mn1-a1": 0.5, "mn1-a2": 0.2,
             "70100000": 0.5, "70101000": 0.35, "70102000": 0.25}  # fmt: skip
    return meta, mani, poly, early
