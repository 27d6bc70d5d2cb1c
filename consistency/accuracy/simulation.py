"""How well does each ranking method recover the true ranking from incomplete data?

The ranking-quality simulation of ForecastBench's updated ranking methodology (section 3): start
from a complete forecaster × question Brier matrix, sample incomplete panels the way real
leaderboards fill up (random subsets, or rounds with persistence, skill drift and difficulty
variation), rank with each method, and compare with the ranking on the complete matrix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.stats import spearmanr

from . import inputs
from .difficulty import (
    ForecasterScores,
    brier_skill_score,
    difficulty_adjusted_brier,
    mean_brier,
    peer_score,
    rank_scores,
)
from .inputs import ScoreInputError


def synthetic_brier_matrix(
    n_forecasters: int = 120, n_questions: int = 480, *, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """A complete (forecaster × question) Brier matrix and a market Brier score per question.

    Stand-in for the paper's complete July-2024 round. Each question has a true probability p_j and
    an outcome drawn from it; forecaster i reports logit p_j plus noise of scale σ_i·h_j (σ_i: skill,
    h_j: question hardness); the market is a low-noise forecaster. Returns (brier, market_brier).
    """
    rng = np.random.default_rng(seed)
    p = np.clip(rng.beta(0.6, 0.6, n_questions), 0.02, 0.98)
    o = (rng.random(n_questions) < p).astype(float)
    hard = rng.lognormal(0.0, 0.5, n_questions)
    sigma = rng.uniform(0.2, 2.5, n_forecasters)
    logit = np.log(p / (1 - p))
    f = 1.0 / (1.0 + np.exp(-(logit + sigma[:, None] * hard * rng.standard_normal((n_forecasters, n_questions)))))
    mkt = 1.0 / (1.0 + np.exp(-(logit + 0.3 * hard * rng.standard_normal(n_questions))))
    return (f - o) ** 2, (mkt - o) ** 2


@dataclass(frozen=True)
class RankingQuality:
    """Averages over simulations of how well each method recovers the full-data ranking.

    ``spearman``: rank correlation with the true ranking; ``top_k[k]``: share of the true top k that
    stay in the estimated top k; ``median_displacement``: median |true rank − estimated rank|.
    """

    methods: tuple[str, ...]
    spearman: np.ndarray
    top_k: dict[int, np.ndarray]
    median_displacement: np.ndarray
    scheme: str
    n_sims: int

    def as_dict(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for m, name in enumerate(self.methods):
            row = {"spearman": float(self.spearman[m])}
            row.update({f"top_{k}": float(v[m]) for k, v in self.top_k.items()})
            row["median_displacement"] = float(self.median_displacement[m])
            out[name] = row
        return out

    def __str__(self) -> str:
        ks = list(self.top_k)
        head = f"{'method':<26}{'spearman':>9}" + "".join(f"{'top-' + str(k):>8}" for k in ks) + f"{'med.disp':>9}"
        lines = [f"{self.scheme} sampling, {self.n_sims} simulations", head]
        for m, name in enumerate(self.methods):
            tk = "".join(f"{self.top_k[k][m]:>8.2f}" for k in ks)
            lines.append(f"{name:<26}{self.spearman[m]:>9.3f}{tk}{self.median_displacement[m]:>9.1f}")
        return "\n".join(lines)


def _softmax_choice(rng: np.random.Generator, pool: np.ndarray, z: np.ndarray, temp: float, k: int) -> np.ndarray:
    logits = temp * z[pool]
    w = np.exp(logits - logits.max())
    return rng.choice(pool, size=min(k, len(pool)), replace=False, p=w / w.sum())


def _zscore(x: np.ndarray) -> np.ndarray:
    s = x.std()
    return (x - x.mean()) / s if s > 0 else np.zeros_like(x)


def _sample_random(rng, n_f: int, n_q: int, reference: int | None, per_forecaster: int):
    k = min(per_forecaster, n_q)
    picks = np.argsort(rng.random((n_f, n_q)), axis=1)[:, :k]
    f = np.repeat(np.arange(n_f), k)
    q = picks.ravel()
    if reference is not None:
        others = f != reference
        f = np.concatenate([f[others], np.full(n_q, reference)])
        q = np.concatenate([q[others], np.arange(n_q)])
    return f, q


def _sample_rounds(
    rng,
    skill: np.ndarray,
    difficulty: np.ndarray,
    reference: int | None,
    n_rounds: int,
    questions_per_round: int,
    forecasters_per_round: int,
    persistence: float,
    skill_temperature: float,
    difficulty_temperature: float,
):
    n_f, n_q = len(skill), len(difficulty)
    if n_rounds * questions_per_round > n_q:
        raise ScoreInputError(f"{n_rounds} rounds × {questions_per_round} questions exceed the {n_q} questions")
    zs, zd = _zscore(skill), _zscore(difficulty)
    free_q = np.arange(n_q)
    everyone = np.array([i for i in range(n_f) if i != reference])
    current = np.zeros(0, dtype=np.int64)
    fs, qs = [], []
    for t in range(n_rounds):
        beta = difficulty_temperature if t % 2 == 0 else -difficulty_temperature
        q_t = _softmax_choice(rng, free_q, zd, beta, questions_per_round)
        free_q = np.setdiff1d(free_q, q_t)
        tau = skill_temperature * (t / (n_rounds - 1) if n_rounds > 1 else 1.0)
        stay = rng.permutation(current)[: round(persistence * len(current))]
        pool = np.setdiff1d(everyone, stay)
        new = _softmax_choice(rng, pool, zs, tau, forecasters_per_round - len(stay))
        current = np.concatenate([stay, new]).astype(np.int64)
        members = current if reference is None else np.append(current, reference)
        fs.append(np.repeat(members, len(q_t)))
        qs.append(np.tile(q_t, len(members)))
    return np.concatenate(fs), np.concatenate(qs)


def _matrices(
    brier_matrix: np.ndarray | None, market_brier: np.ndarray | None, reference: int | None, scheme: str, seed: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """The complete Brier matrix and the market's Brier scores, checked (synthetic ones when none is given)."""
    if brier_matrix is None:
        brier_matrix, gen_market = synthetic_brier_matrix(seed=seed)
        if market_brier is None:
            market_brier = gen_market
    bm = inputs.probabilities(brier_matrix, name="brier_matrix")
    if bm.ndim != 2:
        raise ScoreInputError(f"brier_matrix must be 2-D (forecasters × questions), got shape {bm.shape}")
    n_f, n_q = bm.shape
    if reference is not None and not (0 <= reference < n_f):
        raise ScoreInputError(f"reference must index a forecaster (0..{n_f - 1}), got {reference}")
    mkt = None if market_brier is None else inputs.probabilities(market_brier, name="market_brier")
    if mkt is not None and mkt.shape != (n_q,):
        raise ScoreInputError(f"market_brier must have shape ({n_q},), got {mkt.shape}")
    if scheme not in ("random", "rounds"):
        raise ScoreInputError(f"scheme must be 'random' or 'rounds', got {scheme!r}")
    return bm, mkt


