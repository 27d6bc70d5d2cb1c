"""Is forecaster A really better than forecaster B? Question weights, head-to-head scores, significance.

Follows "Metaculus: AI benchmarking methodology" (Metaculus, 2024):

* correlated questions carry less information about skill, so they get weights below 1
  (repeats: 1/k; logically related groups of N: log2(N+1)/(N+1) each);
* two forecasters are compared only on questions both answered, with the peer score of a
  two-player tournament (the *head-to-head* score);
* significance comes from a weighted t-test whose effective sample size is the weighted
  question count, cross-checked by a weighted bootstrap;
* questions that resolved before their scheduled date stay off the leaderboard until that
  date, because early resolutions are one-sided and would favour over-confident forecasters.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from .inputs import ScoreInputError, outcomes, probabilities
from .inputs import weights as _check_weights

__all__ = [
    "BootstrapResult",
    "EarlyCloserFilter",
    "HeadToHead",
    "TTestResult",
    "early_closer_filter",
    "group_weight",
    "group_weights",
    "head_to_head",
    "question_weights",
    "repeat_weights",
    "weighted_bootstrap",
    "weighted_t_test",
]


# ---------------------------------------------------------------------------------------------
# Question weights
# ---------------------------------------------------------------------------------------------


def _codes(keys: Sequence[Hashable], name: str) -> np.ndarray:
    """Integer code per key, first-seen order; works for any hashable (tuples, strings, ids)."""
    table: dict[Hashable, int] = {}
    try:
        return np.fromiter((table.setdefault(k, len(table)) for k in keys), dtype=np.intp, count=len(keys))
    except TypeError as exc:
        raise ScoreInputError(f"{name} must be hashable question keys: {exc}") from None


def repeat_weights(keys: Sequence[Hashable]) -> np.ndarray:
    """Weight 1/k for the k-th time the same question is asked, in the order given.

    A repeat is correlated with its earlier instances and, on a live platform, lets forecasters
    copy forecasts already made public, so it says less about skill (Metaculus: AI benchmarking
    methodology, "Repeated Questions").
    """
    codes = _codes(keys, "keys")
    if codes.size == 0:
        return np.ones(0)
    order = np.argsort(codes, kind="stable")  # each key's appearances stay in input order
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    run_start = np.repeat(starts, np.diff(np.r_[starts, codes.size]))
    k = np.empty(codes.size)
    k[order] = np.arange(codes.size) - run_start + 1
    return 1.0 / k


def group_weight(n: int | np.ndarray) -> np.ndarray:
    """Per-question weight log2(N+1)/(N+1) for a group of N logically related questions.

    Chosen so that each member counts less than 1 while the group as a whole counts more than
    one question and grows only logarithmically (N=2: 0.53 each, N=3: 0.5, N=64: ~5.9 in total).
    The formula is for genuine groups: at N=1 it would give 0.5, whereas the methodology gives an
    independent question weight 1, so :func:`group_weights` never applies it to a singleton.
    (Metaculus: AI benchmarking methodology, "Logically Related Question Groups".)
    """
    arr = np.asarray(n, dtype=float)
    if not np.all(np.isfinite(arr)) or np.any(arr < 1):
        raise ScoreInputError("group sizes must be finite and at least 1")
    return np.log2(arr + 1.0) / (arr + 1.0)


def group_weights(labels: Sequence[Hashable | None]) -> np.ndarray:
    """Weight per question from its group label: log2(N+1)/(N+1) in a group of N >= 2, else 1.

    ``None`` (or a label used only once) marks an independent question, which keeps weight 1:
    the methodology's default for independent questions, not the formula's 0.5 at N=1.
    """
    labels = list(labels)
    solo = np.fromiter((lab is None for lab in labels), dtype=bool, count=len(labels))
    out = np.ones(len(labels))
    if solo.all():
        return out
    grouped = np.flatnonzero(~solo)
    codes = _codes([labels[i] for i in grouped], "labels")
    sizes = np.bincount(codes)[codes]
    out[grouped] = np.where(sizes >= 2, group_weight(np.maximum(sizes, 1)), 1.0)
    return out


def question_weights(
    n: int,
    *,
    repeats: Sequence[Hashable] | None = None,
    groups: Sequence[Hashable | None] | None = None,
    weights: Sequence[float] | np.ndarray | None = None,
) -> np.ndarray:
    """Combine repeat, group and user-given weights by multiplying them; all 1 when none is given.

    The methodology does not say how the rules combine for a question that is both repeated and
    grouped; a product keeps each discount and reduces to the single rule when only one applies.
    """
    out = np.ones(n)
    for name, values, rule in (("repeats", repeats, repeat_weights), ("groups", groups, group_weights)):
        if values is not None:
            if len(values) != n:
                raise ScoreInputError(f"{name} must have length {n}, got {len(values)}")
            out *= rule(values)
    if weights is not None:
        out *= _check_weights(weights, n)
    if out.sum() <= 0:
        raise ScoreInputError("weights sum to zero")
    return out


# ---------------------------------------------------------------------------------------------
# Head-to-head peer score
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeadToHead:
    """Per-question head-to-head scores of A against B on the questions both answered.

    ``indices`` are positions in the inputs; ``total`` is the weighted sum, ``weight_sum`` the
    weighted question count and ``mean`` their ratio (positive: A was more accurate).
    """

    indices: np.ndarray
    scores: np.ndarray
    weights: np.ndarray
    total: float
    weight_sum: float
    mean: float


def _mask(values: Any, n: int, name: str) -> np.ndarray:
    if values is None:
        return np.ones(n, dtype=bool)
    arr = np.asarray(values)
    if arr.shape != (n,):
        raise ScoreInputError(f"{name} must have shape ({n},), got {arr.shape}")
    if arr.dtype != bool:
        raise ScoreInputError(f"{name} must be a boolean mask, got dtype {arr.dtype}")
    return arr


def head_to_head(
    forecasts_a: Sequence[float] | np.ndarray,
    forecasts_b: Sequence[float] | np.ndarray,
    resolutions: Sequence[Any] | np.ndarray,
    weights: Sequence[float] | np.ndarray | None = None,
    *,
    answered_a: Sequence[bool] | np.ndarray | None = None,
    answered_b: Sequence[bool] | np.ndarray | None = None,
    clip: float | None = None,
) -> HeadToHead:
    """Score A against B as if they were the only two players: 100 · ln(p_A(o) / p_B(o)) per question.

    This is the Metaculus peer score 100 · n/(n−1) · ln(p / geometric mean of all n forecasts)
    at n = 2, applied to the single standing ("spot") forecast. Restricting to questions both
    answered keeps late joiners from being penalised (Metaculus: AI benchmarking methodology,
    "Comparing Bots to Humans"). B's score is the negative of A's.

    ``answered_a`` / ``answered_b`` mark which questions each forecaster answered; values at
    unanswered positions are ignored. A forecast of 0 on the realised outcome has an infinite
    score and is rejected unless ``clip`` (e.g. 0.001) bounds forecasts to [clip, 1 − clip].
    """
    pa_raw = np.asarray(forecasts_a, dtype=float)
    pb_raw = np.asarray(forecasts_b, dtype=float)
    res_raw = np.asarray(resolutions, dtype=object)
    if pa_raw.ndim != 1:
        raise ScoreInputError(f"forecasts_a must be one-dimensional, got shape {pa_raw.shape}")
    n = pa_raw.size
    for name, arr in (("forecasts_b", pb_raw), ("resolutions", res_raw)):
        if arr.shape != (n,):
            raise ScoreInputError(f"{name} must have shape ({n},) like forecasts_a, got {arr.shape}")
    w_all = _check_weights(weights, n)
    both = _mask(answered_a, n, "answered_a") & _mask(answered_b, n, "answered_b")
    idx = np.flatnonzero(both)
    if idx.size == 0:
        raise ScoreInputError("the two forecasters have no question in common")
    pa = probabilities(pa_raw[idx], "forecasts_a (questions both answered)")
    pb = probabilities(pb_raw[idx], "forecasts_b (questions both answered)")
    o = outcomes(res_raw[idx], "resolutions (questions both answered)")
    w = w_all[idx]
    if w.sum() <= 0:
        raise ScoreInputError(f"weights of the {idx.size} questions both forecasters answered sum to zero")
    if clip is not None:
        if not 0.0 <= clip < 0.5:
            raise ScoreInputError(f"clip must be in [0, 0.5), got {clip!r}")
        pa, pb = np.clip(pa, clip, 1 - clip), np.clip(pb, clip, 1 - clip)
    qa = np.where(o == 1.0, pa, 1.0 - pa)
    qb = np.where(o == 1.0, pb, 1.0 - pb)
    for name, q in (("forecasts_a", qa), ("forecasts_b", qb)):
        zero = np.flatnonzero(q <= 0)
        if zero.size:
            i = int(idx[zero[0]])
            raise ScoreInputError(
                f"{name}[{i}] gives probability 0 to the realised outcome, so its log score is infinite "
                f"({zero.size} such questions); pass clip=0.001 to bound forecasts"
            )
    scores = 100.0 * (np.log(qa) - np.log(qb))
    total = float(np.dot(w, scores))
    weight_sum = float(w.sum())
    return HeadToHead(idx, scores, w, total, weight_sum, total / weight_sum)


# ---------------------------------------------------------------------------------------------
# Weighted t-test
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TTestResult:
    """Weighted one-sample t-test against ``popmean`` with a two-sided interval for the mean."""

    mean: float
    sd: float
    se: float
    weight_sum: float
    df: float
    t: float
    p_value: float
    critical_t: float
    ci_low: float
    ci_high: float
    confidence: float
    popmean: float

    @property
    def t_ratio(self) -> float:
        """t / critical t: above 1 (below −1) means significantly above (below) ``popmean``."""
        return self.t / self.critical_t


def _scores(values: Any, name: str = "scores") -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ScoreInputError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ScoreInputError(f"{name} is empty")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise ScoreInputError(
            f"{name} must be finite; {bad.size} are not (first at index {int(bad[0])}: {float(arr[bad[0]])!r})"
        )
    return arr


def _confidence(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ScoreInputError(f"confidence must be in (0, 1), got {confidence!r}")
    return float(confidence)


def weighted_t_test(
    scores: Sequence[float] | np.ndarray,
    weights: Sequence[float] | np.ndarray | None = None,
    *,
    popmean: float = 0.0,
    confidence: float = 0.95,
) -> TTestResult:
    """Weighted t-test treating the weighted question count W = Σw as the sample size.

    mean = Σw·x / W;  sd = sqrt(Σw·(x − mean)² / (W − 1));  se = sd / sqrt(W);
    t = (mean − popmean) / se;  df = W − 1 (need not be an integer);
    interval = mean ± t_{df, (1+confidence)/2} · se;  p = 2 · P(T_df > |t|).

    Metaculus: AI benchmarking methodology ("Assessing Statistical Significance") fixes se, t,
    df and the interval but does not print its weighted standard deviation. Dividing by W − 1
    (frequency weights) is the one choice consistent with W as the sample size and with df = W − 1,
    and with unit weights it is exactly the ordinary one-sample t-test. Small weights therefore
    widen the interval, as intended: correlated questions count as fewer observations.
    """
    x = _scores(scores)
    w = _check_weights(weights, x.size)
    ci = _confidence(confidence)
    big_w = float(w.sum())
    if big_w <= 1.0:
        raise ScoreInputError(
            f"weights sum to {big_w:g}; the t-test needs a weighted question count above 1 (df = W - 1)"
        )
    mean = float(np.dot(w, x) / big_w)
    var = float(np.dot(w, (x - mean) ** 2) / (big_w - 1.0))
    if not var > 0.0:
        raise ScoreInputError("scores with positive weight are all equal; the t-test is undefined for zero spread")
    sd = float(np.sqrt(var))
    se = sd / float(np.sqrt(big_w))
    df = big_w - 1.0
    t = (mean - popmean) / se
    crit = float(stats.t.ppf(0.5 + ci / 2.0, df))
    p = float(2.0 * stats.t.sf(abs(t), df))
    return TTestResult(mean, sd, se, big_w, df, t, p, crit, mean - crit * se, mean + crit * se, ci, float(popmean))


# ---------------------------------------------------------------------------------------------
# Weighted bootstrap
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BootstrapResult:
    """Percentile interval of resampled means, and how often the resampled mean was positive."""

    mean: float
    ci_low: float
    ci_high: float
    prob_positive: float
    resamples: int
    draws: int
    confidence: float
    means: np.ndarray = field(repr=False)


def weighted_bootstrap(
    scores: Sequence[float] | np.ndarray,
    weights: Sequence[float] | np.ndarray | None = None,
    *,
    resamples: int = 10_000,
    draws: int | None = None,
    confidence: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    max_block_elements: int = 1 << 22,
) -> BootstrapResult:
    """Resample questions with probability ∝ weight and take the plain mean of each resample.

    A check on the t-test that does not assume normal scores (Metaculus: AI benchmarking
    methodology, "Weighted Bootstrapping"). Each resample has ``draws`` questions; by default the
    weighted question count round(Σw), as the methodology prescribes, so that it matches the
    t-test's effective sample size (with unit weights this is the number of questions). Weighting
    enters through the sampling probabilities only, never again in the mean.

    ``prob_positive`` is the share of resampled means above 0 (A beats B when it exceeds the upper
    tail, e.g. 0.975). Resamples are drawn in blocks of at most ``max_block_elements`` indices to
    bound memory; results are reproducible for a given seed and block size.
    """
    x = _scores(scores)
    w = _check_weights(weights, x.size)
    ci = _confidence(confidence)
    if int(resamples) != resamples or resamples < 1:
        raise ScoreInputError(f"resamples must be a positive integer, got {resamples!r}")
    resamples = int(resamples)
    if draws is None:
        draws = max(1, round(float(w.sum())))
    elif int(draws) != draws or draws < 1:
        raise ScoreInputError(f"draws must be a positive integer, got {draws!r}")
    draws = int(draws)
    if max_block_elements < 1:
        raise ScoreInputError(f"max_block_elements must be positive, got {max_block_elements!r}")
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(w)
    cdf /= cdf[-1]  # exactly 1 at the end, so uniforms in [0, 1) never fall past the last question
    block = max(1, max_block_elements // draws)
    means = np.empty(resamples)
    for start in range(0, resamples, block):
        stop = min(resamples, start + block)
        # side="right" never lands on a zero-weight question: its cdf equals its predecessor's
        idx = np.searchsorted(cdf, rng.random((stop - start, draws)), side="right")
        means[start:stop] = x[idx].mean(axis=1)
    low, high = np.quantile(means, [(1.0 - ci) / 2.0, (1.0 + ci) / 2.0])
    return BootstrapResult(
        mean=float(np.dot(w, x) / w.sum()),
        ci_low=float(low),
        ci_high=float(high),
        prob_positive=float(np.mean(means > 0)),
        resamples=resamples,
        draws=draws,
        confidence=ci,
        means=means,
    )


# ---------------------------------------------------------------------------------------------
# Early closers
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EarlyCloserFilter:
    """``keep[i]`` says whether question i may be scored as of the date; ``reasons`` explains the rest."""

    keep: np.ndarray
    reasons: dict[int, str]


_UNIT = "datetime64[us]"


def _one_date(v: Any, name: str, missing_ok: bool) -> np.datetime64:
    if v is None or (isinstance(v, float) and np.isnan(v)) or (isinstance(v, np.datetime64) and np.isnat(v)):
        if missing_ok:
            return np.datetime64("NaT", "us")
        raise ScoreInputError(f"{name} is missing")
    if isinstance(v, _dt.datetime) and v.tzinfo is not None:
        v = v.astimezone(_dt.UTC).replace(tzinfo=None)
    if isinstance(v, bool | int | float | np.number):
        raise ScoreInputError(f"{name} = {v!r} is not a date")
    try:
        return np.datetime64(v, "us")
    except (TypeError, ValueError):
        raise ScoreInputError(f"{name} = {v!r} is not a date") from None


def _dates(values: Any, name: str, *, missing_ok: bool) -> np.ndarray:
    """datetime64[us] array from datetime64, datetime/date (aware ones as UTC) or ISO strings."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ScoreInputError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.dtype.kind == "M":
        out = arr.astype(_UNIT)
        nat = np.flatnonzero(np.isnat(out))
        if nat.size and not missing_ok:
            raise ScoreInputError(f"{name}[{int(nat[0])}] is missing")
        return out
    objs = np.asarray(values, dtype=object)
    return np.array([_one_date(v, f"{name}[{i}]", missing_ok) for i, v in enumerate(objs)], dtype=_UNIT)


