"""Check declarations: what is derived from them, the registry, and declaration errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from consistency.checks import Check, CheckDeclarationError, all_checks, check_for_fields, get_check, parse
from consistency.checks.check import FALSE, NONE, TRUE

PAPER = {
    # paper name: (class name, fields, number of possible worlds)
    "NEGATION": ("NegChecker", ["P", "not_P"], 2),
    "PARAPHRASE": ("ParaphraseChecker", ["P", "para_P"], 2),
    "CONSEQUENCE": ("ConsequenceChecker", ["P", "cons_P"], 3),
    "AND": ("AndChecker", ["P", "Q", "P_and_Q"], 4),
    "OR": ("OrChecker", ["P", "Q", "P_or_Q"], 4),
    "ANDOR": ("AndOrChecker", ["P", "Q", "P_and_Q", "P_or_Q"], 4),
    "BUT": ("ButChecker", ["P", "Q_and_not_P", "P_or_Q"], 3),
    "COND": ("CondChecker", ["P", "Q_given_P", "P_and_Q"], 3),
    "CONDCOND": ("CondCondChecker", ["P", "Q_given_P", "R_given_P_and_Q", "P_and_Q_and_R"], 4),
    "EXPEVIDENCE": ("ExpectedEvidenceChecker", ["P", "Q", "P_given_Q", "P_given_not_Q"], 4),
}
SHORT = {"neg": "NEGATION", "para": "PARAPHRASE", "cons": "CONSEQUENCE", "cond": "COND", "condcond": "CONDCOND"}


def test_the_ten_checks_with_the_papers_names():
    assert [c.name for c in all_checks()][:10] == list(PAPER)
    for name, (class_name, fields, n_worlds) in PAPER.items():
        check = get_check(name)
        assert check.class_name == class_name
        assert list(check.field_names) == fields
        assert len(check.worlds) == n_worlds
        assert get_check(class_name) is check
        assert get_check(name.lower()) is check
        assert get_check(class_name + ".jsonl") is check
        assert check_for_fields([*fields, "metadata"]) is check
    for short, name in SHORT.items():
        assert get_check(short) is get_check(name)
    with pytest.raises(KeyError, match="unknown check 'nope'"):
        get_check("nope")


def test_andor_has_exactly_the_four_possible_worlds():
    worlds = {tuple(w) for w in get_check("andor").worlds.tolist()}
    assert worlds == {(1, 1, 1, 1), (1, 0, 0, 1), (0, 1, 0, 1), (0, 0, 0, 0)}
    # the two impossible worlds the paper's code admitted
    assert (1, 0, 1, 0) not in worlds and (0, 1, 1, 0) not in worlds


def test_conditional_fields_are_none_when_their_condition_fails():
    assert {tuple(w) for w in get_check("cond").worlds.tolist()} == {(1, 1, 1), (1, 0, 0), (0, NONE, 0)}
    ev = {tuple(w) for w in get_check("expevidence").worlds.tolist()}
    assert ev == {(1, 1, 1, NONE), (1, 0, NONE, 1), (0, 1, 0, NONE), (0, 0, NONE, 0)}
    assert get_check("condcond").question_types == {
        "P": "binary",
        "Q_given_P": "conditional_binary",
        "R_given_P_and_Q": "conditional_binary",
        "P_and_Q_and_R": "binary",
    }


@pytest.mark.parametrize("check", all_checks(), ids=lambda c: c.name)
def test_worlds_and_resolution_agree_with_the_formulas(check):
    """Every assignment of the base events maps to a world, and resolve() propagates it."""
    worlds = {tuple(w) for w in check.worlds.tolist()}
    for values in itertools.product((True, False), repeat=len(check.bases)):
        assignment = dict(zip(check.bases, values, strict=True))
        if check.assume and not parse(check.assume).evaluate(assignment):
            with pytest.raises(ValueError, match="impossible"):
                check.resolve(assignment)
            continue
        resolved = check.resolve(assignment)
        expected = {name: f.evaluate(assignment) for name, f in check.formulas.items()}
        assert resolved == expected
        code = tuple(NONE if v is None else (TRUE if v else FALSE) for v in expected.values())
        assert code in worlds


def test_partial_resolution():
    assert get_check("cond").resolve({"P": False}) == {"P": False, "Q_given_P": None, "P_and_Q": False}
    assert get_check("cons").resolve({"P": True}) == {"P": True, "cons_P": True}
    assert get_check("cons").resolve({"P": False}) == {"P": False, "cons_P": None}
    assert get_check("para").resolve({"para_P": True}) == {"P": True, "para_P": True}
    assert get_check("but").resolve({"P_or_Q": False}) == {"P": False, "Q_and_not_P": False, "P_or_Q": False}
    with pytest.raises(KeyError, match="no base event or field named X"):
        get_check("neg").resolve({"X": True})


def test_derived_conditions_match_table_3():
    assert [str(c) for c in get_check("neg").constraints] == ["P + not_P = 1"]
    assert [str(c) for c in get_check("para").constraints] == ["P = para_P"]
    assert [str(c) for c in get_check("andor").constraints] == ["P + Q = P_and_Q + P_or_Q"]
    assert [str(c) for c in get_check("but").constraints] == ["P + Q_and_not_P = P_or_Q"]


@pytest.mark.parametrize("check", all_checks(), ids=lambda c: c.name)
def test_condition_holds_for_every_coherent_forecaster(check):
    F = check.coherent_sample(2000, np.random.default_rng(3))
    assert check.condition_holds(F, tol=1e-9).all()


def test_declaration_errors_are_clear():
    with pytest.raises(CheckDeclarationError, match="ends too early"):
        Check("BAD", {"P": "P and", "x": "Q"})
    with pytest.raises(CheckDeclarationError, match="not a field"):
        Check("BAD2", {"P": "P", "Q": "Q"}, condition="P <= R")
    with pytest.raises(CheckDeclarationError, match="does not follow from the fields' meaning"):
        Check("BAD3", {"P": "P", "P_and_Q": "P and Q"}, condition="P <= P_and_Q")
    with pytest.raises(CheckDeclarationError, match="explicit condition"):
        Check("BAD4", {"P": "P", "Q_given_P": "Q given P"})
