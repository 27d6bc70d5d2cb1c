"""``diff``: compare two runs tuple by tuple (or question by question for ground-truth runs).

Runs are paired on the items both scored: tuples by their questions' ids, check by check (a note
says so when the two runs' benchmarks differ), resolved questions by id. The math is in
:mod:`consistency.metrics.paired`; the runs are read through :func:`consistency.store.read_run`; this
module pairs what they hold and names what changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..jsonl import LineError
from ..metrics.paired import PairedDiff, paired_diffs
from ..metrics.scoring import METRICS, ScoreParams, score_forecasts
from ..store.layout import GROUND_TRUTH
from ..store.meta import RunMeta
from ..store.runs import ForecastFile, Run, RunError, RunKind, read_run
from .diff_options import DiffInputError, DiffOptions


@dataclass
class Items:
    """One run's scored items of one group (a check, or ``Brier``): ids, score, answers and titles."""

    ids: list[str]
    score: np.ndarray
    probs: list[list[float]]
    titles: list[list[str]]
    fields: tuple[str, ...]


@dataclass
class RunScores:
    path: Path
    kind: str  # "consistency" or "ground_truth"
    groups: dict[str, Items]
    meta: RunMeta  # empty for a directory of forecast files without run.json
    skipped: list[LineError] = field(default_factory=list)

    @property
    def fingerprint(self) -> str | None:
        return self.meta.fingerprint

    @property
    def label(self) -> str:
        return self.meta.forecaster_name or self.path.name


@dataclass
class Changed:
    """A tuple whose score moved most between the runs, with both runs' answers."""

    group: str
    id: str
    score_a: float
    score_b: float
    fields: tuple[str, ...]
    titles: list[str]
    probs_a: list[float]
    probs_b: list[float]

    @property
    def change(self) -> float:
        return self.score_b - self.score_a

    def lines(self) -> list[str]:
        """The tuple's scores in both runs, then each question's forecast in A and in B with its title."""
        head = f"  {self.group} {self.score_a:.4f} → {self.score_b:.4f} ({self.change:+.4f})"
        return [head] + [
            f"    {name}: {pa:.3f} → {pb:.3f}  {title}"
            for name, title, pa, pb in zip(self.fields, self.titles, self.probs_a, self.probs_b, strict=True)
        ]


@dataclass
class DiffResult:
    a: RunScores
    b: RunScores
    metric: str
    groups: dict[str, PairedDiff]
    overall: PairedDiff
    changed: list[Changed]
    notes: list[str]
    level: float
    test: str
    #: Shared items each check of A needs for the comparison to count; None: :func:`fewest_to_reject` at the
    #: check's level (below it no test result could ever say "worse", so a gate would pass on nothing).
    min_shared: int | None = None

    @property
    def group_level(self) -> float:
        """The level each check is tested at: ``level`` / compared checks (Bonferroni)."""
        return self.level / max(1, len(self.groups))

    @property
    def floor(self) -> int:
        return self.min_shared if self.min_shared is not None else fewest_to_reject(self.group_level)

    def worse(self) -> list[str]:
        """What is significantly worse in B: ``overall`` at ``level``, a group at ``level`` / groups (Bonferroni)."""
        out = ["overall"] if self.overall.significantly_worse(self.level, self.test) else []
        out += [name for name, d in self.groups.items() if d.significantly_worse(self.group_level, self.test)]
        return out

    def not_comparable(self) -> list[str]:
        """One sentence per check of A that B cannot be compared on: no shared items, or fewer than
        :attr:`floor` (and one when A scored nothing at all)."""
        what = "resolved questions" if self.a.kind == "ground_truth" else "tuples"
        scored = {name: len(items.ids) for name, items in self.a.groups.items()}
        if not any(scored.values()):
            return [f"A ({self.a.path}) has no scored {what}: there is nothing to compare B with"]
        if self.min_shared is None:
            why = f"the fewest with which the {self.test} test could call B worse at level {self.group_level:.3g}"
        else:
            why = "the minimum asked for (min_shared)"
        out = []
        for name, n_a in scored.items():
            n = self.groups[name].n if name in self.groups else 0
            if n_a and n == 0:
                out.append(f"{name}: B shares none of A's {n_a} {what}, so B cannot be compared with A on it")
            elif n_a and n < self.floor:
                out.append(f"{name}: {n} of A's {n_a} {what} shared with B, fewer than {self.floor} ({why})")
        return out

    def failures(self) -> list[str]:
        """Why a gate on this comparison fails (``cc diff --fail-if-worse``): B cannot be compared on a check,
        or B is significantly worse; empty when it passes."""
        worse = self.worse()
        significantly = [f"B is significantly worse than A on {', '.join(worse)}"] if worse else []
        return self.not_comparable() + significantly

    def table(self) -> tuple[str, tuple[str, ...], list[tuple[Any, ...]]]:
        """Title, columns and a row per check then ``overall``: shared items, the two means, B − A with its
        interval, p, the pairs better/worse/same, and the verdict at the row's level (worse, better or "")."""
        what = "Brier score" if self.a.kind == "ground_truth" else f"{self.metric} violation"
        columns = ("check", "n", "A", "B", "B − A", f"{100 * (1 - self.level):g}% CI", "p", "better/worse/same", "")
        rows = []
        for name, d in [*self.groups.items(), ("overall", self.overall)]:
            cut = self.level if name == "overall" else self.group_level
            verdict = "worse" if d.significantly_worse(cut, self.test) else ""
            verdict = verdict or ("better" if d.significantly_better(cut, self.test) else "")
            interval = "-" if d.ci_low is None else f"[{d.ci_low:+.4f}, {d.ci_high:+.4f}]"
            rows.append((name, d.n, d.mean_a, d.mean_b, "-" if d.diff is None else f"{d.diff:+.4f}", interval,
                         f"{d.p(self.test):.3g}", f"{d.better}/{d.worse}/{d.same}", verdict))  # fmt: skip
        return f"mean {what} (lower is better), B − A, p of the paired {self.test} test", columns, rows

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": str(self.a.path),
            "b": str(self.b.path),
            "kind": self.a.kind,
            "metric": self.metric,
            "level": self.level,
            "test": self.test,
            "notes": self.notes,
            "overall": self.overall.to_dict(),
            "groups": {name: d.to_dict() for name, d in self.groups.items()},
            "worse": self.worse(),
            "min_shared": self.floor,
            "not_comparable": self.not_comparable(),
            "most_changed": [
                {
                    "group": c.group,
                    "id": c.id,
                    "score_a": c.score_a,
                    "score_b": c.score_b,
                    "change": c.change,
                    "questions": [
                        {"field": f, "title": t, "prob_a": pa, "prob_b": pb}
                        for f, t, pa, pb in zip(c.fields, c.titles, c.probs_a, c.probs_b, strict=True)
                    ],
                }
                for c in self.changed
            ],
        }


