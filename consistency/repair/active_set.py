"""A warm-startable solver for the joint repair's inner QP: an augmented Lagrangian with semismooth Newton steps.

``min ½||q - p||²`` subject to ``E q = b_e`` and ``G q <= b_g``, where ``q`` is every variable (the
joint repair's affine case, :attr:`.qp.System.affine`). With multipliers ``y``, ``z >= 0`` and a
penalty ``ρ``, each round minimises the augmented Lagrangian

    φ(q) = ½||q - p||² + ||y + ρ (E q - b_e)||² / 2ρ + ||max(0, z + ρ (G q - b_g))||² / 2ρ,

a convex piecewise quadratic, by Newton steps whose matrix ``I + ρ EᵀE + ρ G_Aᵀ G_A`` (``A`` the rows
active at ``q``) is one sparse factorisation, kept while the active rows stay the same; then updates
the multipliers (``y += ρ r_e``, ``z = max(0, z + ρ r_g)``). Degenerate and redundant active rows
need no care: the penalty keeps the matrix definite. Started from the previous outer iteration's
``(q, y, z)`` the active set is nearly right and a few back-substitutions finish the job. The
result is accepted only when the KKT conditions hold to ``tol``: stationarity ``p - q = Eᵀy + Gᵀz``,
feasibility, ``z >= 0`` and complementarity; otherwise the caller falls back to Clarabel.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

log = logging.getLogger(__name__)

RHO = 1e4
_MAX_ROUNDS = 40
_MAX_NEWTON = 50


@dataclass
class NewtonResult:
    q: np.ndarray
    y: np.ndarray
    z: np.ndarray
    rounds: int
    factorisations: int
    kkt: float  # the largest KKT residual


def solve_newton(
    E, b_e: np.ndarray, G, b_g: np.ndarray, p: np.ndarray, start=None, tol: float = 1e-11, rho: float = RHO
) -> NewtonResult | None:
    """Solve, from ``start = (q, y, z)`` if given; None when the KKT conditions do not reach ``tol``."""
    from scipy import sparse

    n = len(p)
    E, G = sparse.csr_matrix(E), sparse.csr_matrix(G)
    if start is None:
        q, y, z = p.copy(), np.zeros(E.shape[0]), np.zeros(G.shape[0])
    else:
        q, y, z = (np.array(a, dtype=float) for a in start)
    EtE = (E.T @ E).tocsc()
    factor, active_key = None, None
    factorisations = 0
    kkt = np.inf
    for rounds in range(1, _MAX_ROUNDS + 1):
        last = np.inf
        for _ in range(_MAX_NEWTON):
            r_e = E @ q - b_e
            s = z + rho * (G @ q - b_g)
            act = s > 0
            grad = q - p + E.T @ (y + rho * r_e) + G.T @ np.where(act, s, 0.0)
            size = float(np.abs(grad).max(initial=0.0))
            # Done at the tolerance, or where rounding stops the progress (the KKT test below judges).
            scale = _scale(y, z, E, G)
            if size <= 0.1 * tol * scale or (size > 0.5 * last and size <= 1e-8 * scale):
                break
            last = size
            key = act.tobytes()
            if key != active_key:
                Ga = G[act]
                H = (sparse.identity(n, format="csc") + rho * EtE + rho * (Ga.T @ Ga)).tocsc()
                factor = _factor(H)
                factorisations += 1
                active_key = key
            d = -factor(grad)
            q = _line_search(q, d, grad, p, E, b_e, G, b_g, y, z, rho)
        r_e = E @ q - b_e
        s = z + rho * (G @ q - b_g)
        y = y + rho * r_e
        z = np.maximum(s, 0.0)
        kkt = _kkt(q, y, z, p, E, b_e, G, b_g)
        if kkt <= tol:
            return NewtonResult(q, y, z, rounds, factorisations, kkt)
    log.info("joint repair: the Newton solver stopped with KKT residual %.1e", kkt)
    return None


def _kkt(q, y, z, p, E, b_e, G, b_g) -> float:
    """The largest KKT residual: stationarity (relative to the multipliers' terms), equality and
    inequality violations, complementarity (``z >= 0`` holds by construction)."""
    slack = b_g - G @ q
    parts = [
        np.abs(q - p + E.T @ y + G.T @ z).max(initial=0.0) / _scale(y, z, E, G),
        np.abs(E @ q - b_e).max(initial=0.0),
        np.maximum(-slack, 0.0).max(initial=0.0),
        np.abs(z * slack).max(initial=0.0),
    ]
    return float(max(parts))


def _scale(y, z, E, G) -> float:
    """Stationarity is judged relative to the multipliers' terms, whose rounding it inherits."""
    return 1.0 + float((abs(E).T @ np.abs(y) + abs(G).T @ np.abs(z)).max(initial=0.0))


def _phi(q, p, E, b_e, G, b_g, y, z, rho) -> float:
    a = y + rho * (E @ q - b_e)
    s = np.maximum(z + rho * (G @ q - b_g), 0.0)
    return 0.5 * float(((q - p) ** 2).sum()) + (float(a @ a) + float(s @ s)) / (2 * rho)


def _line_search(q, d, grad, p, E, b_e, G, b_g, y, z, rho) -> np.ndarray:
    """Armijo backtracking on φ; the full step where φ is quadratic along it (the usual case)."""
    f0 = _phi(q, p, E, b_e, G, b_g, y, z, rho)
    slope = float(grad @ d)
    t = 1.0
    for _ in range(30):
        cand = q + t * d
        if _phi(cand, p, E, b_e, G, b_g, y, z, rho) <= f0 + 1e-4 * t * slope + 1e-13 * abs(f0):
            return cand
        t *= 0.5
    return q + t * d


def _factor(H):
    from scipy.sparse import linalg

    lu = linalg.splu(H, permc_spec="MMD_AT_PLUS_A")
    return lu.solve
