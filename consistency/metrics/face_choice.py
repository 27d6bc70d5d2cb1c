"""Which face holds the dual's optimum, told in advance by cheap tests, where the check allows it.

The face-by-face solver (:mod:`.faces`) tries a check's faces in a fixed order, each on the tuples
the earlier ones left. When the optimal face follows from the forecasts in closed form, each tuple
can be tried on its own face first, and certified once. The certificate still decides: a tuple
its face does not certify (a tie between faces lost to rounding) goes on to the usual order.

ANDOR (P, Q, P∧Q, P∨Q; worlds TT, TF, FT, FF) is such a check. Every field resolves in every
world, so D is Σ_i w_i KL(p_i ‖ F_i) over coherent prices p. With a = p_P, b = p_Q and c = p_P∧Q,
coherence is p_P∨Q = a + b - c with c ≤ a (λ_TF ≥ 0) and c ≤ b (λ_FT ≥ 0); λ_TT = c ≥ 0 and
λ_FF ≥ 0 never bind (a price of 0 or 1 costs an infinite KL). A strictly convex objective under
two linear constraints has one optimum, whose active set is the one whose KKT conditions hold.
With l_i the forecasts' logits and a weighted mean written ⟨·⟩ (logit p - l_i is ∂KL/∂p_i):

- both bind, worlds TT and FF: every price is σ(m), m = ⟨l_P, l_Q, l_A, l_O⟩; the multipliers
  w_P (m - l_P) + w_O (m - l_O) (of c ≤ a) and w_Q (m - l_Q) + w_O (m - l_O) (of c ≤ b) are ≥ 0;
- only c ≤ b binds, worlds TT, TF and FF: P∨Q takes P's price σ(u) and P∧Q takes Q's σ(v), with
  u = ⟨l_P, l_O⟩ and v = ⟨l_Q, l_A⟩; feasible when u ≥ v, multiplier w_O (u - l_O) - w_A (v - l_A) ≥ 0;
- only c ≤ a binds: the same with P and Q swapped;
- neither: the full face (its own conditions, λ_TF and λ_FT ≥ 0, then hold by elimination).

Without weights the four cases are the signs of s₁ = l_P + l_O - l_Q - l_A and
s₂ = l_Q + l_O - l_P - l_A: both ≤ 0 two worlds, s₁ ≥ 0 ≥ s₂ drops FT, s₂ ≥ 0 ≥ s₁ drops TF, both > 0
the full face.
"""

from __future__ import annotations

from itertools import permutations

import numpy as np

#: ANDOR's worlds: rows TT, TF, FT, FF; columns P, Q, P∧Q, P∨Q.
_ANDOR = np.array([[1, 1, 1, 1], [1, 0, 0, 1], [0, 1, 0, 1], [0, 0, 0, 0]])


class AndOrChoice:
    """The optimal face of a world matrix that is ANDOR's up to the order of worlds and fields."""

    def __init__(self, fields: tuple[int, ...], worlds: tuple[int, ...]) -> None:
        self.fields = np.array(fields, dtype=np.intp)  # columns of P, Q, P∧Q, P∨Q
        tt, tf, ft, ff = worlds
        # The faces in the order of :meth:`pick`'s labels, as sets of world indices.
        self.faces = [frozenset(s) for s in ((tt, ff), (tt, tf, ff), (tt, ft, ff), (tt, tf, ft, ff))]

    @classmethod
    def of(cls, worlds: np.ndarray) -> AndOrChoice | None:
        if worlds.shape != _ANDOR.shape:
            return None
        for cols in permutations(range(4)):
            rows = [np.flatnonzero((worlds[:, cols] == r).all(axis=1)) for r in _ANDOR]
            if all(len(r) == 1 for r in rows):
                return cls(cols, tuple(int(r[0]) for r in rows))
        return None

    def pick(self, L, w: np.ndarray, unit: bool) -> np.ndarray:
        """Per tuple, the index into :attr:`faces` of the face that holds the optimum."""
        logit = L[0][:, self.fields] - L[1][:, self.fields]
        lp, lq, la, lo = logit.T
        if unit:
            s1 = lp + lo - lq - la
            s2 = lq + lo - lp - la
            drop_ft, drop_tf = (s1 >= 0) & (s2 <= 0), (s2 >= 0) & (s1 <= 0)
            two = (s1 <= 0) & (s2 <= 0)
        else:
            wp, wq, wa, wo = w[:, self.fields].T
            m = (wp * lp + wq * lq + wa * la + wo * lo) / (wp + wq + wa + wo)
            two = (wp * (m - lp) + wo * (m - lo) >= 0) & (wq * (m - lq) + wo * (m - lo) >= 0)
            drop_ft = self._one_binds(lp, lq, la, lo, wp, wq, wa, wo)
            drop_tf = self._one_binds(lq, lp, la, lo, wq, wp, wa, wo)
        return np.where(two, 0, np.where(drop_ft, 1, np.where(drop_tf, 2, 3)))

    @staticmethod
    def _one_binds(lp, lq, la, lo, wp, wq, wa, wo) -> np.ndarray:
        """Whether only c ≤ b binds: P∨Q priced with P, P∧Q with Q, and both conditions hold."""
        u = (wp * lp + wo * lo) / (wp + wo)
        v = (wq * lq + wa * la) / (wq + wa)
        return (u >= v) & (wo * (u - lo) - wa * (v - la) >= 0)
