"""Template instantiation: exact logic, dates and provenance derived from each check's declaration."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from consistency.checks import Check, CheckDeclarationError, all_checks, chain_fields, get_check
from consistency.checks.check import NONE
from consistency.generate import TemplateInstantiator, instantiate_all
from consistency.models import ForecastingQuestion, tuple_model

TEMPLATE = TemplateInstantiator()
#: Checks built from P, Q, R; chains (MONOTONE) move one question's deadline (tests/generate/test_monotone_generate.py).
CHECKS = [c for c in all_checks() if chain_fields(c) is None]


def _bases(resolutions, years=(2027, 2028, 2029)):
    return {
        name: ForecastingQuestion(
            id=f"base-{name}",
            title=f"Will event {name} happen?",
            body=f"Resolves YES if {name} happens.",
            resolution_date=f"{year}-06-30",
            created_date=f"2026-0{i + 1}-01",
            resolution=res,
        )
        for i, (name, res, year) in enumerate(zip("PQR", resolutions, years, strict=True))
    }


def _encode(value):
    return NONE if value is None else int(value)


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.name)
@settings(max_examples=30, deadline=None)
@given(resolutions=st.tuples(st.booleans(), st.booleans(), st.booleans()))
def test_resolutions_are_a_possible_world(check, resolutions):
    tup = TEMPLATE.instantiate_sync(check, _bases(resolutions))
    row = tuple(_encode(tup[f]["resolution"]) for f in check.field_names)
    assert row in {tuple(w) for w in check.worlds.tolist()}
    # and it is the value of the field's (template) formula in that world
    world = dict(zip("PQR", resolutions, strict=True))
    for name, formula in check.template_check.formulas.items():
        assert tup[name]["resolution"] == formula.evaluate(world)


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.name)
def test_every_possible_world_is_reached(check):
    reached = set()
    for res in np.ndindex(2, 2, 2):
        tup = TEMPLATE.instantiate_sync(check, _bases(tuple(bool(v) for v in res)))
        reached.add(tuple(_encode(tup[f]["resolution"]) for f in check.field_names))
    assert reached == {tuple(w) for w in check.worlds.tolist()}


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.name)
def test_tuple_is_valid_and_dated_from_its_bases(check):
    bases = _bases((None, None, None))
    tup = TEMPLATE.instantiate_sync(check, bases)
    tuple_model(check).model_validate(tup)
    for name, formula in check.template_check.formulas.items():
        involved = sorted(formula.atoms())
        assert tup[name]["resolution_date"] == bases[involved[-1]].model_dump(mode="json")["resolution_date"]
        assert tup[name]["resolution"] is None
        assert tup[name]["question_type"] == check.question_types[name]
        if name not in bases:
            for base in involved:  # every base's criteria is carried over
                assert bases[base].body in tup[name]["body"]
                assert bases[base].title in tup[name]["title"]
    assert tup["metadata"]["instantiator"] == "template"
    assert set(tup["metadata"]["base_sentences"]) == set(check.template_check.bases)


def test_base_fields_are_the_base_questions_and_ids_are_stable():
    bases = _bases((True, False, None))
    first = TEMPLATE.instantiate_sync(get_check("cond"), bases)
    again = TEMPLATE.instantiate_sync(get_check("cond"), bases)
    assert first == again
    assert first["P"]["id"] == "base-P"
    assert first["Q_given_P"]["id"] != first["P_and_Q"]["id"]


def test_instantiate_all_is_deterministic_and_groups_related_questions():
    qs = [
        ForecastingQuestion(id=str(i), title=f"Q{i}?", metadata={"category": "ab"[i % 2]}, resolution_date="2028-01-01")
        for i in range(12)
    ]
    a = asyncio.run(instantiate_all(TEMPLATE, get_check("and"), qs, 10, seed=3)).tuples
    b = asyncio.run(instantiate_all(TEMPLATE, get_check("and"), qs, 10, seed=3)).tuples
    assert a == b and len(a) == 10
    assert len({(t["P"]["id"], t["Q"]["id"]) for t in a}) == 10
    for t in a:
        assert int(t["P"]["id"]) % 2 == int(t["Q"]["id"]) % 2


def test_an_instantiation_override_must_stay_inside_the_checks_worlds():
    with pytest.raises(CheckDeclarationError, match="instantiate"):
        Check(
            "BAD", {"P": "P", "cons_P": "Q"}, assume="P implies Q", condition="P <= cons_P", instantiate={"cons_P": "Q"}
        )
