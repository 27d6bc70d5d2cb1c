"""The face-by-face fast path of the arbitrage solver against the active-set solver alone.

Every closed form (two worlds, independent groups, groups tied by one linear relation, complete
markets plus one event) and the Newton steps on a face must give the same violation as the general
solver, with a certificate (gap) within the promised 1e-9, on forecasts that include extreme
values, exact 0s and 1s, coherent tuples and unequal weights.
"""

from __future__ import annotations

import numpy as np
import pytest

from consistency.checks import all_checks, get_check
from consistency.metrics.arbitrage import _Problem, arbitrage, clip_forecasts
from consistency.metrics.closed_forms import closed_form

CHECKS = [c.name for c in all_checks()]
#: P, Q given P, and Q: a check of our own whose faces have no closed form (Newton steps).
MIXED = np.array([[1, 1, 1], [1, 0, 0], [0, -1, 1], [0, -1, 0]])


def forecasts(check, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    k = check.n_fields
    parts = [
        rng.random((n, k)),
        check.coherent_sample(n // 4, rng),
        np.round(rng.random((n // 4, k)) * 1.2 - 0.1, 2).clip(0, 1),  # LLM-style, with 0 and 1
        np.clip(rng.random((n // 4, k)) ** 6, 1e-9, 1),  # near 0
        1 - np.clip(rng.random((n // 4, k)) ** 6, 0, 1 - 1e-9),  # near 1
    ]
    return np.vstack(parts)


def assert_same(F: np.ndarray, worlds: np.ndarray, weights=None) -> None:
    fast = arbitrage(F, worlds, weights)
    slow = arbitrage(F, worlds, weights, faces=False)
    assert fast.gap.max() <= 1e-9
    assert slow.gap.max() <= 1e-9
    np.testing.assert_allclose(fast.violation, slow.violation, rtol=0, atol=2e-9)
    # The prices guarantee the reported profit in every world (checked where 1 - p keeps its digits).
    p, f = fast.prices[:, None], clip_forecasts(F)[:, None]
    with np.errstate(divide="ignore"):
        profit = np.where(worlds[None] == 1, np.log(p / f), np.where(worlds[None] == 0, np.log((1 - p) / (1 - f)), 0.0))
    w = np.broadcast_to(np.ones(worlds.shape[1]) if weights is None else weights, F.shape)
    worst = (profit * w[:, None]).sum(axis=2).min(axis=1)
    traded = (fast.violation > 0) & np.all((fast.prices > 1e-6) & (fast.prices < 1 - 1e-6), axis=1)
    np.testing.assert_allclose(worst[traded], fast.violation[traded], rtol=0, atol=2e-9)


@pytest.mark.parametrize("name", CHECKS)
def test_fast_path_matches_the_active_set_solver(name: str) -> None:
    check = get_check(name)
    assert_same(forecasts(check, 400, seed=1), check.worlds)


@pytest.mark.parametrize("name", CHECKS)
def test_fast_path_matches_with_unequal_weights(name: str) -> None:
    check = get_check(name)
    F = forecasts(check, 200, seed=2)
    w = np.random.default_rng(3).uniform(0.2, 5.0, size=F.shape)
    assert_same(F, check.worlds, w)
    # The ArbitrageForecaster's rule: x weighs more, every other field 1.
    assert_same(F, check.worlds, np.array([4.0] + [1.0] * (check.n_fields - 1)))


@pytest.mark.parametrize("name", CHECKS)
def test_closed_forms_certify_almost_every_tuple(name: str) -> None:
    """The fast path does the work: the active-set solver sees at most a few tuples in a thousand."""
    check = get_check(name)
    F = clip_forecasts(np.random.default_rng(4).random((5000, check.n_fields)))
    problem = _Problem.of(check.worlds)
    _, done, _ = problem.faces.solve(F, problem.logs(F), np.ones_like(F), 1e-13)
    assert done.mean() >= 0.995
    assert not any(face.newton for face in problem.faces.faces)  # every built-in face has a closed form


def test_appendix_d_closed_forms_still_agree() -> None:
    for name in ("NEGATION", "PARAPHRASE", "COND"):
        check = get_check(name)
        F = forecasts(check, 300, seed=5)
        np.testing.assert_allclose(arbitrage(F, check.worlds).violation, closed_form(name, F), rtol=0, atol=1e-9)


def test_faces_without_closed_form_take_newton_steps() -> None:
    problem = _Problem.of(MIXED)
    assert any(face.newton for face in problem.faces.faces)
    rng = np.random.default_rng(6)
    F = rng.random((2000, 3))
    assert_same(F, MIXED)
    assert_same(F, MIXED, rng.uniform(0.5, 3.0, size=F.shape))


def test_chain_and_group_structure_is_recognised() -> None:
    """Which closed form each check's faces use (so a change that loses one is noticed)."""

    def kinds(name: str) -> set[str]:
        out = set()
        for face in _Problem.of(get_check(name).worlds).faces.faces:
            if face.chain is not None:
                out.add("chain")
            elif face.separable is not None:
                out.add("tied" if face.separable.relation is not None else "free")
            elif len(face.worlds) == 2:
                out.add("two")
        return out

    assert kinds("COND") == kinds("CONDCOND") == kinds("EXPEVIDENCE") == {"chain"}
    assert kinds("BUT") == {"tied"}
    assert kinds("AND") == kinds("OR") == {"free", "tied"}
    assert kinds("ANDOR") == {"free", "tied"}
