"""What a consistency check is: a small declaration from which everything else is derived.

A check names its fields and what each one means in terms of a few base events (a
formula), optionally an assumption relating the base events (``P implies Q``) and the
consistency condition S. From that we derive its possible worlds Ω, the question type of each
field, resolution propagation, the frequentist metric and (in :mod:`consistency.metrics`) the
exact arbitrage metric.

A base may be categorical (``outcomes={"X": 4}``: X takes one of 4 outcomes in each world). A field that is such a
base is a categorical field: its forecast is a distribution over the outcomes (a multiple-choice question's options
as the tuple groups them, or a numeric question's bins), and its row in :attr:`Check.worlds` holds the outcome.
Forecast arrays then have one column per binary field and one per outcome of a categorical field
(:attr:`Check.columns`, e.g. ``X[0]`` … ``X[3]``), and the condition is written over those columns.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..errors import InputError
from .condition import ConditionError, Constraint, SameDistribution, affine_identities, parse_condition
from .logic import Compare, Formula, FormulaSyntaxError, Truth, Value, Var, parse, variables

BINARY = "binary"
CONDITIONAL = "conditional_binary"
MULTIPLE_CHOICE = "multiple_choice"
NUMERIC = "numeric"
#: Question types a categorical field may hold (a date question fills a numeric slot).
CATEGORICAL_KINDS = (MULTIPLE_CHOICE, NUMERIC)
#: Above this many forecast columns, a check with categorical fields must declare its condition (deriving it
#: takes exact rational arithmetic over every column).
DERIVE_LIMIT = 40

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
    becomes ``P or Q``); the override must only produce worlds of the check. ``outcomes`` declares categorical
    bases and their numbers of outcomes, ``kinds`` the question type of the fields that are such bases
    (``multiple_choice``, the default, or ``numeric``: ordered outcomes, the bins of a numeric question).
    """

    name: str
    fields: Mapping[str, str]
    class_name: str = ""
    aliases: tuple[str, ...] = ()
    assume: str | None = None
    condition: str | Sequence[str] | None = None
    description: str = ""
    instantiate: Mapping[str, str] | None = None
    outcomes: Mapping[str, int] | None = None
    kinds: Mapping[str, str] | None = None
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
        self._verify_categorical()
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
        kinds = dict(self.kinds or {})
        out = {}
        for name, f in self._formulas.items():
            if name in self.categorical:
                out[name] = kinds.get(f.name, MULTIPLE_CHOICE)  # type: ignore[attr-defined]
            else:
                out[name] = CONDITIONAL if f.is_conditional else BINARY
        return out

    # ------------------------------------------------------------- categorical fields and columns
    @cached_property
    def categorical(self) -> dict[str, int]:
        """The categorical fields and their numbers of outcomes (empty for a check of yes/no questions)."""
        outcomes = dict(self.outcomes or {})
        return {n: outcomes[f.name] for n, f in self._formulas.items() if isinstance(f, Var) and f.name in outcomes}

    @cached_property
    def columns(self) -> tuple[str, ...]:
        """Forecast columns in order: a binary field's name, or ``X[0]`` … ``X[m-1]`` for a categorical field."""
        out: list[str] = []
        for name in self.fields:
            m = self.categorical.get(name)
            out.extend([name] if m is None else (f"{name}[{o}]" for o in range(m)))
        return tuple(out)

    @property
    def n_columns(self) -> int:
        return len(self.columns)

    @cached_property
    def column_slices(self) -> dict[str, slice]:
        """Each field's columns in a forecast array."""
        out, start = {}, 0
        for name in self.fields:
            width = self.categorical.get(name, 1)
            out[name] = slice(start, start + width)
            start += width
        return out

    @cached_property
    def expanded_worlds(self) -> np.ndarray:
        """Ω with each field as its columns: 1/0 (-1 unresolved) for a binary field, one-hot for a categorical one."""
        cols = []
        for i, name in enumerate(self.fields):
            m = self.categorical.get(name)
            w = self.worlds[:, i].astype(np.int16)
            cols.append(w[:, None] if m is None else (w[:, None] == np.arange(m)).astype(np.int16))
        arr = np.concatenate(cols, axis=1)
        arr.setflags(write=False)
        return arr

    def _assignments(self) -> list[dict[str, Value]]:
        outcomes = dict(self.outcomes or {})
        choices = [range(outcomes[b]) if b in outcomes else (True, False) for b in self.bases]
        out = []
        for values in itertools.product(*choices):
            world = dict(zip(self.bases, values, strict=True))
            if self._assumption is None or self._assumption.evaluate(world):
                out.append(world)
        return out

    @cached_property
    def worlds(self) -> np.ndarray:
        """Ω: one row per possible joint resolution of the fields (1 true, 0 false, -1 none; a categorical
        field's outcome 0 … m-1)."""
        rows: dict[tuple[int, ...], None] = {}
        for world in self._assignments():
            row = tuple(_encode(f.evaluate(world)) for f in self._formulas.values())
            rows.setdefault(row, None)
        wide = max(self.categorical.values(), default=0) > 127
        arr = np.array(list(rows), dtype=np.int16 if wide else np.int8)
        arr.setflags(write=False)
        return arr

    @cached_property
    def constraints(self) -> tuple[Constraint | SameDistribution, ...]:
        texts = self.condition_texts
        ordered = {n for n, kind in self.question_types.items() if kind == NUMERIC}
        return tuple(c for text in texts for c in parse_condition(text, self.field_names, self.categorical, ordered))

    @cached_property
    def condition_texts(self) -> tuple[str, ...]:
        if self.condition is None:
            if any(f.is_conditional for f in self._formulas.values()):
                raise ConditionError("conditional fields need an explicit condition=")
            if self.n_columns > DERIVE_LIMIT:
                raise ConditionError(
                    f"{self.n_columns} forecast columns are too many to derive the condition; declare condition="
                )
            # Each categorical field's last column is 1 minus the others: dropped, so that a field's own
            # normalisation (its outcomes sum to 1, which every forecast of it satisfies) is not a condition.
            keep = [i for i, c in enumerate(self.columns) if not _last_outcome(c, self.categorical)]
            worlds = self.expanded_worlds[:, keep]
            derived = affine_identities(worlds, [self.columns[i] for i in keep])
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
        """Forecasts of a coherent forecaster: marginals of random distributions over Ω (one column per
        :attr:`columns` entry)."""
        lam = rng.dirichlet(np.ones(len(self.worlds)), size=size)
        if self.categorical:  # no conditional fields: every field resolves
            return lam @ self.expanded_worlds
        true = lam @ (self.worlds == TRUE)
        resolves = lam @ (self.worlds != NONE)
        return true / resolves

    def condition_holds(self, probs: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        """Whether S holds (within ``tol``) for each row of ``probs`` (shape ``(N, n_columns)``)."""
        env = {name: probs[:, i] for i, name in enumerate(self.columns)}
        ok = np.ones(len(probs), dtype=bool)
        for c in self.constraints:
            g, _ = c.residual(env)
            ok &= (np.abs(g) <= tol) if c.equality else (g <= tol)
        return ok

    def _verify_condition(self) -> None:
        sample = self.coherent_sample(256, np.random.default_rng(0))
        extremes = np.where(self.expanded_worlds == NONE, 0.5, self.expanded_worlds).astype(float)
        bad = ~self.condition_holds(np.vstack([sample, extremes]), tol=1e-9)
        if bad.any():
            example = dict(zip(self.columns, np.vstack([sample, extremes])[bad][0].round(4), strict=True))
            raise CheckDeclarationError(
                f"check {self.name}: condition {' and '.join(self.condition_texts)!r} fails for a coherent "
                f"forecast {example}; it does not follow from the fields' meaning"
            )

    def _verify_categorical(self) -> None:
        """Categorical bases appear as fields of their own or inside comparisons, and never with conditions."""
        outcomes = dict(self.outcomes or {})
        for base, m in outcomes.items():
            if base not in self.bases:
                raise CheckDeclarationError(f"check {self.name}: outcomes names {base!r}, which no field mentions")
            if not isinstance(m, int) or isinstance(m, bool) or m < 2:
                raise CheckDeclarationError(f"check {self.name}: {base} needs at least 2 outcomes, got {m!r}")
        for base, kind in (self.kinds or {}).items():
            if base not in outcomes or kind not in CATEGORICAL_KINDS:
                raise CheckDeclarationError(
                    f"check {self.name}: kinds gives {base!r} = {kind!r}; kinds name categorical bases and are one "
                    f"of {', '.join(CATEGORICAL_KINDS)}"
                )
        if not outcomes:
            return
        for name, formula in self._formulas.items():
            if formula.is_conditional:
                raise CheckDeclarationError(
                    f"check {self.name}: field {name} is conditional; a check with categorical bases has none"
                )
            if isinstance(formula, Var):
                continue
            for node in _nodes(formula):
                if isinstance(node, Var) and node.name in outcomes:
                    raise CheckDeclarationError(
                        f"check {self.name}: field {name} uses categorical {node.name} as an event; "
                        f"compare it, e.g. {node.name} == 0"
                    )
                if isinstance(node, Compare):
                    m = outcomes.get(node.name)
                    if m is None:
                        raise CheckDeclarationError(
                            f"check {self.name}: field {name} compares {node.name}, which outcomes= does not declare"
                        )
                    if not 0 <= node.value < m:
                        raise CheckDeclarationError(
                            f"check {self.name}: {node.name} has outcomes 0 to {m - 1}, field {name} names {node.value}"
                        )

    @cached_property
    def template_check(self) -> Check:
        """The check with ``instantiate`` overrides applied: what template-made tuples mean."""
        if not self.instantiate:
            return self
        fields = {name: self.instantiate.get(name, text) for name, text in self.fields.items()}
        return Check(
            f"{self.name}_TEMPLATE",
            fields,
            class_name=self.class_name,
            condition=self.condition,
            outcomes=self.outcomes,
            kinds=self.kinds,
        )

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
            tuple((self.outcomes or {}).items()),
            tuple((self.kinds or {}).items()),
        )

    def describe_fields(self) -> str:
        return ", ".join(f"{name}={f.symbol()}" for name, f in self._formulas.items())

    def __repr__(self) -> str:
        return f"Check({self.name}: {self.describe_fields()})"


def _encode(value: Truth | int) -> int:
    if value is None:
        return NONE
    if isinstance(value, bool):
        return TRUE if value else FALSE
    return int(value)  # a categorical field's outcome


def _last_outcome(column: str, categorical: Mapping[str, int]) -> bool:
    name, _, rest = column.partition("[")
    return bool(rest) and int(rest[:-1]) == categorical[name] - 1


def _nodes(formula: Formula):
    yield formula
    for child in vars(formula).values():
        for item in child if isinstance(child, tuple) else (child,):
            if isinstance(item, Formula):
                yield from _nodes(item)