def _rankings(
    f: np.ndarray,
    q: np.ndarray,
    b: np.ndarray,
    reference: int | None,
    mkt: np.ndarray | None,
    weights: Sequence[float],
) -> list[ForecasterScores]:
    """Every method's scores of one simulated panel, in the order of the methods' names."""
    results: list[ForecasterScores] = [mean_brier(f, q, b), peer_score(f, q, b)]
    if reference is not None:
        results += [brier_skill_score(f, q, b, reference=reference, kind=k) for k in ("pct", "abs")]
    q_seen = np.unique(q)
    for w in weights:
        kw = {} if mkt is None else {"market_question": q_seen, "market_brier": mkt[q_seen], "market_weight": w}
        results.append(difficulty_adjusted_brier(f, q, b, **kw))
    return results


def simulate_ranking_quality(
    brier_matrix: np.ndarray | None = None,
    *,
    market_brier: np.ndarray | None = None,
    reference: int | None = 0,
    scheme: Literal["random", "rounds"] = "random",
    n_sims: int = 20,
    seed: int = 0,
    questions_per_forecaster: int = 100,
    n_rounds: int = 10,
    questions_per_round: int = 40,
    forecasters_per_round: int = 30,
    persistence: float = 0.7,
    skill_temperature: float = 0.0,
    difficulty_temperature: float = 0.0,
    market_weights: Sequence[float] | None = None,
    top_k: Sequence[int] = (10, 20),
) -> RankingQuality:
    """Subsample a complete Brier matrix and score how well each ranking method recovers the truth (§3).

    Truth: ranks by mean Brier over all questions of the complete matrix (synthetic from
    :func:`synthetic_brier_matrix` when none is given). Each simulation draws an incomplete panel:

    * ``random``: every forecaster answers ``questions_per_forecaster`` questions drawn at random;
    * ``rounds``: ``n_rounds`` rounds of ``questions_per_round`` questions; each round keeps a share
      ``persistence`` of the previous round's forecasters and fills up to ``forecasters_per_round``
      with newcomers; all participants answer all questions of their round. Skill drift: newcomers are
      drawn with softmax weights exp(τ_t·z(skill)), τ_t rising linearly from 0 to
      ``skill_temperature``; difficulty variation: questions are drawn with weights exp(±β·z(difficulty)),
      sign alternating between even and odd rounds (β = ``difficulty_temperature``).

    The ``reference`` forecaster (if any) answers every question, as the paper's naive forecaster
    does; it anchors the panel's connectivity and enables the Brier skill scores. Methods: mean
    Brier, peer score, BSS (pct, abs) when there is a reference, and the difficulty-adjusted Brier
    score for each market weight (``market_weights`` defaults to (0, 0.5, 1) with a market, else (0,)).

    Simplifications against the paper: questions are drawn without replacement (so no duplicate
    forecasts, and rounds are disjoint); temperatures act on z-scored skill and difficulty, so they
    are unitless rather than calibrated to Brier-point drifts; metrics are computed over the
    forecasters that appear in a simulated panel, re-ranked among themselves.
    """
    bm, mkt = _matrices(brier_matrix, market_brier, reference, scheme, seed)
    n_f, n_q = bm.shape
    weights = tuple(market_weights) if market_weights is not None else ((0.0, 0.5, 1.0) if mkt is not None else (0.0,))

    true_mean = bm.mean(axis=1)
    difficulty = bm.mean(axis=0)
    methods = ["mean Brier", "peer score"]
    if reference is not None:
        methods += ["BSS (pct)", "BSS (abs)"]
    methods += [f"diff.-adj. Brier (w={w:g})" for w in weights]
    rng = np.random.default_rng(seed)
    ks = tuple(int(k) for k in top_k)
    rho = np.zeros((n_sims, len(methods)))
    ret = {k: np.zeros((n_sims, len(methods))) for k in ks}
    disp = np.zeros((n_sims, len(methods)))
    for s in range(n_sims):
        if scheme == "random":
            f, q = _sample_random(rng, n_f, n_q, reference, questions_per_forecaster)
        else:
            f, q = _sample_rounds(
                rng,
                -true_mean,
                difficulty,
                reference,
                n_rounds,
                questions_per_round,
                forecasters_per_round,
                persistence,
                skill_temperature,
                difficulty_temperature,
            )
        r_true = rank_scores(true_mean[np.unique(f)], False)
        for m, res in enumerate(_rankings(f, q, bm[f, q], reference, mkt, weights)):
            r_est = res.ranks  # forecasters come back sorted, i.e. in the order of np.unique(f)
            rho[s, m] = spearmanr(r_true, r_est).statistic
            for k in ks:
                top_true, top_est = r_true <= k, r_est <= k
                ret[k][s, m] = (top_true & top_est).sum() / max(top_true.sum(), 1)
            disp[s, m] = np.median(np.abs(r_true - r_est))
    return RankingQuality(
        tuple(methods),
        rho.mean(axis=0),
        {k: v.mean(axis=0) for k, v in ret.items()},
        disp.mean(axis=0),
        scheme,
        n_sims,
    )
