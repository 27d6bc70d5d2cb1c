"""Ranking forecasters who answered different questions (ForecastBench: updated ranking methodology).

A mean Brier score over the questions a forecaster happened to answer mixes skill with the luck of
getting easy questions. The paper's fix (its section 2) models every observed score as

    b_ij = α_i + γ_j + ε_ij                                   (two-way fixed effects, eq. 1)

fits it by least squares over the observed (forecaster, question) pairs only, and scores forecaster i
by the mean of b_ij − γ̂_j over its questions, shifted so that a forecaster who always says 0.5 on
every question scores 0.25 (eq. 2). Section 2.3 optionally pulls γ̂_j of market questions towards
the market's own Brier score; section 5.1 keeps some forecasters (stale models) out of the
estimation of γ̂ while still scoring them. Section 3 checks, by subsampling a complete forecast
matrix, how well each ranking method recovers the full-data ranking; :func:`simulate_ranking_quality`
is a compact version of that experiment.

All functions take long-form data: one row per forecast, with forecaster and question labels (any
sortable values) and either the Brier score or the probability and the 0/1 outcome.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import cg
from scipy.stats import rankdata

from . import inputs
from .inputs import ScoreInputError

__all__ = [
    "DifficultyAdjusted",
    "DisconnectedPanelError",
    "ForecasterScores",
    "TwoWayFit",
    "brier_skill_score",
    "difficulty_adjusted_brier",
    "mean_brier",
    "peer_score",
    "two_way_fixed_effects",
]


class DisconnectedPanelError(ScoreInputError):
    """The forecaster–question graph falls apart, so effects in different parts share no common scale.

    Within one connected component only differences of α (and of γ) are identified; across
    components any constant can be added to one part, so scores there cannot be compared.
    ``components`` lists (number of forecasters, number of questions) per component, largest first.
    """

    def __init__(self, components: list[tuple[int, int]]):
        self.components = components
        shown = ", ".join(f"{nf} forecasters × {nq} questions" for nf, nq in components[:5])
        more = f" and {len(components) - 5} more" if len(components) > 5 else ""
        super().__init__(
            f"the forecaster–question graph used to estimate difficulties has {len(components)} connected "
            f"components ({shown}{more}); scores in different components are not comparable: add forecasters "
            "that answer questions on both sides, or score each component separately"
        )


# ---------------------------------------------------------------------------------------------
# Input handling


@dataclass(frozen=True)
class _Panel:
    forecasters: np.ndarray  # sorted unique labels
    questions: np.ndarray
    f: np.ndarray  # integer codes per row
    q: np.ndarray
    brier: np.ndarray
    outcome: np.ndarray | None  # per question (0/1), when probabilities were given


def _outcomes_of(values, n: int) -> np.ndarray:
    arr = np.asarray(values)
    if arr.shape != (n,):
        raise ScoreInputError(f"outcome must have shape ({n},), got {arr.shape}")
    return inputs.outcomes(arr, name="outcome")


def _panel(forecaster, question, brier, prob, outcome) -> _Panel:
    f_raw = np.asarray(forecaster)
    q_raw = np.asarray(question)
    if f_raw.ndim != 1 or q_raw.shape != f_raw.shape:
        raise ScoreInputError(
            f"forecaster and question must be 1-D arrays of one length, got {f_raw.shape} and {q_raw.shape}"
        )
    n = len(f_raw)
    if n == 0:
        raise ScoreInputError("no forecasts given")
    if (brier is None) == (prob is None):
        raise ScoreInputError("give either brier scores or prob and outcome, not both or neither")
    out_row = None
    if brier is not None:
        b = np.asarray(brier, dtype=float)
        if b.shape != (n,):
            raise ScoreInputError(f"brier must have shape ({n},), got {b.shape}")
        bad = ~np.isfinite(b) | (b < 0) | (b > 1)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise ScoreInputError(
                f"brier scores must be finite and in [0, 1]; {int(bad.sum())} are not "
                f"(first at row {k}: {float(b[k])!r})"
            )
    else:
        if outcome is None:
            raise ScoreInputError("prob needs outcome (one 0/1 resolution per row)")
        p = inputs.probabilities(prob, name="prob")
        if p.shape != (n,):
            raise ScoreInputError(f"prob must have shape ({n},), got {p.shape}")
        out_row = _outcomes_of(outcome, n)
        b = (p - out_row) ** 2
    f_labels, f = np.unique(f_raw, return_inverse=True)
    q_labels, q = np.unique(q_raw, return_inverse=True)
    f = f.ravel().astype(np.int64)
    q = q.ravel().astype(np.int64)
    key = f * len(q_labels) + q
    order = np.argsort(key, kind="stable")
    same = key[order[1:]] == key[order[:-1]]
    if same.any():
        k = int(np.flatnonzero(same)[0])
        r1, r2 = int(order[k]), int(order[k + 1])
        raise ScoreInputError(
            f"duplicate forecast: forecaster {_show(f_labels[f[r1]])} on question {_show(q_labels[q[r1]])} appears in "
            f"rows {r1} and {r2} ({int(same.sum())} duplicate rows in all); keep one forecast per pair"
        )
    out_q = None
    if out_row is not None:
        counts = np.bincount(q, minlength=len(q_labels))
        ones = np.bincount(q, weights=out_row, minlength=len(q_labels))
        mixed = (ones > 0) & (ones < counts)
        if mixed.any():
            j = int(np.flatnonzero(mixed)[0])
            raise ScoreInputError(f"question {_show(q_labels[j])} has both outcomes 0 and 1 across its rows")
        out_q = (ones > 0).astype(float)
    return _Panel(f_labels, q_labels, f, q, b, out_q)


def _show(label) -> str:
    """A label as the user wrote it (``'b'``, ``2``), not as numpy reprs it (``np.str_('b')``)."""
    return repr(label.item() if isinstance(label, np.generic) else label)


def _codes_of(labels: np.ndarray, wanted, what: str) -> np.ndarray:
    """Codes of ``wanted`` labels within sorted ``labels``; unknown labels are an error."""
    w = np.asarray(list(wanted) if not isinstance(wanted, np.ndarray) else wanted)
    if w.size == 0:
        return np.zeros(0, dtype=np.int64)
    pos = np.searchsorted(labels, w)
    pos = np.clip(pos, 0, len(labels) - 1)
    missing = labels[pos] != w
    if np.any(missing):
        raise ScoreInputError(f"{what} {_show(w[np.flatnonzero(missing)[0]])} does not occur in the data")
    return pos.astype(np.int64)


# ---------------------------------------------------------------------------------------------
# Two-way fixed effects


@dataclass(frozen=True)
class TwoWayFit:
    """Least-squares fit of b_ij = α_i + γ_j + ε_ij over the observed pairs.

    Identification: the mean of α over the fitted forecasters is 0, so γ_j reads as the Brier score
    an average forecaster of the fitting pool would get on question j.
    """

    forecasters: np.ndarray
    questions: np.ndarray
    alpha: np.ndarray
    gamma: np.ndarray
    n_per_forecaster: np.ndarray
    n_per_question: np.ndarray


def _components(f: np.ndarray, q: np.ndarray, n_f: int, n_q: int) -> None:
    adj = sp.csr_matrix((np.ones(len(f), dtype=np.int8), (f, n_f + q)), shape=(n_f + n_q, n_f + n_q))
    n_comp, lab = connected_components(adj, directed=False)
    if n_comp > 1:
        nf = np.bincount(lab[:n_f], minlength=n_comp)
        nq = np.bincount(lab[n_f:], minlength=n_comp)
        sizes = sorted(zip(nf.tolist(), nq.tolist(), strict=True), key=lambda t: -(t[0] + t[1]))
        raise DisconnectedPanelError(sizes)


def _solve_grounded(m, rhs: np.ndarray, dense: bool) -> np.ndarray:
    """Solve the singular (Laplacian-like) reduced normal equations with the first unknown fixed at 0.

    On a connected panel the reduced matrix has the constant vector as its only null direction, so
    deleting one unknown leaves a symmetric positive definite system: Cholesky when it is small,
    Jacobi-preconditioned conjugate gradients (relative tolerance 1e-13) otherwise.
    """
    x = np.zeros(len(rhs))
    if len(rhs) == 1:
        return x
    if dense:
        x[1:] = scipy.linalg.solve(m[1:, 1:], rhs[1:], assume_a="pos", check_finite=False)
        return x
    sub = m[1:, 1:].tocsr()
    diag = sub.diagonal()
    pre = sp.diags(1.0 / diag)
    sol, info = cg(sub, rhs[1:], rtol=1e-13, atol=0.0, maxiter=20 * len(rhs), M=pre)
    if info != 0:  # pragma: no cover - ill-conditioned panels only
        raise ScoreInputError(f"conjugate gradients did not converge (info={info}); the panel is barely connected")
    x[1:] = sol
    return x


def _fit_codes(
    f: np.ndarray, q: np.ndarray, b: np.ndarray, n_f: int, n_q: int, dense_limit: int
) -> tuple[np.ndarray, np.ndarray]:
    """Exact least squares for α, γ via the normal equations with one block eliminated.

    The normal equations are n_i α_i + Σ_j γ_j = r_i and m_j γ_j + Σ_i α_i = s_j (sums over observed
    pairs). Both diagonal blocks are diagonal, so eliminating the larger block leaves a system the size
    of the smaller one (its Schur complement, a weighted graph Laplacian); the other block follows in
    closed form. Cost is one sparse product plus a min(F, Q)-sized solve.
    """
    n_i = np.bincount(f, minlength=n_f).astype(float)
    m_j = np.bincount(q, minlength=n_q).astype(float)
    r_f = np.bincount(f, weights=b, minlength=n_f)
    r_q = np.bincount(q, weights=b, minlength=n_q)
    inc = sp.csr_matrix((np.ones(len(f)), (f, q)), shape=(n_f, n_q))
    if n_f <= n_q:
        small, big, r_small, r_big, a = n_i, m_j, r_f, r_q, inc
    else:
        small, big, r_small, r_big, a = m_j, n_i, r_q, r_f, inc.T.tocsr()
    dense = len(small) <= dense_limit
    cross = a @ sp.diags(1.0 / big) @ a.T
    m = np.diag(small) - cross.toarray() if dense else (sp.diags(small) - cross).tocsr()
    rhs = r_small - a @ (r_big / big)
    x_small = _solve_grounded(m, rhs, dense)
    x_big = (r_big - a.T @ x_small) / big
    alpha, gamma = (x_small, x_big) if n_f <= n_q else (x_big, x_small)
    shift = alpha.mean()
    return alpha - shift, gamma + shift


def two_way_fixed_effects(forecaster, question, brier, *, dense_limit: int = 4000) -> TwoWayFit:
    """Fit b_ij = α_i + γ_j by least squares on the observed pairs (paper eq. 1), identified by mean(α) = 0.

    Exact up to rounding (normal equations, see :func:`_fit_codes`) when min(#forecasters, #questions)
    is at most ``dense_limit``; beyond that the reduced system is solved iteratively to 1e-13.
    Raises :class:`DisconnectedPanelError` when the panel is not connected.
    """
    p = _panel(forecaster, question, brier, None, None)
    n_f, n_q = len(p.forecasters), len(p.questions)
    _components(p.f, p.q, n_f, n_q)
    alpha, gamma = _fit_codes(p.f, p.q, p.brier, n_f, n_q, dense_limit)
    return TwoWayFit(
        p.forecasters,
        p.questions,
        alpha,
        gamma,
        np.bincount(p.f, minlength=n_f),
        np.bincount(p.q, minlength=n_q),
    )


# ---------------------------------------------------------------------------------------------
# Forecaster-level scores


@dataclass(frozen=True)
class ForecasterScores:
    """One score per forecaster; ``ranks`` puts 1 first (ties share the best rank, NaN ranks last)."""

    forecasters: np.ndarray
    scores: np.ndarray
    n_answered: np.ndarray
    higher_is_better: bool

    @property
    def ranks(self) -> np.ndarray:
        return rank_scores(self.scores, self.higher_is_better)


def rank_scores(scores: np.ndarray, higher_is_better: bool) -> np.ndarray:
    oriented = -scores if higher_is_better else scores.copy()
    oriented[~np.isfinite(oriented)] = np.inf
    return rankdata(oriented, method="min").astype(np.int64)


@dataclass(frozen=True, kw_only=True)
class DifficultyAdjusted(ForecasterScores):
    """Difficulty-adjusted Brier scores (lower is better) and the pieces behind them.

    ``scores[i] = alpha[i] + shift`` where ``alpha[i]`` is the mean of b_ij − γ̂_j over i's questions
    and ``shift`` = mean of γ̂ over all questions (paper eq. 2: the constant that gives an always-0.5
    forecaster 0.25). ``gamma`` is the difficulty used (after any market mixing), ``gamma_ols`` the
    least-squares one (NaN where not estimated), ``excluded`` marks forecasters kept out of the fit.
    """

    questions: np.ndarray
    alpha: np.ndarray
    gamma: np.ndarray
    gamma_ols: np.ndarray
    shift: float
    excluded: np.ndarray


def _market_brier(p: _Panel, market_question, market_brier, market_prob) -> np.ndarray:
    """The market's Brier score per question of the panel (NaN where the market gave none)."""
    b_mkt = np.full(len(p.questions), np.nan)
    if market_question is None:
        return b_mkt
    mq = _codes_of(p.questions, market_question, "market question")
    if len(np.unique(mq)) != len(mq):
        raise ScoreInputError("market_question lists a question twice")
    if (market_brier is None) == (market_prob is None):
        raise ScoreInputError("with market_question give either market_brier or market_prob")
    if market_brier is not None:
        mb = np.asarray(market_brier, dtype=float)
        if mb.shape != mq.shape or not np.all(np.isfinite(mb) & (mb >= 0) & (mb <= 1)):
            raise ScoreInputError(f"market_brier must be {len(mq)} finite values in [0, 1]")
    else:
        if p.outcome is None:
            raise ScoreInputError("market_prob needs the panel's outcomes (give prob and outcome)")
        mp = inputs.probabilities(market_prob, name="market_prob")
        if mp.shape != mq.shape:
            raise ScoreInputError(f"market_prob must have shape {mq.shape}, got {mp.shape}")
        mb = (mp - p.outcome[mq]) ** 2
    b_mkt[mq] = mb
    return b_mkt


def _gamma_ols(p: _Panel, excluded: np.ndarray, dense_limit: int) -> np.ndarray:
    """γ̂^OLS per question from the rows of the forecasters not excluded (NaN where none answered)."""
    gamma_ols = np.full(len(p.questions), np.nan)
    keep = ~excluded[p.f]
    if not keep.any():
        raise ScoreInputError("every forecaster is excluded from difficulty estimation")
    # Re-code the fitting rows compactly so the fit sees no empty forecasters or questions.
    f_used, f_fit = np.unique(p.f[keep], return_inverse=True)
    q_used, q_fit = np.unique(p.q[keep], return_inverse=True)
    _components(f_fit, q_fit, len(f_used), len(q_used))
    _, g = _fit_codes(f_fit, q_fit, p.brier[keep], len(f_used), len(q_used), dense_limit)
    gamma_ols[q_used] = g
    return gamma_ols


def difficulty_adjusted_brier(
    forecaster,
    question,
    brier=None,
    *,
    prob=None,
    outcome=None,
    exclude_from_difficulty: Iterable = (),
    market_question=None,
    market_brier=None,
    market_prob=None,
    market_weight: float = 1.0,
    dense_limit: int = 4000,
) -> DifficultyAdjusted:
    """Difficulty-adjusted Brier score per forecaster (ForecastBench: updated ranking methodology, §2).

    1. γ̂^OLS from the two-way fixed-effects least squares (eq. 1) on the rows of forecasters not in
       ``exclude_from_difficulty`` (§5.1: stale models are scored but do not shape difficulty),
       identified by mean(α) = 0 over those forecasters, i.e. γ̂^OLS_j is the Brier score of an
       average fitted forecaster on j.
    2. Market questions (§2.3): γ̂_j = w·b_mkt,j + (1 − w)·γ̂^OLS_j with w = ``market_weight`` and
       b_mkt,j the market's Brier score (``market_brier``, or ``market_prob`` against the panel's
       outcome). This is a convex combination of two difficulty estimates, as in the paper, not an
       extra regression row; for 0 < w < 1 it depends on the identification in step 1, which is why
       that puts γ̂^OLS on the Brier scale. The paper's leaderboard uses w = 1, the default here: a
       forecaster then ranks above the market only by beating it on the same questions. If w = 1 and
       every question has a market forecast, no regression is needed (and none is run).
    3. Unscaled score: α_i = mean over i's questions of b_ij − γ̂_j (for fitted forecasters with
       w = 0 this is exactly the least-squares α_i); excluded forecasters get theirs the same way.
    4. Rescaling (eq. 2): an always-0.5 forecaster has b = 1/4 everywhere, hence unscaled score
       1/4 − mean_Q γ̂; adding shift = mean_Q γ̂ (over every question in the data) makes it 0.25.

    A question answered only by excluded forecasters has no γ̂ unless the market alone fixes it
    (w = 1); otherwise that is an error, as is a disconnected fitting panel
    (:class:`DisconnectedPanelError`, raised only when the regression is run).
    """
    p = _panel(forecaster, question, brier, prob, outcome)
    n_f, n_q = len(p.forecasters), len(p.questions)
    w = float(market_weight)
    if not (np.isfinite(w) and 0.0 <= w <= 1.0):
        raise ScoreInputError(f"market_weight must be in [0, 1], got {market_weight!r}")

    b_mkt = _market_brier(p, market_question, market_brier, market_prob)
    has_mkt = np.isfinite(b_mkt)

    excluded = np.zeros(n_f, dtype=bool)
    excluded[_codes_of(p.forecasters, exclude_from_difficulty, "excluded forecaster")] = True

    gamma_ols = _gamma_ols(p, excluded, dense_limit) if not (w == 1.0 and has_mkt.all()) else np.full(n_q, np.nan)

    gamma = np.where(has_mkt, w * np.nan_to_num(b_mkt) + (1.0 - w) * gamma_ols, gamma_ols)
    if w == 1.0:
        gamma = np.where(has_mkt, b_mkt, gamma)
    if not np.all(np.isfinite(gamma)):
        j = int(np.flatnonzero(~np.isfinite(gamma))[0])
        raise ScoreInputError(
            f"question {_show(p.questions[j])} is answered only by excluded forecasters, so its difficulty "
            "cannot be estimated (give a market forecast with market_weight=1, or drop it)"
        )

    n_ans = np.bincount(p.f, minlength=n_f)
    alpha = np.bincount(p.f, weights=p.brier - gamma[p.q], minlength=n_f) / n_ans
    shift = float(gamma.mean())
    return DifficultyAdjusted(
        forecasters=p.forecasters,
        scores=alpha + shift,
        n_answered=n_ans,
        higher_is_better=False,
        questions=p.questions,
        alpha=alpha,
        gamma=gamma,
        gamma_ols=gamma_ols,
        shift=shift,
        excluded=excluded,
    )


def mean_brier(forecaster, question, brier=None, *, prob=None, outcome=None) -> ForecasterScores:
    """Plain mean Brier score over the questions each forecaster answered (the paper's baseline, §3.2.3)."""
    p = _panel(forecaster, question, brier, prob, outcome)
    n = np.bincount(p.f, minlength=len(p.forecasters))
    return ForecasterScores(p.forecasters, np.bincount(p.f, weights=p.brier) / n, n, False)


def peer_score(
    forecaster, question, brier=None, *, prob=None, outcome=None, leave_one_out: bool = False
) -> ForecasterScores:
    """Mean peer score per forecaster, higher is better (paper §3.2.3, after Metaculus).

    PS_ij = b̄_j − b_ij, with b̄_j the mean Brier score of everyone who answered j, i included (the
    paper's definition); the forecaster's score is the mean of PS_ij over its questions. With
    ``leave_one_out`` b̄_j averages the *other* forecasters only, which scales PS_ij by m_j/(m_j − 1);
    questions nobody else answered then carry no information and are skipped (NaN if none are left).
    """
    p = _panel(forecaster, question, brier, prob, outcome)
    n_f, n_q = len(p.forecasters), len(p.questions)
    m = np.bincount(p.q, minlength=n_q).astype(float)
    bbar = np.bincount(p.q, weights=p.brier, minlength=n_q) / m
    ps = bbar[p.q] - p.brier
    use = np.ones(len(ps), dtype=bool)
    if leave_one_out:
        mq = m[p.q]
        use = mq > 1
        ps = np.where(use, ps * mq / np.maximum(mq - 1, 1), 0.0)
    n = np.bincount(p.f, weights=use.astype(float), minlength=n_f)
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = np.bincount(p.f, weights=ps, minlength=n_f) / n
    return ForecasterScores(p.forecasters, scores, n.astype(np.int64), True)


def brier_skill_score(
    forecaster,
    question,
    brier=None,
    *,
    reference,
    prob=None,
    outcome=None,
    kind: Literal["pct", "abs"] = "pct",
) -> ForecasterScores:
    """Mean Brier skill score against a reference forecaster, higher is better (paper §3.2.3).

    Per forecast, ``pct``: 1 − b_ij / b_ref,j; ``abs``: b_ref,j − b_ij; each averaged over the
    forecaster's questions. Only questions the reference answered count, and for ``pct`` also only
    those where b_ref,j > 0 (the ratio is undefined otherwise). The paper finds the ratio form ranks
    badly: a few questions the reference nailed (b_ref ≈ 0) dominate the mean.
    """
    if kind not in ("pct", "abs"):
        raise ScoreInputError(f"kind must be 'pct' or 'abs', got {kind!r}")
    p = _panel(forecaster, question, brier, prob, outcome)
    n_f, n_q = len(p.forecasters), len(p.questions)
    ref = int(_codes_of(p.forecasters, [reference], "reference forecaster")[0])
    b_ref = np.full(n_q, np.nan)
    rows = p.f == ref
    b_ref[p.q[rows]] = p.brier[rows]
    br = b_ref[p.q]
    use = np.isfinite(br) & ((br > 0) if kind == "pct" else True)
    with np.errstate(invalid="ignore", divide="ignore"):
        per = np.where(use, 1.0 - p.brier / br, 0.0) if kind == "pct" else np.where(use, br - p.brier, 0.0)
        n = np.bincount(p.f, weights=use.astype(float), minlength=n_f)
        scores = np.bincount(p.f, weights=per, minlength=n_f) / n
    return ForecasterScores(p.forecasters, scores, n.astype(np.int64), True)
