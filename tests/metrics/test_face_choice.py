"""ANDOR's optimal face told from the signs of cheap tests, against the active-set solver alone.

The choice only orders the work (the certificate still decides), so besides the violations these
tests check that the chosen face is the one the general solver's λ lives on and that it certifies
the tuple at the first try: otherwise the fast path would silently fall back to trying every face.
"""

from __future__ import annotations

import numpy as np
import pytest

from consistency.checks import all_checks, get_check
from consistency.metrics.arbitrage import _Problem, arbitrage, clip_forecasts
from consistency.metrics.face_choice import AndOrChoice

ANDOR = get_check("ANDOR").worlds
# Active-set steps within which a tuple its face leaves uncertified must be certified (30 at most seen).
_SETTLE_STEPS = 50


def forecasts(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.vstack(
        [
            rng.random((n, 4)),
            get_check("ANDOR").coherent_sample(n // 4, rng),
            np.round(rng.random((n // 4, 4)) * 1.2 - 0.1, 2).clip(0, 1),  # LLM-style, with 0 and 1
            np.clip(rng.random((n // 4, 4)) ** 6, 1e-9, 1),  # near 0
        ]
    )


def weight_cases(shape: tuple[int, int]):
    yield None
    yield np.random.default_rng(7).uniform(0.2, 5.0, size=shape)
    yield np.array([4.0, 1.0, 1.0, 1.0])  # the ArbitrageForecaster's rule


@pytest.mark.parametrize("case", range(3))
def test_choice_matches_the_active_set_solver(case: int) -> None:
    F = forecasts(800, seed=case)
    weights = list(weight_cases(F.shape))[case]
    fast = arbitrage(F, ANDOR, weights)
    slow = arbitrage(F, ANDOR, weights, faces=False)
    assert fast.gap.max() <= 1e-9
    np.testing.assert_allclose(fast.violation, slow.violation, rtol=0, atol=1e-9)


@pytest.mark.parametrize("case", range(3))
def test_chosen_face_holds_the_optimum_and_certifies_first_time(case: int) -> None:
    problem = _Problem.of(ANDOR)
    choice, chosen = problem.faces.choice
    F = clip_forecasts(forecasts(800, seed=10 + case))
    w = np.ascontiguousarray(np.broadcast_to(1.0 if case == 0 else list(weight_cases(F.shape))[case], F.shape))
    L = problem.logs(F)
    label = choice.pick(L, w, unit=case == 0)
    assert set(np.unique(label)) == {0, 1, 2, 3}  # every face occurs
    # The general solver's λ lives on the chosen face (where its support is clear-cut).
    lam, _ = problem.solve(F, w, 1e-13, 100)
    support = [frozenset(np.flatnonzero(row > 1e-6).tolist()) for row in lam]
    clear = np.all((lam > 1e-6) | (lam == 0), axis=1)
    assert clear.mean() > 0.9
    assert all(support[i] == choice.faces[label[i]] for i in np.flatnonzero(clear))
    # Each tuple with moderate forecasts is certified on its own face, before any other face is
    # tried: their gaps stay below 1% of the certificate's slack on every BLAS kernel measured,
    # so rounding cannot move this. Forecasts within 1e-3 of 0 or 1 may lose digits in the closed
    # form (a few per hundred, how many depends on the kernel); the active-set solver must then
    # certify each of them within a bounded number of steps, which is what the fast path relies on.
    for j, face in enumerate(chosen):
        rows = np.flatnonzero(label == j)
        Lr, wr = (L[0][rows], L[1][rows]), w[rows]
        sub = face.start(Lr, wr, (wr * Lr[0], wr * Lr[1]))
        full = np.zeros((rows.size, problem.k))
        full[:, face.worlds] = sub
        ok = problem.faces.certified(full, Lr, wr, 1e-11)[0] & (sub >= 0).all(axis=1)
        moderate = np.all((F[rows] > 1e-3) & (F[rows] < 1 - 1e-3), axis=1)
        assert moderate.sum() > 100  # the exact claim is tested on many tuples of every face
        assert ok[moderate].all(), (j, F[rows[~ok & moderate]])
        rest = rows[~ok]
        if rest.size:
            lam_rest, steps = problem.solve(F[rest], w[rest], 1e-13, _SETTLE_STEPS)
            settled = problem.faces.certified(lam_rest, (L[0][rest], L[1][rest]), w[rest], 1e-11)[0]
            assert settled.all(), (j, steps, F[rest[~settled]])


def test_andor_is_recognised_in_any_order_of_worlds_and_fields() -> None:
    rng = np.random.default_rng(8)
    F = forecasts(300, seed=9)
    want = arbitrage(F, ANDOR, faces=False).violation
    for _ in range(4):
        rows, cols = rng.permutation(4), rng.permutation(4)
        worlds = ANDOR[rows][:, cols]
        assert AndOrChoice.of(worlds) is not None
        got = arbitrage(F[:, cols], worlds)
        assert got.gap.max() <= 1e-9
        np.testing.assert_allclose(got.violation, want, rtol=0, atol=1e-9)


def test_other_checks_keep_the_fixed_order() -> None:
    for check in all_checks():
        assert (AndOrChoice.of(check.worlds) is not None) == (check.name == "ANDOR")
