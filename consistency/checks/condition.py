"""The consistency condition S of a check, and the frequentist metric derived from it.

A condition is written over field names with ``+ - * /``, ``min``, ``max`` and a comparison,
e.g. ``P * Q_given_P == P_and_Q`` or ``max(P + Q - 1, 0) <= P_and_Q <= min(P, Q)``. Each
comparison becomes a constraint ``g(F) = 0`` or ``g(F) <= 0``; the frequentist metric of the
paper (appendix E) is the delta-method z-score of ``g`` under independent binomial noise,
which a forward-mode derivative of ``g`` gives for every check at once.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..errors import InputError

Array = np.ndarray


class ConditionError(InputError):
    pass


def _dual(node: ast.AST, env: Mapping[str, Array]) -> tuple[Array, dict[str, Array]]:
    """Evaluate ``node`` and its gradient with respect to every field it mentions."""
    if isinstance(node, ast.Name):
        value = env[node.id]
        return value, {node.id: np.ones_like(value)}
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
        return {n.id for side in (self.lhs, self.rhs) for n in ast.walk(side) if isinstance(n, ast.Name)}

    def residual(self, env: Mapping[str, Array]) -> tuple[Array, dict[str, Array]]:
        a, da = _dual(self.lhs, env)
        b, db = _dual(self.rhs, env)
        return a - b, _combine(da, 1.0, db, -1.0)


_FUNCS = {"min", "max"}


def parse_condition(text: str, fields: Sequence[str]) -> tuple[Constraint, ...]:
    """Split a (possibly chained) comparison into constraints; ``>=`` is turned around."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ConditionError(f"cannot parse condition {text!r}: {exc.msg}") from None
    if not isinstance(tree, ast.Compare):
        raise ConditionError(f"condition {text!r} must compare two expressions (==, <=, >=)")
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in fields and node.id not in _FUNCS:
            raise ConditionError(f"condition {text!r} names {node.id!r}, which is not a field ({', '.join(fields)})")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _FUNCS):
            raise ConditionError(f"condition {text!r}: only min() and max() may be called")
    out: list[Constraint] = []
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
