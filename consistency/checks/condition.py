"""The consistency condition S of a check, and the frequentist metric derived from it.

A condition is written over field names with ``+ - * /``, ``min``, ``max`` and a comparison,
e.g. ``P * Q_given_P == P_and_Q`` or ``max(P + Q - 1, 0) <= P_and_Q <= min(P, Q)``. Each
comparison becomes a constraint ``g(F) = 0`` or ``g(F) <= 0``; the frequentist metric of the
paper (appendix E) is the delta-method z-score of ``g`` under independent binomial noise,
which a forward-mode derivative of ``g`` gives for every check at once.

A categorical field's columns are written ``X[0]``, ``X[1]`` …; ``X == para_X`` between two categorical fields
with the same outcomes says their distributions are equal (:class:`SameDistribution`).
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..errors import InputError

Array = np.ndarray


class ConditionError(InputError):
    pass


def _dual(node: ast.AST, env: Mapping[str, Array]) -> tuple[Array, dict[str, Array]]:
    """Evaluate ``node`` and its gradient with respect to every field it mentions."""
    if isinstance(node, ast.Name | ast.Subscript):
        key = _column(node)
        value = env[key]
        return value, {key: np.ones_like(value)}
    if isinstance(node, ast.Constant):
        return np.asarray(float(node.value)), {}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v, d = _dual(node.operand, env)
        return -v, {k: -g for k, g in d.items()}
    if isinstance(node, ast.BinOp):
        a, da = _dual(node.left, env)
        b, db = _dual(node.right, env)
        if isinstance(node.op, ast.Add):
            return a + b, _combine(da, 1.0, db, 1.0)
        if isinstance(node.op, ast.Sub):
            return a - b, _combine(da, 1.0, db, -1.0)
        if isinstance(node.op, ast.Mult):
            return a * b, _combine(da, b, db, a)
        if isinstance(node.op, ast.Div):
            return a / b, _combine(da, 1.0 / b, db, -a / (b * b))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
        parts = [_dual(arg, env) for arg in node.args]
        value, grad = parts[0]
        for v, d in parts[1:]:
            # The derivative of min/max follows the selected argument (first one on ties).
            take = v < value if node.func.id == "min" else v > value
            value = np.where(take, v, value)
            keys = set(grad) | set(d)
            zero = np.zeros_like(value)
            grad = {k: np.where(take, d.get(k, zero), grad.get(k, zero)) for k in keys}
        return value, grad
    raise ConditionError(f"unsupported expression {ast.unparse(node)!r}")


def _combine(da: dict[str, Array], ca, db: dict[str, Array], cb) -> dict[str, Array]:
    out = {k: g * ca for k, g in da.items()}
    for k, g in db.items():
        out[k] = out[k] + g * cb if k in out else g * cb
    return out


@dataclass(frozen=True)
class Constraint:
    """``g(F) == 0`` (equality) or ``g(F) <= 0`` (inequality) with ``g = lhs - rhs``."""

    lhs: ast.expr
    rhs: ast.expr
    equality: bool

    def __str__(self) -> str:
        op = "=" if self.equality else "≤"
        return f"{ast.unparse(self.lhs)} {op} {ast.unparse(self.rhs)}"

    def names(self) -> set[str]:
        """The columns the constraint reads."""
        out = set()
        for side in (self.lhs, self.rhs):
            for n in ast.walk(side):
                if isinstance(n, ast.Subscript):
                    out.add(_column(n))
                elif isinstance(n, ast.Name) and n.id not in _FUNCS and not _subscripted(side, n):
                    out.add(n.id)
        return out

    def residual(self, env: Mapping[str, Array]) -> tuple[Array, dict[str, Array]]:
        a, da = _dual(self.lhs, env)
        b, db = _dual(self.rhs, env)
        return a - b, _combine(da, 1.0, db, -1.0)


@dataclass(frozen=True)
class SameDistribution:
    """``X == Y`` for two categorical fields with the same outcomes: equal distributions.

    For ordered outcomes (a numeric question's bins) the comparison is between the two CDFs, point by point (its
    largest gap is the Kolmogorov-Smirnov distance); for unordered ones, option by option.
    """

    a: str
    b: str
    outcomes: int
    ordered: bool
    equality: bool = True

    def __str__(self) -> str:
        return f"{self.a} = {self.b} ({'each CDF point' if self.ordered else 'each outcome'})"

    def names(self) -> set[str]:
        return {f"{f}[{o}]" for f in (self.a, self.b) for o in range(self.outcomes)}

    def gaps(self, env: Mapping[str, Array]) -> tuple[Array, Array, Array]:
        """Per compared point (last axis): the difference and the two sides' values (CDFs or outcome masses)."""
        a = np.stack([env[f"{self.a}[{o}]"] for o in range(self.outcomes)], axis=-1)
        b = np.stack([env[f"{self.b}[{o}]"] for o in range(self.outcomes)], axis=-1)
        return self.compare(a, b)

    def compare(self, a: Array, b: Array) -> tuple[Array, Array, Array]:
        """:meth:`gaps` from the two fields' outcome columns, (N, m) each."""
        if self.ordered:  # P(X <= outcome o) for o < m - 1 (the last is 1 on both sides)
            a, b = np.cumsum(a, axis=-1)[..., :-1], np.cumsum(b, axis=-1)[..., :-1]
        return a - b, a, b

    def residual(self, env: Mapping[str, Array]) -> tuple[Array, dict[str, Array]]:
        """The largest gap (no gradient: the frequentist metric treats this constraint point by point)."""
        return np.abs(self.gaps(env)[0]).max(axis=-1), {}


_FUNCS = {"min", "max"}


