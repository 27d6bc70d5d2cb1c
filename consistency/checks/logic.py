"""Propositional formulas over base events, as used to declare what a check's fields mean.

A field's meaning is a formula such as ``P``, ``not P``, ``P and Q`` or ``Q given P``.
``given`` makes a conditional question: it has no truth value (``None``) in worlds where its
condition is false, which is how the paper's conditional questions resolve.

A base may also be *categorical* (declared with its number of outcomes, see :class:`~.check.Check`): it takes one
of the values 0 … m-1 in each world. A field that is such a base itself is a categorical field; a comparison such
as ``X == 2`` or ``X >= 1`` is an event about it.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import InputError

Truth = bool | None
#: A base's value in a world: true/false, or the outcome of a categorical base.
Value = bool | int


class Formula:
    """A propositional formula; subclasses are immutable and hashable."""

    def evaluate(self, world: Mapping[str, Value]) -> Truth:
        raise NotImplementedError

    def atoms(self) -> frozenset[str]:
        raise NotImplementedError

    @property
    def is_conditional(self) -> bool:
        return False

    def symbol(self) -> str:
        """Render with logic symbols (¬ ∧ ∨ ⇒ |), for tables and help text."""
        raise NotImplementedError


@dataclass(frozen=True)
class Var(Formula):
    name: str

    def evaluate(self, world: Mapping[str, bool]) -> Truth:
        return world[self.name]

    def atoms(self) -> frozenset[str]:
        return frozenset({self.name})

    def symbol(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name


_COMPARE = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_COMPARE_SYMBOL = {"==": "=", "!=": "≠", "<": "<", "<=": "≤", ">": ">", ">=": "≥"}


@dataclass(frozen=True)
class Compare(Formula):
    """``X >= 2``: an event about the outcome (0 … m-1) of a categorical base."""

    name: str
    op: str
    value: int

    def evaluate(self, world: Mapping[str, Value]) -> Truth:
        return _COMPARE[self.op](world[self.name], self.value)

    def atoms(self) -> frozenset[str]:
        return frozenset({self.name})

    def symbol(self) -> str:
        return f"{self.name}{_COMPARE_SYMBOL[self.op]}{self.value}"

    def __str__(self) -> str:
        return f"{self.name} {self.op} {self.value}"


@dataclass(frozen=True)
class Not(Formula):
    arg: Formula

    def evaluate(self, world: Mapping[str, bool]) -> Truth:
        return not self.arg.evaluate(world)

    def atoms(self) -> frozenset[str]:
        return self.arg.atoms()

    def symbol(self) -> str:
        return "¬" + _wrap(self.arg, self.arg.symbol())

    def __str__(self) -> str:
        return "not " + _wrap(self.arg, str(self.arg))


@dataclass(frozen=True)
class _Nary(Formula):
    args: tuple[Formula, ...]

    op_word = ""
    op_symbol = ""

    def atoms(self) -> frozenset[str]:
        return frozenset().union(*(a.atoms() for a in self.args))

    def symbol(self) -> str:
        return self.op_symbol.join(_wrap(a, a.symbol()) for a in self.args)

    def __str__(self) -> str:
        return f" {self.op_word} ".join(_wrap(a, str(a)) for a in self.args)


class And(_Nary):
    op_word, op_symbol = "and", "∧"

    def evaluate(self, world: Mapping[str, bool]) -> Truth:
        return all(a.evaluate(world) for a in self.args)


class Or(_Nary):
    op_word, op_symbol = "or", "∨"

    def evaluate(self, world: Mapping[str, bool]) -> Truth:
        return any(a.evaluate(world) for a in self.args)


@dataclass(frozen=True)
class Implies(Formula):
    premise: Formula
    conclusion: Formula

    def evaluate(self, world: Mapping[str, bool]) -> Truth:
        return (not self.premise.evaluate(world)) or bool(self.conclusion.evaluate(world))

    def atoms(self) -> frozenset[str]:
        return self.premise.atoms() | self.conclusion.atoms()

    def symbol(self) -> str:
        return f"{_wrap(self.premise, self.premise.symbol())} ⇒ {_wrap(self.conclusion, self.conclusion.symbol())}"

    def __str__(self) -> str:
        return f"{_wrap(self.premise, str(self.premise))} implies {_wrap(self.conclusion, str(self.conclusion))}"


@dataclass(frozen=True)
class Given(Formula):
    """``outcome given condition``: resolves like ``outcome`` when ``condition`` holds, else None."""

    outcome: Formula
    condition: Formula

    def evaluate(self, world: Mapping[str, bool]) -> Truth:
        if not self.condition.evaluate(world):
            return None
        return self.outcome.evaluate(world)

    def atoms(self) -> frozenset[str]:
        return self.outcome.atoms() | self.condition.atoms()

    @property
    def is_conditional(self) -> bool:
        return True

    def symbol(self) -> str:
        return f"{self.outcome.symbol()} | {self.condition.symbol()}"

    def __str__(self) -> str:
        return f"{self.outcome} given {self.condition}"


def variables(formula: Formula) -> list[str]:
    """Base events in order of first appearance, left to right."""
    if isinstance(formula, Var | Compare):
        return [formula.name]
    if isinstance(formula, Not):
        children: tuple[Formula, ...] = (formula.arg,)
    elif isinstance(formula, _Nary):
        children = formula.args
    elif isinstance(formula, Implies):
        children = (formula.premise, formula.conclusion)
    else:
        assert isinstance(formula, Given)
        children = (formula.outcome, formula.condition)
    return list(dict.fromkeys(name for child in children for name in variables(child)))


def _wrap(node: Formula, text: str) -> str:
    return text if isinstance(node, (Var, Not, Compare)) else f"({text})"


_TOKEN = re.compile(r"\s*(?:(\()|(\))|([A-Za-z_][A-Za-z_0-9]*)|(==|!=|<=|>=|<|>)|(\d+))")
_KEYWORDS = {"not", "and", "or", "given", "implies"}


class FormulaSyntaxError(InputError):
    pass


def parse(text: str) -> Formula:
    """Parse ``not``/``and``/``or``/``implies``/``given`` with the usual precedence.

    ``given`` binds loosest and may appear once, at the top: ``R given P and Q``.
    """
    tokens: list[str] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise FormulaSyntaxError(f"cannot parse formula {text!r} at position {pos}")
        tokens.append(m.group(0).strip())
        pos = m.end()
    parser = _Parser(tokens, text)
    result = parser.given()
    if parser.i != len(tokens):
        raise FormulaSyntaxError(f"unexpected {tokens[parser.i]!r} in formula {text!r}")
    return result


class _Parser:
    def __init__(self, tokens: list[str], text: str) -> None:
        self.tokens, self.text, self.i = tokens, text, 0

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> str:
        tok = self.peek()
        if tok is None:
            raise FormulaSyntaxError(f"formula {self.text!r} ends too early")
        self.i += 1
        return tok

    def given(self) -> Formula:
        outcome = self.implies()
        if self.peek() == "given":
            self.take()
            return Given(outcome, self.implies())
        return outcome

    def implies(self) -> Formula:
        left = self.disj()
        if self.peek() == "implies":
            self.take()
            return Implies(left, self.implies())
        return left

    def disj(self) -> Formula:
        args = [self.conj()]
        while self.peek() == "or":
            self.take()
            args.append(self.conj())
        return args[0] if len(args) == 1 else Or(tuple(args))

    def conj(self) -> Formula:
        args = [self.unary()]
        while self.peek() == "and":
            self.take()
            args.append(self.unary())
        return args[0] if len(args) == 1 else And(tuple(args))

    def unary(self) -> Formula:
        tok = self.take()
        if tok == "not":
            return Not(self.unary())
        if tok == "(":
            inner = self.implies()
            if self.take() != ")":
                raise FormulaSyntaxError(f"missing ')' in formula {self.text!r}")
            return inner
        if tok in _KEYWORDS or tok == ")" or tok in _COMPARE or tok.isdigit():
            raise FormulaSyntaxError(f"unexpected {tok!r} in formula {self.text!r}")
        if self.peek() in _COMPARE:
            op = self.take()
            value = self.take()
            if not value.isdigit():
                raise FormulaSyntaxError(f"{tok} {op} needs an outcome number, got {value!r} in formula {self.text!r}")
            return Compare(tok, op, int(value))
        return Var(tok)
