"""What a consistency check is: a small declaration from which everything else is derived.

A check names its fields and what each one means in terms of a few base events (a
formula), optionally an assumption relating the base events (``P implies Q``) and the
consistency condition S. From that we derive its possible worlds Ω, the question type of each
field, resolution propagation, the frequentist metric and (in :mod:`consistency.metrics`) the
exact arbitrage metric.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..errors import InputError
from .condition import ConditionError, Constraint, affine_identities, parse_condition
from .logic import Formula, FormulaSyntaxError, Truth, parse, variables

BINARY = "binary"
CONDITIONAL = "conditional_binary"

#: Encoding of a field's resolution inside :attr:`Check.worlds`.
TRUE, FALSE, NONE = 1, 0, -1


class CheckDeclarationError(InputError):
    """A check declaration that is malformed or contradicts its own logic."""


@dataclass(frozen=True, eq=False)
class Check:
    """A consistency check, declared by what its fields mean.

    ``fields`` maps each field name (the paper's, e.g. ``Q_given_P``) to a formula over base
    events. ``condition`` is S, written over field names; when omitted and no field is
    conditional it is derived: the affine identities shared by all possible worlds.
    ``instantiate`` overrides a field's formula for deterministic template instantiation when
    its meaning cannot be written from the bases alone (CONSEQUENCE's ``Q`` with ``P implies Q``
    becomes ``P or Q``); the override must only produce worlds of the check.
    """

    name: str
    fields: Mapping[str, str]
    class_name: str = ""
    aliases: tuple[str, ...] = ()
    assume: str | None = None
    condition: str | Sequence[str] | None = None
    description: str = ""
    instantiate: Mapping[str, str] | None = None
    _formulas: dict[str, Formula] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.fields:
            raise CheckDeclarationError(f"check {self.name} declares no fields")
        if not self.class_name:
            object.__setattr__(self, "class_name", self.name.title().replace("_", "") + "Checker")
        try:
            formulas = {name: parse(text) for name, text in self.fields.items()}
            self._assumption  # noqa: B018 - parse eagerly so errors surface at declaration
        except FormulaSyntaxError as exc:
            raise CheckDeclarationError(f"check {self.name}: {exc}") from None
        object.__setattr__(self, "_formulas", formulas)
        try:
            self.constraints  # noqa: B018
        except ConditionError as exc:
            raise CheckDeclarationError(f"check {self.name}: {exc}") from None
        self._verify_condition()
        if self.instantiate:
            self._verify_instantiation()

    # ----------------------------------------------------------------- derived structure
    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(self.fields)

    @property
    def n_fields(self) -> int:
        return len(self.fields)

    @property
    def formulas(self) -> Mapping[str, Formula]:
        return self._formulas

    @cached_property
    def _assumption(self) -> Formula | None:
        return parse(self.assume) if self.assume else None

    @cached_property
    def bases(self) -> tuple[str, ...]:
        """Base events in order of first appearance (``P``, ``Q``, ``R``)."""
        formulas = [*self._formulas.values(), *([self._assumption] if self._assumption else [])]
        return tuple(dict.fromkeys(name for f in formulas for name in variables(f)))

    @cached_property
    def question_types(self) -> dict[str, str]:
        return {name: CONDITIONAL if f.is_conditional else BINARY for name, f in self._formulas.items()}

    def _assignments(self) -> list[dict[str, bool]]:
        out = []
        for values in itertools.product((True, False), repeat=len(self.bases)):
            world = dict(zip(self.bases, values, strict=True))
            if self._assumption is None or self._assumption.evaluate(world):
                out.append(world)
        return out

    @cached_property
    def worlds(self) -> np.ndarray:
        """Ω: one row per possible joint resolution of the fields (1 true, 0 false, -1 none)."""
        rows: dict[tuple[int, ...], None] = {}
        for world in self._assignments():
            row = tuple(_encode(f.evaluate(world)) for f in self._formulas.values())
            rows.setdefault(row, None)
        arr = np.array(list(rows), dtype=np.int8)
        arr.setflags(write=False)
        return arr

    @cached_property
    def constraints(self) -> tuple[Constraint, ...]:
        texts = self.condition_texts
        return tuple(c for text in texts for c in parse_condition(text, self.field_names))

    @cached_property
    def condition_texts(self) -> tuple[str, ...]:
        if self.condition is None:
            if any(f.is_conditional for f in self._formulas.values()):
                raise ConditionError("conditional fields need an explicit condition=")
            derived = affine_identities(self.worlds, self.field_names)
            if not derived:
                raise ConditionError("no linear identity holds in every world; declare condition=")
            return tuple(derived)
        return (self.condition,) if isinstance(self.condition, str) else tuple(self.condition)

    # -------------------------------------------------------------------- behaviour
    def resolve(self, known: Mapping[str, bool | None]) -> dict[str, Truth]:
        """Propagate resolutions: ``known`` gives base events or fields; unknown fields stay None.

        A field is resolved when it takes the same value in every world consistent with
        ``known``; conditional fields whose condition is false resolve to None.
        """
        unknown = set(known) - set(self.bases) - set(self.fields)
        if unknown:
            raise KeyError(f"{self.name} has no base event or field named {', '.join(sorted(unknown))}")
        consistent = []
        for world in self._assignments():
            values = {name: f.evaluate(world) for name, f in self._formulas.items()}
            if all((world | values)[k] == v for k, v in known.items() if v is not None):
                consistent.append(values)
        if not consistent:
            raise ValueError(f"resolutions {dict(known)} are impossible for {self.name}")
        out: dict[str, Truth] = {}
        for name in self.fields:
            options = {values[name] for values in consistent}
            out[name] = options.pop() if len(options) == 1 else None
        return out

    def coherent_sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """Forecasts of a coherent forecaster: marginals of random distributions over Ω."""
        lam = rng.dirichlet(np.ones(len(self.worlds)), size=size)
        true = lam @ (self.worlds == TRUE)
        resolves = lam @ (self.worlds != NONE)
        return true / resolves

    def condition_holds(self, probs: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        """Whether S holds (within ``tol``) for each row of ``probs`` (shape ``(N, n_fields)``)."""
        env = {name: probs[:, i] for i, name in enumerate(self.field_names)}
        ok = np.ones(len(probs), dtype=bool)
        for c in self.constraints:
            g, _ = c.residual(env)
            ok &= (np.abs(g) <= tol) if c.equality else (g <= tol)
        return ok

    def _verify_condition(self) -> None:
        sample = self.coherent_sample(256, np.random.default_rng(0))
        extremes = np.where(self.worlds == NONE, 0.5, self.worlds).astype(float)
        bad = ~self.condition_holds(np.vstack([sample, extremes]), tol=1e-9)
        if bad.any():
            raise CheckDeclarationError(
                f"check {self.name}: condition {' and '.join(self.condition_texts)!r} fails for a coherent "
                f"forecast {dict(zip(self.field_names, np.vstack([sample, extremes])[bad][0].round(4), strict=True))}; "
                "it does not follow from the fields' meaning"
            )

    @cached_property
    def template_check(self) -> Check:
        """The check with ``instantiate`` overrides applied: what template-made tuples mean."""
        if not self.instantiate:
            return self
        fields = {name: self.instantiate.get(name, text) for name, text in self.fields.items()}
        return Check(f"{self.name}_TEMPLATE", fields, class_name=self.class_name, condition=self.condition)

    def _verify_instantiation(self) -> None:
        unknown = set(self.instantiate or ()) - set(self.fields)
        if unknown:
            raise CheckDeclarationError(f"check {self.name}: instantiate names unknown field(s) {sorted(unknown)}")
        try:
            template = self.template_check
        except CheckDeclarationError as exc:
            raise CheckDeclarationError(
                f"check {self.name}: instantiate {dict(self.instantiate or {})}: {exc}"
            ) from None
        own = {tuple(row) for row in self.worlds.tolist()}
        extra = [row for row in template.worlds.tolist() if tuple(row) not in own]
        if extra:
            raise CheckDeclarationError(
                f"check {self.name}: instantiate {dict(self.instantiate or {})} allows a world the check does not: "
                f"{dict(zip(self.field_names, extra[0], strict=True))}"
            )

    def declaration(self) -> tuple:
        """What was declared; two checks declared alike are interchangeable."""
        condition = (
            self.condition if self.condition is None or isinstance(self.condition, str) else tuple(self.condition)
        )
        instantiate = tuple(self.instantiate.items()) if self.instantiate else None
        return (
            self.name,
            tuple(self.fields.items()),
            self.class_name,
            self.aliases,
            self.assume,
            condition,
            instantiate,
        )

    def describe_fields(self) -> str:
        return ", ".join(f"{name}={f.symbol()}" for name, f in self._formulas.items())

    def __repr__(self) -> str:
        return f"Check({self.name}: {self.describe_fields()})"


def _encode(value: Truth) -> int:
    return NONE if value is None else (TRUE if value else FALSE)