def read_run_scores(path: str | Path, metric: str = "default") -> RunScores:
    """A run directory's per-item scores: violations of ``metric`` per check, or Brier per question."""
    root = Path(path)
    if not root.is_dir():
        raise DiffInputError(f"{root}: no such run directory")
    try:
        run = read_run(root)
    except RunError:
        run = None
    meta = (run.meta if run is not None else None) or RunMeta()
    truth = run.ground_truth_file if run is not None and run.kind is RunKind.GROUND_TRUTH else None
    if truth is not None and truth.is_file():
        items, skipped = _ground_truth(run)
        return RunScores(root, "ground_truth", {"Brier": items}, meta, skipped)
    if run is None or not run.files or run.kind is RunKind.ATTACK:
        raise DiffInputError(f"{root}: neither <Checker>.jsonl files nor {GROUND_TRUTH}; not a run directory")
    if metric not in METRICS:
        raise DiffInputError(f"unknown metric {metric!r} (metrics: {', '.join(METRICS)})")
    params = meta.part("parameters", ScoreParams)
    groups, skipped = {}, []
    for file in sorted(run.files, key=lambda f: f.path.name):  # by file name, as cc diff always listed them
        items, bad = _checker_file(run, file, metric, params)
        groups[file.check.name] = items
        skipped += bad
    return RunScores(root, "consistency", groups, meta, skipped)


def diff_runs(
    a: str | Path | RunScores, b: str | Path | RunScores, options: DiffOptions | None = None, **settings: Any
) -> DiffResult:
    """Compare run B against run A on the items both scored; differences are B − A (positive: B worse).

    ``options`` (or ``settings``, its fields by name: ``diff_runs(a, b, level=0.01)``) say how. ``min_shared``
    is how many items each check of A must share with B for :meth:`DiffResult.failures` to pass (default: the
    fewest with which the test can find a difference at the check's level)."""
    o = options if options is not None else DiffOptions(**settings)
    metric, level, test, top = o.metric, o.level, o.test, o.top
    ra = a if isinstance(a, RunScores) else read_run_scores(a, metric)
    rb = b if isinstance(b, RunScores) else read_run_scores(b, metric)
    if ra.kind != rb.kind:
        raise DiffInputError(f"{ra.path} is a {ra.kind} run and {rb.path} a {rb.kind} run: nothing to pair")
    notes = []
    if ra.kind == "consistency" and ra.fingerprint != rb.fingerprint:
        notes.append("the runs' benchmarks differ (fingerprints): compared on the tuples both share by id")
    pairs: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
    for name in [g for g in ra.groups if g in rb.groups]:
        ia, ib = ra.groups[name], rb.groups[name]
        idx_a, idx_b = _match(ia.ids, ib.ids)
        only_a, only_b = len(ia.ids) - len(idx_a), len(ib.ids) - len(idx_b)
        if only_a or only_b:
            notes.append(f"{name}: {len(idx_a)} shared, {only_a} only in A, {only_b} only in B (left out)")
        finite = np.isfinite(ia.score[idx_a]) & np.isfinite(ib.score[idx_b])
        if not finite.all():
            notes.append(f"{name}: {int((~finite).sum())} shared item(s) without a finite score (left out)")
            idx_a, idx_b = idx_a[finite], idx_b[finite]
        pairs[name] = (ia.score[idx_a], ib.score[idx_b], idx_a, idx_b)
    for name in sorted(set(ra.groups) ^ set(rb.groups)):
        notes.append(f"{name}: only in {'A' if name in ra.groups else 'B'} (left out)")
    each, overall = paired_diffs(
        [p[0] for p in pairs.values()],
        [p[1] for p in pairs.values()],
        resamples=o.resamples,
        seed=o.seed,
        level=1 - level,
    )
    groups = dict(zip(pairs, each, strict=True))
    changed = _most_changed(ra, rb, pairs, top)
    return DiffResult(ra, rb, metric, groups, overall, changed, notes, level, test, o.min_shared)


