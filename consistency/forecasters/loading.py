"""Turning ``--forecaster`` and ``-F key=value`` into a forecaster object.

A spec is a registered name (``basic``, ``cot``...), ``name:model`` (``cot:gpt-4o``), a user's
class (``path/to/file.py::ClassName`` or ``package.module:ClassName``), or else a model spec,
which means the basic forecaster with that model (the bundled ``local`` model: the logprob
forecaster, :data:`BARE_LOCAL`). A bare model name must be a known one (:func:`hosted_model`),
so a typo is refused with a suggestion instead of becoming a model that fails at its first call.
Option values are typed from the constructor's signature.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.util
import inspect
import json
import re
import sys
import typing
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError

from ..errors import InputError
from ..llm.secrets import redact
from ..llm.specs import ModelSpecError, known_models, parse_model_spec
from .base import Forecaster, sync_forecast_problem

_REGISTRY: dict[str, type[Forecaster]] = {}
#: The forecaster a bare ``local`` spec means: asked to write a number, the bundled 135M model writes
#: about 1.0 to everything; its Yes/No next-token distribution varies (``basic:local`` keeps the former).
BARE_LOCAL = "logprob"


class ForecasterSpecError(InputError):
    """A ``--forecaster`` or ``-F`` value that cannot be turned into a forecaster (keys in it are scrubbed)."""

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))


def register_forecaster(cls: type[Forecaster], name: str | None = None) -> type[Forecaster]:
    """Make ``cls`` selectable by name (also usable as a class decorator)."""
    key = (name or cls.name or cls.__name__).lower()
    _REGISTRY[key] = cls
    return cls


def forecaster_names() -> list[str]:
    return sorted(_REGISTRY)


def forecaster_class(spec: str) -> tuple[type[Forecaster], dict[str, Any]]:
    """The class a spec names, and the options the spec itself implies (e.g. the model)."""
    text = spec.strip()
    bot = _bot_spec(text)
    if bot is not None:
        return bot
    if "::" in text and text.split("::", 1)[0].endswith(".py") and text.split("::", 1)[1].strip():
        path, _, name = text.partition("::")
        return _from_file(Path(path), name.strip()), {}
    name, sep, rest = text.partition(":")
    if sep and name.lower() in _REGISTRY and rest:
        return _REGISTRY[name.lower()], {"model": rest}
    if text.lower() in _REGISTRY:
        return _REGISTRY[text.lower()], {}
    if text.rstrip(":").endswith(".py"):  # a file without its class (file.py, file.py::)
        raise ForecasterSpecError(_file_without_class(Path(text.rstrip(":"))))
    if sep and rest.isidentifier() and all(part.isidentifier() for part in name.split(".")):
        return _from_module(name, rest), {}
    if any(c.isspace() for c in text):
        raise ForecasterSpecError(f"unknown forecaster {spec!r} (known: {', '.join(forecaster_names())})")
    model = hosted_model(text)
    return _REGISTRY[BARE_LOCAL if parse_model_spec(model).provider == "local" else "basic"], {"model": model}


def hosted_model(text: str, within: str | None = None) -> str:
    """``text`` if it names a model we can call, else a :class:`ForecasterSpecError` with a suggestion.

    A bare name is a model only when it is a known one (the price table, including ``CC_PRICES``) or
    ``local``; anything else must say where it is served (``openai/NAME``, ``openrouter/VENDOR/NAME``,
    ``URL::NAME``). So ``lcoal`` is refused ("did you mean 'local'?") before any run directory exists,
    instead of becoming an OpenAI model that fails at its first call. ``within``: the spec it came from.
    """
    where = f" in {within!r}" if within and within != text else ""
    try:
        spec = parse_model_spec(text)
    except ModelSpecError as exc:
        raise ForecasterSpecError(
            f"{text!r}{where} is neither a forecaster ({', '.join(forecaster_names())}), a class "
            f"(file.py::Class or package.module:Class) nor a model spec: {exc}"
        ) from None
    bare = spec.provider == "openai" and not text.strip().startswith("openai/")
    if not bare or spec.model in known_models():
        return text
    models = known_models()
    shown = [m if "/" not in m else f"openrouter/{m}" for m in models]
    pool = {n.lower(): n for n in [*forecaster_names(), *shown, *models]}
    close = difflib.get_close_matches(spec.model.lower(), list(pool), n=1, cutoff=0.6)
    hint = f"; did you mean {pool[close[0]]!r}?" if close else "."
    what = "model" if where else "forecaster or model"
    listed = [m for m in shown if "/" not in m and not re.search(r"-\d{4}-\d\d-\d\d$", m)]
    raise ForecasterSpecError(
        f"unknown {what} {spec.model!r}{where}{hint} Forecasters: {', '.join(forecaster_names())}; known models: "
        f"{', '.join(listed)}, ... To use a model we do not list, name its provider: openai/{spec.model}, "
        f"openrouter/VENDOR/{spec.model} or http://HOST/v1::{spec.model}"
    )


#: Spec prefixes whose classes come from elsewhere (``ft:`` → forecasting-tools bots, see ``.bots``).
_PREFIXES: dict[str, Callable[[str], type[Forecaster]]] = {}
#: Makers of forecasters from objects that are not one (a forecasting-tools bot instance); None: not theirs.
_ADAPTERS: list[Callable[[Any], Forecaster | None]] = []


def register_prefix(
    prefix: str, classes: Callable[[str], type[Forecaster]], adapt: Callable[[Any], Forecaster | None] | None = None
) -> None:
    """Let ``PREFIX:rest`` specs name the class ``classes(rest)`` (``adapt`` wraps foreign objects)."""
    _PREFIXES[prefix.lower()] = classes
    if adapt is not None:
        _ADAPTERS.append(adapt)


def _bot_spec(text: str) -> tuple[type[Forecaster], dict[str, Any]] | None:
    """A registered prefix's spec (``ft:...``), alone or as a wrapper's base (``arbitrage:ft:...``)."""
    name, sep, rest = text.partition(":")
    if sep and name.lower() in _PREFIXES:
        return _PREFIXES[name.lower()](rest), {}
    inner = rest.partition(":")[0].lower()
    if sep and name.lower() in _REGISTRY and inner in _PREFIXES and ":" in rest:
        return _REGISTRY[name.lower()], {"model": rest}
    return None


def load_forecaster(spec: str | Forecaster, options: Mapping[str, str] | Iterable[str] | None = None) -> Forecaster:
    """Build the forecaster ``spec`` names; ``options`` as a mapping or ``key=value`` strings.
    A forecasting-tools bot instance is taken too (as :class:`~.bots.BotForecaster`)."""
    if isinstance(spec, Forecaster):
        _check_async(type(spec))
        return spec
    if not isinstance(spec, str):
        for adapt in _ADAPTERS:
            adapted = adapt(spec)
            if adapted is not None:
                return adapted
    cls, implied = forecaster_class(spec)
    _check_async(cls)
    raw = dict(implied)
    raw.update(parse_options(options))
    _check_model_option(cls, raw, spec)
    kwargs = typed_options(cls, raw)
    try:
        return cls(**kwargs)
    except ForecasterSpecError:
        raise
    except Exception as exc:
        raise ForecasterSpecError(f"cannot create forecaster {spec!r}: {exc}") from None


def _check_async(cls: type[Forecaster]) -> None:
    """A ``def forecast`` is refused here, before any run directory, not at each question of a run."""
    problem = sync_forecast_problem(cls)
    if problem is not None:
        raise ForecasterSpecError(problem)


def load_recorded(spec: str, options: Mapping[str, Any] | None, recorded_class: str | None) -> Forecaster:
    """The forecaster a run recorded, to resume it: ``spec`` as :func:`load_forecaster` reads it today, unless a
    bare model spec now means another built-in than the run used (``local`` meant ``basic`` before it meant
    ``logprob``): then the run's own class, with that model, so that a resume never changes what it measures."""
    bare = ":" not in spec.replace("://", "").split("::")[0]  # not name:model, ft:..., a module:Class
    if bare and recorded_class is not None:
        for name, cls in _REGISTRY.items():
            if cls.__name__ == recorded_class and cls is not forecaster_class(spec)[0]:
                return load_forecaster(f"{name}:{spec}", options)
    return load_forecaster(spec, options)


