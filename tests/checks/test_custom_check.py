"""Adding a check is a few lines of declaration: nothing in the library changes.

Two checks the paper does not have: SYMMETRY-AND (P∧Q against Q∧P) and a three-way
paraphrase. Their worlds, condition, arbitrage, frequentist metric, resolution and file
scoring all follow from the declaration.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from consistency.checks import Check, get_check, register
from consistency.evaluation.scoring import score_path
from consistency.metrics.scoring import score_forecasts

SYMMETRY_AND = Check("SYMMETRY_AND", {"P_and_Q": "P and Q", "Q_and_P": "Q and P"}, aliases=("symand",))
PARA3 = Check("PARAPHRASE3", {"P": "P", "para_P": "P", "para2_P": "P"}, aliases=("para3",))


def test_derived_structure():
    assert SYMMETRY_AND.worlds.tolist() == [[1, 1], [0, 0]]
    assert [str(c) for c in SYMMETRY_AND.constraints] == ["P_and_Q = Q_and_P"]
    assert [str(c) for c in PARA3.constraints] == ["P = para_P", "P = para2_P"]
    assert SYMMETRY_AND.resolve({"P": True, "Q": False}) == {"P_and_Q": False, "Q_and_P": False}


def test_scores_like_a_paraphrase():
    F = np.array([[0.7, 0.4], [0.3, 0.3], [0.0, 1.0]])
    ours = score_forecasts(SYMMETRY_AND, F)
    para = score_forecasts(get_check("para"), F)
    np.testing.assert_allclose(ours.arbitrage.violation, para.arbitrage.violation, atol=1e-12)
    np.testing.assert_allclose(ours.frequentist, para.frequentist, atol=1e-12)
    assert ours.arbitrage.violation[1] <= 1e-12


def test_three_way_paraphrase_matches_appendix_d1():
    """V = -n log[(Π F)^(1/n) + (Π (1-F))^(1/n)] and the price is the mean in log-odds."""
    F = np.random.default_rng(5).uniform(0.01, 0.99, size=(500, 3))
    result = score_forecasts(PARA3, F).arbitrage
    n = 3
    expected = -n * np.log(np.prod(F, axis=1) ** (1 / n) + np.prod(1 - F, axis=1) ** (1 / n))
    np.testing.assert_allclose(result.violation, expected, atol=1e-10)
    logodds = np.log(F / (1 - F)).mean(axis=1)
    np.testing.assert_allclose(result.prices[:, 0], 1 / (1 + np.exp(-logodds)), atol=1e-8)


def test_registered_check_scores_files(tmp_path):
    register(SYMMETRY_AND, replace=True)
    question = {"title": "Will both A and B happen?", "question_type": "binary"}
    lines = [
        {
            "line": {
                "P_and_Q": {"question": question, "forecast": {"prob": a}},
                "Q_and_P": {"question": question, "forecast": {"prob": b}},
            }
        }
        for a, b in [(0.2, 0.3), (0.5, 0.5)]
    ]
    path = tmp_path / "SymmetryAndChecker.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    report = score_path(path)
    assert report.files[0].check is SYMMETRY_AND
    assert report.files[0].scores.arbitrage.violation[1] == pytest.approx(0.0, abs=1e-12)
    assert report.files[0].scores.arbitrage.violation[0] > 0