def early_closer_filter(
    resolved_at: Sequence[Any] | np.ndarray,
    scheduled_resolution: Sequence[Any] | np.ndarray,
    as_of: Any,
) -> EarlyCloserFilter:
    """Keep a question only once it has resolved *and* its scheduled resolution date has passed.

    Questions that can resolve early can usually only do so one way (e.g. "will X happen before
    2034?" resolves Yes early, No only at the end), so scoring early resolutions before the others
    are in favours over-confident forecasters. The methodology therefore holds an early closer
    back until its scheduled date and counts it normally from then on; it is not dropped for good
    (Metaculus: AI benchmarking methodology, "Early Closer Problem").

    ``resolved_at`` may hold missing values (None/NaT) for unresolved questions. A question is
    kept iff resolved_at <= as_of and scheduled_resolution <= as_of.
    """
    res = _dates(resolved_at, "resolved_at", missing_ok=True)
    sched = _dates(scheduled_resolution, "scheduled_resolution", missing_ok=False)
    if sched.shape != res.shape:
        raise ScoreInputError(f"scheduled_resolution must have shape {res.shape} like resolved_at, got {sched.shape}")
    if isinstance(as_of, list | tuple | np.ndarray) and np.ndim(as_of) != 0:
        raise ScoreInputError("as_of must be a single date")
    now = _one_date(as_of.item() if isinstance(as_of, np.ndarray) else as_of, "as_of", missing_ok=False)
    unresolved = np.isnat(res) | (res > now)  # NaT compares False, hence the explicit isnat
    held_back = ~unresolved & (sched > now)
    keep = ~(unresolved | held_back)
    day = np.datetime_as_string
    reasons: dict[int, str] = {}
    for i in np.flatnonzero(unresolved):
        reasons[int(i)] = f"unresolved as of {day(now, unit='D')}"
    for i in np.flatnonzero(held_back):
        reasons[int(i)] = (
            f"early closer: resolved {day(res[i], unit='D')} before its scheduled resolution "
            f"{day(sched[i], unit='D')}; held back until then (as of {day(now, unit='D')})"
        )
    return EarlyCloserFilter(keep, dict(sorted(reasons.items())))