def fewest_to_reject(level: float) -> int:
    """The fewest paired items with which the two-sided sign or Wilcoxon test can give p < ``level``.

    Both tests' smallest p-value for n untied pairs is 2 / 2^n (every pair on one side), so with fewer
    items than this no data could ever be called significantly worse: 6 at 0.05, 7 at 0.05 / 3."""
    n = 1
    while 2.0 * 0.5**n >= level:
        n += 1
    return n


def _match(ids_a: list[str], ids_b: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the ids both lists hold, paired, in A's order (ids seen twice keep their first place)."""
    where_b: dict[str, int] = {}
    for j, key in enumerate(ids_b):
        where_b.setdefault(key, j)
    seen: set[str] = set()
    ia, ib = [], []
    for i, key in enumerate(ids_a):
        j = where_b.get(key)
        if j is not None and key not in seen:
            seen.add(key)
            ia.append(i)
            ib.append(j)
    return np.asarray(ia, dtype=np.int64), np.asarray(ib, dtype=np.int64)


_SHOWN_COLUMNS = 12  # forecast columns of one tuple listed among the tuples that changed most


def _most_changed(ra: RunScores, rb: RunScores, pairs: dict[str, Any], top: int) -> list[Changed]:
    if top <= 0 or not pairs:
        return []
    names = list(pairs)
    change = np.concatenate([pairs[n][1] - pairs[n][0] for n in names])
    group = np.concatenate([np.full(len(pairs[n][0]), k) for k, n in enumerate(names)])
    within = np.concatenate([np.arange(len(pairs[n][0])) for n in names])
    if change.size == 0:
        return []
    order = np.argsort(-np.abs(change), kind="stable")[:top]
    out = []
    for k in order:
        if abs(change[k]) <= 1e-12:
            break
        name = names[group[k]]
        sa, sb, idx_a, idx_b = pairs[name]
        i, j = int(idx_a[within[k]]), int(idx_b[within[k]])
        ia, ib = ra.groups[name], rb.groups[name]
        score_a, score_b = float(sa[within[k]]), float(sb[within[k]])
        fields, titles, pa, pb = ia.fields, ia.titles[i], ia.probs[i], ib.probs[j]
        if len(fields) > _SHOWN_COLUMNS:  # a numeric grid (NUMERIC_PARAPHRASE): the columns that moved most
            keep = np.sort(np.argsort(-np.abs(np.subtract(pb, pa)), kind="stable")[:_SHOWN_COLUMNS])
            fields, titles = tuple(fields[c] for c in keep), [titles[c] for c in keep]
            pa, pb = [pa[c] for c in keep], [pb[c] for c in keep]
        out.append(Changed(name, ia.ids[i], score_a, score_b, fields, titles, pa, pb))
    return out


def _checker_file(run: Run, file: ForecastFile, metric: str, params: ScoreParams) -> tuple[Items, list[LineError]]:
    columns = run.tuples(file, text=True, metrics=[metric])
    score = columns.violation[metric].copy()
    unscored = np.flatnonzero(np.isnan(score))
    if len(unscored):  # a forecast file without our violation_data: score its answers here
        score[unscored] = score_forecasts(file.check, columns.probs[unscored], params=params).values(metric)
    titles = [list(t) for t in columns.titles or []]
    fields = tuple(file.check.columns)  # a categorical field has one column per outcome
    return Items(columns.ids(), score, columns.probs.tolist(), titles, fields), columns.errors


def _ground_truth(run: Run) -> tuple[Items, list[LineError]]:
    columns = run.ground_truth()
    resolved = np.flatnonzero(~np.isnan(columns.brier))  # unresolved: nothing to compare
    ids = [columns.question_ids[i] for i in resolved]
    probs = [[float(columns.probs[i])] for i in resolved]
    titles = [[columns.titles[i]] for i in resolved]
    return Items(ids, columns.brier[resolved], probs, titles, ("question",)), columns.errors