def _check_model_option(cls: type[Forecaster], raw: dict[str, Any], spec: str) -> None:
    """A ``model`` option (``cot:NAME``, ``-F model=NAME``) is held to :func:`hosted_model`'s rule; a class
    with a ``base`` option (``arbitrage:SPEC``) reads it as a forecaster spec, checked when that is loaded."""
    params = inspect.signature(cls.__init__).parameters
    model = raw.get("model")
    if isinstance(model, str) and "model" in params and "base" not in params:
        hosted_model(model, within=spec if spec != model else None)


def parse_options(options: Mapping[str, str] | Iterable[str] | None) -> dict[str, str]:
    if options is None:
        return {}
    if isinstance(options, Mapping):
        return {str(k): v for k, v in options.items()}
    out = {}
    for item in options:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ForecasterSpecError(f"forecaster option {item!r} is not key=value")
        out[key.strip()] = value
    return out


def typed_options(cls: type[Forecaster], raw: Mapping[str, Any]) -> dict[str, Any]:
    """Convert string option values to the types the constructor declares."""
    signature = inspect.signature(cls.__init__)
    try:
        hints = typing.get_type_hints(cls.__init__)
    except Exception:
        hints = {}
    params = {n: p for n, p in signature.parameters.items() if n != "self"}
    open_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
    out: dict[str, Any] = {}
    for key, value in raw.items():
        param = params.get(key)
        if param is None or param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
            if not open_kwargs:
                names = ", ".join(n for n, p in params.items() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL))
                raise ForecasterSpecError(f"{cls.__name__} has no option {key!r}; its options: {names or 'none'}")
            out[key] = _literal(value) if isinstance(value, str) else value
            continue
        out[key] = _convert(cls, key, value, hints.get(key, Any))
    missing = [
        n
        for n, p in params.items()
        if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and n not in out
    ]
    if missing:
        raise ForecasterSpecError(f"{cls.__name__} needs option(s) {', '.join(missing)} (pass -F {missing[0]}=...)")
    return out


