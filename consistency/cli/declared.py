"""Options declared once, where their values go: the library's fields become ``cc``'s options.

A library object a command hands its options to (a dataclass, a pydantic model or a function) documents
each field the user may set with ``Annotated[T, Doc("what it means"), Ge(1)]``: annotated-doc's ``Doc``
(a dependency of typer's own) is the help text and ``annotated_types``' bounds are the option's range
(``Gt``/``Lt`` add the open ends that typer's inclusive ``min``/``max`` cannot state). The Python API
reads the same declaration, so a help text or a range is written once. :func:`options_from` adds those
fields to a command's signature and hands the command the built object; :func:`shared_options` does the
same for options written here.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Iterable
from typing import Annotated, Any

import typer
from annotated_doc import Doc
from annotated_types import Ge, Gt, Le, Lt

from .bounds import above

#: An option's flags (``"--rpm"``, ``("--limit", "-n")``, ``"--verify/--no-verify"``), by field name.
Flags = dict[str, str | tuple[str, ...]]


def declared_fields(source: Any) -> dict[str, tuple[Any, Any]]:
    """The fields of ``source`` (a dataclass, pydantic model or function) that carry a ``Doc``: name → its
    ``Annotated`` type and default (``...``: none), in declaration order."""
    hints = typing.get_type_hints(source, include_extras=True)
    if dataclasses.is_dataclass(source):
        defaults = {f.name: _default_of(f) for f in dataclasses.fields(source)}
    elif hasattr(source, "model_fields"):
        defaults = {n: ... if f.is_required() else f.get_default(call_default_factory=True)
                    for n, f in source.model_fields.items()}  # fmt: skip
    else:
        defaults = {p.name: ... if p.default is p.empty else p.default
                    for p in inspect.signature(source).parameters.values()}  # fmt: skip
    return {n: (hints[n], d) for n, d in defaults.items() if any(isinstance(m, Doc) for m in _metadata(hints[n]))}


def as_option(
    annotation: Any, default: Any, flags: str | tuple[str, ...] = (), show_default: bool = True
) -> tuple[Any, Any]:
    """A declared field as a typer option: ``(Annotated[T, typer.Option(...)], default)``; ``show_default=False``
    where the help text says what the default is."""
    base, metadata = typing.get_args(annotation)[0], _metadata(annotation)
    settings: dict[str, Any] = {} if show_default else {"show_default": False}
    low = high = None
    for m in metadata:
        if isinstance(m, Doc):
            settings["help"] = m.documentation
        elif isinstance(m, Ge | Gt):
            settings["min"] = low = m.ge if isinstance(m, Ge) else m.gt
            low = None if isinstance(m, Ge) else low
        elif isinstance(m, Le | Lt):
            settings["max"] = high = m.le if isinstance(m, Le) else m.lt
            high = None if isinstance(m, Le) else high
    if low is not None or high is not None:
        settings["callback"] = above(low, high)
    decls = (flags,) if isinstance(flags, str) else flags
    return Annotated[base, typer.Option(*decls, **settings)], inspect.Parameter.empty if default is ... else default


def option(annotation: Any, *flags: str, show_default: bool = True) -> Any:
    """A declared type as a typer option's annotation (the default stays in the command's signature)."""
    return as_option(annotation, None, flags, show_default)[0]


def options_from(
    source: Any,
    param: str,
    *,
    flags: Flags | None = None,
    skip: Iterable[str] = (),
    names: dict[str, str] | None = None,
    build: Callable[[dict[str, Any]], Any] | None = None,
    hide_default: Iterable[str] = (),
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Append the declared fields of ``source`` (but ``skip``) to a command as options, each parameter named
    as its field (or as ``names`` says, where two sources share a field name); the command gets
    ``build(values)`` (default: ``source(**values)``) as ``param``, the values keyed by field. The fields in
    ``hide_default`` show no default in ``--help`` (their help text tells it)."""
    flags, skipped, names, hidden = flags or {}, set(skip), names or {}, set(hide_default)
    options = {names.get(name, name): as_option(annotation, default, flags.get(name, ()), name not in hidden)
               for name, (annotation, default) in declared_fields(source).items() if name not in skipped}  # fmt: skip
    fields = {names.get(name, name): name for name in declared_fields(source)}
    make = build or (lambda values: source(**values))
    return shared_options(options, param, lambda values: make({fields[k]: v for k, v in values.items()}))


def shared_options(options: dict[str, tuple[Any, Any]], param: str, build: Callable[[dict[str, Any]], Any]):
    """Append ``options`` (name → (annotation, default)) to a command; it gets ``build(values)`` as ``param``."""

    def decorate(func):
        hints = typing.get_type_hints(func, include_extras=True)
        given = [p for p in inspect.signature(func).parameters.values() if p.name != param]
        own = sorted((p.replace(annotation=hints.get(p.name, p.annotation)) for p in given),
                     key=lambda p: p.kind == inspect.Parameter.KEYWORD_ONLY)  # fmt: skip
        added = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
            for name, (annotation, default) in options.items()
        ]

        @functools.wraps(func)
        def wrapper(**kwargs: Any) -> Any:
            values = {name: kwargs.pop(name) for name in options}
            return func(**kwargs, **{param: build(values)})

        params = [*own, *added]
        wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        return wrapper

    return decorate


def _metadata(annotation: Any) -> tuple[Any, ...]:
    return annotation.__metadata__ if typing.get_origin(annotation) is Annotated else ()


def _default_of(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else ...
