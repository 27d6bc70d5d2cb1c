"""Replay ArbitrageForecaster call trees: recompute every node from its children with the exact solver.

A call tree (the metadata of the paper's ``ConsistentForecaster_*`` forecasts, and of ours) is a
list: x's own answer ``{"name": "P", "elicited_prob", "elicitation_metadata"}``, then one entry
per check ``{"name": "<Checker>", "data": {field: {...question, "elicited_prob",
"elicitation_metadata"}}}``; a nested ``elicitation_metadata`` that is itself such a list is the
tree one level down (in our run directories, a reference to that tree's line in
``arbitrage_steps.jsonl``). Each node is recomputed twice: *locally*, from its children's stored values
(how far each stored step is from the exact one), and *bottom-up*, from recomputed children (the
exact re-computation of the whole run, which ``write_replayed`` writes out).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from consistency.checks import Check, get_check
from consistency.forecasters.arbitrage.sidecar import SIDECAR, ReplayError, Sidecar, is_reference
from consistency.forecasters.arbitrage.step import arbitrage_step, min_profit, step_weights, weight_rule
from consistency.jsonl import LineError, atomic_write, dump_line, iter_json_lines
from consistency.metrics.arbitrage import arbitrage
from consistency.store import layout

#: A stored step whose trade can lose more than this (nats) counts as a negative guaranteed profit.
PROFIT_TOLERANCE = 1e-9


def is_tree(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) >= 1
        and isinstance(value[0], dict)
        and "elicited_prob" in value[0]
        and all(isinstance(e, dict) and ("data" in e or "elicited_prob" in e) for e in value)
    )


@dataclass
class DepthStats:
    nodes: int = 0
    max_diff: float = 0.0
    steps: int = 0
    negative_profit: int = 0
    violation_stored: float = 0.0  # summed over steps; averaged in as_dict
    violation_recomputed: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        n = max(self.steps, 1)
        return {
            "nodes": self.nodes,
            "max_abs_diff": self.max_diff,
            "steps": self.steps,
            "negative_profit_steps": self.negative_profit,
            "violation_stored": self.violation_stored / n,
            "violation_recomputed": self.violation_recomputed / n,
        }


@dataclass
class FileReplay:
    path: str
    forecasts: int = 0  # forecasts holding a call tree
    by_depth: dict[int, DepthStats] = field(default_factory=dict)

    @property
    def nodes(self) -> int:
        return sum(d.nodes for d in self.by_depth.values())

    @property
    def max_diff(self) -> float:
        return max((d.max_diff for d in self.by_depth.values()), default=0.0)

    @property
    def negative_profit(self) -> int:
        return sum(d.negative_profit for d in self.by_depth.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "forecasts": self.forecasts,
            "nodes": self.nodes,
            "max_abs_diff": self.max_diff,
            "negative_profit_steps": self.negative_profit,
            "by_depth": {str(d): s.as_dict() for d, s in sorted(self.by_depth.items())},
        }

    #: The columns of :meth:`rows`, as ``cc arbitrage replay`` shows them.
    COLUMNS = ("file", "depth", "nodes", "max |recomputed - stored|", "negative-profit steps", "viol. stored",
               "viol. recomputed")  # fmt: skip

    def rows(self) -> list[tuple[object, ...]]:
        """One row per depth of the file's call trees (one saying so when it holds none)."""
        name = Path(self.path).name
        rows: list[tuple[object, ...]] = [] if self.forecasts else [(name, "-", "0", "no call trees", "", "", "")]
        for depth, s in sorted(self.by_depth.items()):
            d = s.as_dict()
            rows.append((name, depth, d["nodes"], f"{d['max_abs_diff']:.2e}", d["negative_profit_steps"],
                         f"{d['violation_stored']:.4f}", f"{d['violation_recomputed']:.4f}"))  # fmt: skip
        return rows


@dataclass
class Replayer:
    """Recomputes trees with one weight rule, accumulating statistics into ``stats``."""

    rule: str = "accumulate"
    stats: FileReplay = field(default_factory=lambda: FileReplay(""))
    sidecar: Sidecar | None = None

    def __post_init__(self) -> None:
        self.rule = weight_rule(self.rule)

    def replay(self, tree: list[dict[str, Any]], stored: float | None) -> tuple[float, list[dict[str, Any]], int]:
        """(bottom-up value, the tree with recomputed values, the node's depth)."""
        x = tree[0]
        x_value, x_tree, depth = self._child(x)
        rebuilt: list[dict[str, Any]] = [{**x, "elicited_prob": x_value, "elicitation_metadata": x_tree}]
        local_p, exact_p, w = float(x["elicited_prob"]), x_value, 1.0
        steps = []
        for entry in tree[1:]:
            if entry.get("skipped"):  # the check did not apply to x (our trees record why)
                rebuilt.append(entry)
                continue
            check = _check_of(entry)
            slot = check.field_names[0]
            data = {f: d for f, d in entry["data"].items() if f != slot}
            missing = [f for f in check.field_names[1:] if f not in data]
            if missing:
                raise ReplayError(f"{check.class_name} step lacks field(s) {', '.join(missing)}")
            children = {f: self._child(data[f]) for f in check.field_names[1:]}
            depth = max([depth, *(c[2] for c in children.values())])
            weights, w_next = step_weights(self.rule, check.field_names, w)
            stored_children = {f: float(data[f]["elicited_prob"]) for f in children}
            local = arbitrage_step(check, {slot: local_p, **stored_children}, weights)
            exact = arbitrage_step(check, {slot: exact_p, **{f: c[0] for f, c in children.items()}}, weights)
            steps.append((check, local, stored_children))
            new_data = {
                f: {**data[f], "elicited_prob": c[0], "elicitation_metadata": c[1]} for f, c in children.items()
            }
            rebuilt.append({**entry, "data": new_data} | _recomputed_step(exact))
            local_p, exact_p, w = local.after, exact.after, w_next
        depth += 1
        stats = self.stats.by_depth.setdefault(depth, DepthStats())
        stats.nodes += 1
        if stored is not None and steps:
            stats.max_diff = max(stats.max_diff, abs(local_p - stored))
            check, last, stored_children = steps[-1]
            # the stored price against the exact trade on the other fields: can it lose money?
            moved = dict(last.prices) | {check.field_names[0]: stored}
            if last.violation > 0 and min_profit(check, last.forecasts, moved, last.weights) < -PROFIT_TOLERANCE:
                stats.negative_profit += 1
        final = stored if stored is not None else local_p
        for check, _, stored_children in steps:
            stats.steps += 1
            stats.violation_stored += _violation(check, final, stored_children)
            stats.violation_recomputed += _violation(check, local_p, stored_children)
        return exact_p, rebuilt, depth

    def _child(self, entry: dict[str, Any]) -> tuple[float, Any, int]:
        value = entry.get("elicited_prob")
        if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value <= 1:
            raise ReplayError(f"elicited_prob must be a probability, got {value!r}")
        meta = entry.get("elicitation_metadata")
        if is_reference(meta):
            if self.sidecar is None:
                raise ReplayError(f"the tree refers to an {SIDECAR}; replay it inside its run directory")
            meta = self.sidecar.tree(meta)
        if is_tree(meta):
            return self.replay(meta, float(value))
        return float(value), meta, 0