def _convert(cls: type, key: str, value: Any, hint: Any) -> Any:
    if not isinstance(value, str) or hint is Any or hint is str:
        return value
    origin = typing.get_origin(hint)
    if origin in (list, tuple, set, frozenset) or str(origin).startswith("<class 'collections.abc."):
        text = value.strip()
        value = (
            json.loads(text) if text.startswith("[") else [v.strip() for v in text.split(";" if ";" in text else ",")]
        )
    try:
        adapter = TypeAdapter(hint, config=ConfigDict(arbitrary_types_allowed=True))
        return adapter.validate_python(value) if not isinstance(value, str) else adapter.validate_strings(value)
    except ValidationError as exc:
        raise ForecasterSpecError(f"option {key}={value!r} for {cls.__name__}: {exc.errors()[0]['msg']}") from None
    except Exception:
        return value


def _literal(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def _check_class(obj: Any, where: str) -> type[Forecaster]:
    if not (isinstance(obj, type) and issubclass(obj, Forecaster)):
        raise ForecasterSpecError(f"{where} is not a Forecaster subclass")
    return obj


def _file_without_class(path: Path) -> str:
    """What to say for ``-f file.py``: a class must be named, and which ones the file defines."""
    if not path.is_file():
        return f"{path}: no such file (a forecaster class in a file is named {path}::ClassName)"
    found = forecaster_classes_in(path)
    listed = f"; it defines {', '.join(found)}" if found else "; it defines no class that looks like a Forecaster"
    example = f"{path}::{found[0] if found else 'ClassName'}"
    return f"{path} is a Python file: name the forecaster class in it, {example}{listed}"


def forecaster_classes_in(path: Path) -> list[str]:
    """The classes of a Python file that look like forecasters (a base named ``...Forecaster``, or an
    ``async def forecast``), read with :mod:`ast`: the file is not run just to word an error."""
    import ast

    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return []

    def base_name(node: ast.expr) -> str:
        return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")

    found = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or node.name.startswith("_"):
            continue
        derived = any(base_name(b).endswith("Forecaster") for b in node.bases)
        methods = (f.name for f in node.body if isinstance(f, ast.AsyncFunctionDef | ast.FunctionDef))
        forecasts = "forecast" in methods
        if derived or forecasts:
            found.append(node.name)
    return found


def _from_file(path: Path, name: str) -> type[Forecaster]:
    if not path.is_file():
        raise ForecasterSpecError(f"{path}: no such file")
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    module_name = f"consistency_user_{path.stem}_{digest}"
    module = sys.modules.get(module_name)
    if module is None:
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise ForecasterSpecError(f"{path}: cannot be imported as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[module_name]
            raise ForecasterSpecError(f"{path}: importing it failed: {type(exc).__name__}: {exc}") from None
    if not hasattr(module, name):
        found = forecaster_classes_in(path)
        raise ForecasterSpecError(
            f"{path} defines no {name!r}" + (f"; its forecaster classes: {', '.join(found)}" if found else "")
        )
    return _check_class(getattr(module, name), f"{path}::{name}")


def _from_module(module_name: str, name: str) -> type[Forecaster]:
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ForecasterSpecError(f"cannot import {module_name}: {exc}") from None
    if not hasattr(module, name):
        raise ForecasterSpecError(f"module {module_name} defines no {name!r}")
    return _check_class(getattr(module, name), f"{module_name}:{name}")