def _column(node: ast.Name | ast.Subscript) -> str:
    if isinstance(node, ast.Name):
        return node.id
    assert isinstance(node.value, ast.Name) and isinstance(node.slice, ast.Constant)
    return f"{node.value.id}[{node.slice.value}]"


def _subscripted(tree: ast.AST, name: ast.Name) -> bool:
    return any(isinstance(n, ast.Subscript) and n.value is name for n in ast.walk(tree))


def parse_condition(
    text: str,
    fields: Sequence[str],
    categorical: Mapping[str, int] | None = None,
    ordered: Collection[str] = (),
) -> tuple[Constraint | SameDistribution, ...]:
    """Split a (possibly chained) comparison into constraints; ``>=`` is turned around.

    ``categorical`` gives the categorical fields' numbers of outcomes: their columns are ``X[0]`` …, and
    ``X == Y`` between two of them is a :class:`SameDistribution` (compared as CDFs when ``X`` is ``ordered``).
    """
    categorical = dict(categorical or {})
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ConditionError(f"cannot parse condition {text!r}: {exc.msg}") from None
    if not isinstance(tree, ast.Compare):
        raise ConditionError(f"condition {text!r} must compare two expressions (==, <=, >=)")
    if (
        len(tree.ops) == 1
        and isinstance(tree.ops[0], ast.Eq)
        and all(isinstance(n, ast.Name) and n.id in categorical for n in (tree.left, tree.comparators[0]))
    ):
        a, b = tree.left.id, tree.comparators[0].id  # type: ignore[attr-defined]
        if categorical[a] != categorical[b]:
            raise ConditionError(f"condition {text!r}: {a} and {b} have different numbers of outcomes")
        return (SameDistribution(a, b, categorical[a], a in ordered),)
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            _check_subscript(text, node, categorical)
        elif isinstance(node, ast.Name) and not _subscripted(tree, node):
            if node.id not in fields and node.id not in _FUNCS:
                raise ConditionError(
                    f"condition {text!r} names {node.id!r}, which is not a field ({', '.join(fields)})"
                )
            if node.id in categorical:
                raise ConditionError(
                    f"condition {text!r}: {node.id} is categorical; name its outcomes {node.id}[0] … "
                    f"{node.id}[{categorical[node.id] - 1}]"
                )
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _FUNCS):
            raise ConditionError(f"condition {text!r}: only min() and max() may be called")
    out: list[Constraint | SameDistribution] = []
    left = tree.left
    for op, right in zip(tree.ops, tree.comparators, strict=True):
        if isinstance(op, ast.Eq):
            out.append(Constraint(left, right, True))
        elif isinstance(op, (ast.LtE, ast.Lt)):
            out.append(Constraint(left, right, False))
        elif isinstance(op, (ast.GtE, ast.Gt)):
            out.append(Constraint(right, left, False))
        else:
            raise ConditionError(f"condition {text!r}: use ==, <= or >=")
        left = right
    return tuple(out)


def _check_subscript(text: str, node: ast.Subscript, categorical: Mapping[str, int]) -> None:
    name = node.value.id if isinstance(node.value, ast.Name) else None
    index = node.slice.value if isinstance(node.slice, ast.Constant) else None
    if name not in categorical:
        raise ConditionError(f"condition {text!r}: only a categorical field's outcomes are subscripted")
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < categorical[name]:
        raise ConditionError(f"condition {text!r}: {name} has outcomes {name}[0] to {name}[{categorical[name] - 1}]")


def affine_identities(worlds: np.ndarray, fields: Sequence[str]) -> list[str]:
    """The linear identities every coherent forecast satisfies, one condition string each.

    For checks whose fields all resolve in every world, coherent forecasts are the convex
    hull of the worlds; its affine hull's equations (exact rational null space of
    ``[W | -1]``) are the equality conditions, e.g. ``P + not_P == 1``.
    """
    n = worlds.shape[1]
    rows = [[Fraction(int(v)) for v in w] + [Fraction(-1)] for w in worlds]
    basis = _nullspace(rows, n + 1)
    parts = []
    for vec in basis:
        scale = _lcm_den(vec)
        coef = [int(c * scale) for c in vec]
        a, b = coef[:n], coef[n]
        if next(c for c in coef if c) < 0:
            a, b = [-c for c in a], -b
        left = _linear([(c, f) for c, f in zip(a, fields, strict=True) if c > 0], 0)
        right = _linear([(-c, f) for c, f in zip(a, fields, strict=True) if c < 0], b)
        parts.append(f"{left} == {right}")
    return parts


def _linear(terms: list[tuple[int, str]], const: int) -> str:
    items = [f if c == 1 else f"{c} * {f}" for c, f in terms]
    if const or not items:
        items.append(str(const))
    return " + ".join(items)


def _lcm_den(vec: list[Fraction]) -> int:
    from math import lcm

    return lcm(*(c.denominator for c in vec))


def _nullspace(rows: list[list[Fraction]], ncols: int) -> list[list[Fraction]]:
    m = [r[:] for r in rows]
    pivots: list[int] = []
    r = 0
    for c in range(ncols):
        pivot = next((i for i in range(r, len(m)) if m[i][c] != 0), None)
        if pivot is None:
            continue
        m[r], m[pivot] = m[pivot], m[r]
        m[r] = [v / m[r][c] for v in m[r]]
        for i in range(len(m)):
            if i != r and m[i][c] != 0:
                m[i] = [a - m[i][c] * b for a, b in zip(m[i], m[r], strict=True)]
        pivots.append(c)
        r += 1
    free = [c for c in range(ncols) if c not in pivots]
    basis = []
    for f in free:
        vec = [Fraction(0)] * ncols
        vec[f] = Fraction(1)
        for i, pc in enumerate(pivots):
            vec[pc] = -m[i][f]
        basis.append(vec)
    return basis