def _check_of(entry: dict[str, Any]) -> Check:
    name = entry.get("name")
    if not isinstance(name, str) or not isinstance(entry.get("data"), dict):
        raise ReplayError(f"a check step needs a checker name and data, got keys {sorted(entry)}")
    return get_check(name)


def _recomputed_step(step: Any) -> dict[str, Any]:
    return {
        "weights": step.weights,
        "prices": step.prices,
        "violation": step.violation,
        "certificate": {"gap": step.gap},
        "prob_before": step.before,
        "prob_after": step.after,
    }


def _violation(check: Check, x: float, others: dict[str, float]) -> float:
    """The (unweighted) arbitrage violation of the tuple with x at ``x``."""
    row = np.array([[x, *(others[f] for f in check.field_names[1:])]])
    return float(arbitrage(row, check.worlds).violation[0])


# --------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------


def forecast_files(path: str | Path) -> list[Path]:
    source = Path(path)
    if source.is_file():
        return [source]
    if source.is_dir():
        # a run directory's journal, transcript and sidecar are not forecast files
        files = sorted(p for p in source.glob(f"*{layout.FORECAST_SUFFIX}") if p.name not in layout.NOT_FORECASTS)
        if files:
            return files
        raise ReplayError(f"{source}: no .jsonl forecast files")
    raise ReplayError(f"{source}: no such file or directory")


def _forecasts(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The forecast objects of one line: a forecast line's fields, a ground-truth line, a journal record."""
    if isinstance(obj.get("line"), dict):
        for entry in obj["line"].values():
            if isinstance(entry, dict) and isinstance(entry.get("forecast"), dict):
                yield entry["forecast"]
    elif isinstance(obj.get("forecast"), dict):
        yield obj["forecast"]


def replay_file(path: str | Path, rule: str = "accumulate", write_to: Path | None = None) -> FileReplay:
    """Replay every call tree in one file; with ``write_to``, write it with recomputed values."""
    replayer = Replayer(rule, FileReplay(str(path)), Sidecar(Path(path).parent))
    out_lines: list[str] = []
    # a question shared by several tuples carries the same tree: replay it once
    done: dict[str, tuple[float, Any]] = {}
    for number, obj in iter_json_lines(path):
        if isinstance(obj, LineError):
            raise ReplayError(str(obj))
        for forecast in _forecasts(obj):
            tree = forecast.get("metadata")
            if not is_tree(tree):
                continue
            key = json.dumps(tree, sort_keys=True)[:100000] + repr(forecast.get("prob"))
            if key not in done:
                replayer.stats.forecasts += 1
                try:
                    value, rebuilt, _ = replayer.replay(tree, _stored(forecast, path, number))
                except (ReplayError, KeyError, ValueError) as exc:
                    raise ReplayError(f"{path}:{number}: {exc}") from None
                done[key] = (value, rebuilt)
            if write_to is not None:
                value, rebuilt = done[key]
                forecast["prob"], forecast["metadata"] = value, rebuilt
        if write_to is not None:
            obj.pop("violation_data", None)  # stale: `cc score` recomputes it
            out_lines.append(dump_line(obj))
    if write_to is not None:
        with atomic_write(write_to / Path(path).name) as fh:
            fh.writelines(out_lines)
    return replayer.stats


def _stored(forecast: dict[str, Any], path: str | Path, number: int) -> float:
    prob = forecast.get("prob")
    if not isinstance(prob, int | float) or isinstance(prob, bool) or not math.isfinite(prob):
        raise ReplayError(f"{path}:{number}: forecast.prob must be a number, got {prob!r}")
    return float(prob)


def replay(path: str | Path, rule: str = "accumulate", write_to: str | Path | None = None) -> list[FileReplay]:
    """Replay every forecast file under ``path`` (a file or a directory of ``*.jsonl``)."""
    out = Path(write_to) if write_to is not None else None
    files = forecast_files(path)
    if out is not None:
        if any(out.resolve() == p.parent.resolve() for p in files):
            raise ReplayError(f"{out}: the recomputed files would replace the ones replayed; write elsewhere")
        out.mkdir(parents=True, exist_ok=True)
    return [replay_file(p, rule, out) for p in files]
