"""forecasting-tools bots (Metaculus's ``ForecastBot`` subclasses) as forecasters: ``--forecaster ft:...``.

``ft:bot.py::MyBot``, ``ft:package.module:MyBot`` or ``ft:TemplateBot`` (any bot the library exports)
names a bot class; ``-F`` options go to its constructor. Each of our questions becomes the library's
question of its type (``BinaryQuestion``, ``MultipleChoiceQuestion``, ``NumericQuestion``, ``DateQuestion``)
and the bot runs its own research and forecast method for that type with its own settings; it never
publishes. Its ``PredictedOptionList`` becomes a :class:`~consistency.models.ChoiceForecast` (options matched
by name) and its ``NumericDistribution`` a :class:`~consistency.models.NumericForecast`: the 201-point CDF the
library would post to Metaculus (``get_cdf()``, which is on our grid).

The library changes the process when imported (it patches asyncio with nest_asyncio, keeps class-level
semaphores, sets litellm options globally) and takes seconds to import, so it is
imported here once, lazily, only when a bot is used (after a bot file was checked), with litellm's
bundled cost map instead of a network fetch. Each bot call runs on a thread and event loop of its
own (:mod:`.bot_threads`): a bot that blocks its loop costs only its own question.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import inspect
import json
import logging
import os
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from .. import distributions as dist
from ..extras import install_hint
from ..llm.secrets import redact
from ..models import AnyForecast, Forecast, ForecastingQuestion, NumericForecast, parse_forecast
from .answers import PERCENTILES, choice_forecast
from .base import Forecaster, ForecastError, note_call
from .bot_threads import THREADS, logging_worker_per_thread, share_loop_primitives
from .loading import ForecasterSpecError

log = logging.getLogger(__name__)

EXTRA = "bots"
INSTALL = install_hint(EXTRA)
#: Bot settings that do not change an answer (left out of the cache key), and object addresses in reprs.
_NOT_ANSWERS = frozenset(
    {"metaculus_client", "publish_reports_to_metaculus", "folder_to_save_reports_to"}
    | {"skip_previously_forecasted_questions"}
)
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
#: How much of a bot's reasoning and research a forecast's metadata keeps.
TRIM = 2000


_LIBRARY: Any = None


def forecasting_tools() -> Any:
    """The library, imported once, on first use (with litellm's bundled cost map, no network fetch)."""
    global _LIBRARY
    if _LIBRARY is None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        _quiet("forecasting_tools", "LiteLLM", "litellm")
        try:
            import forecasting_tools as ft
        except ImportError as exc:
            raise ForecasterSpecError(
                f"ft: forecasters need forecasting-tools, which is not installed ({exc}); install the "
                f"{EXTRA!r} extra: {INSTALL}"
            ) from None
        logging_worker_per_thread()  # bot calls run on threads of their own (BotThreads)
        _LIBRARY = ft
    return _LIBRARY


def _quiet(*names: str) -> None:
    """The library warns at import and per call about things a consistency run does not use (no
    Metaculus token, models without cost tracking); keep its loggers to errors unless the user asked
    for the library's logs (``cc -V``) or configured those loggers."""
    if logging.getLogger().getEffectiveLevel() <= logging.INFO:
        return
    for name in names:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.ERROR)


def is_bot(obj: Any) -> bool:
    """Whether ``obj`` is a forecasting-tools bot (instance), without importing the library."""
    return any(c.__name__ == "ForecastBot" and c.__module__.startswith("forecasting_tools") for c in type(obj).__mro__)


def adapt(obj: Any) -> BotForecaster | None:
    """A bot instance as a forecaster (what ``evaluate(MyBot())`` runs); None for anything else."""
    return BotForecaster(obj) if is_bot(obj) else None


def bot_class(spec: str) -> type:
    """The ``ForecastBot`` subclass an ``ft:`` spec (without the prefix) names.

    A bot file is checked (it exists, it defines the name) before the library is imported: that
    import takes seconds, and a mistyped spec should not wait for it."""
    text = spec.strip()
    if "::" in text:
        path, _, name = text.partition("::")
        check_bot_file(Path(path), name)
        forecasting_tools()
        module = _import_file(Path(path))
        where = path
    elif ":" in text:
        module_name, _, name = text.partition(":")
        forecasting_tools()
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ForecasterSpecError(f"cannot import {module_name}: {exc}") from None
        where = module_name
    else:
        module, name, where = forecasting_tools(), text, "forecasting-tools"
    ft = forecasting_tools()
    obj = getattr(module, name, None)
    if not (isinstance(obj, type) and issubclass(obj, ft.ForecastBot)):
        known = ", ".join(library_bots(ft))
        what = f"{where} has no bot {name!r}" if obj is None else f"{name!r} is not a ForecastBot subclass"
        hint = f" (its bots: {known})" if module is ft else ""
        raise ForecasterSpecError(f"ft:{spec}: {what}{hint}")
    if inspect.isabstract(obj):
        missing = ", ".join(sorted(obj.__abstractmethods__))
        raise ForecasterSpecError(f"ft:{spec}: {name} is abstract; it must define {missing}")
    return obj


def check_bot_file(path: Path, name: str) -> None:
    """Refuse a bot file that does not exist, is not Python, or defines no ``name`` at its top level
    (read, not run: no import of the library or of the bot yet)."""
    if not path.is_file():
        raise ForecasterSpecError(f"{path}: no such file")
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError) as exc:
        raise ForecasterSpecError(f"{path}: not valid Python ({exc})") from None
    except OSError as exc:
        raise ForecasterSpecError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    defined: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            defined.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    return  # a star import may bring it: the import will tell
                defined.add(alias.asname or alias.name.split(".")[0])
        else:  # assignments, and definitions under if/try at the top level
            defined |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            defined |= {
                n.name for n in ast.walk(node) if isinstance(n, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            }
    if name not in defined:
        classes = sorted(n.name for n in tree.body if isinstance(n, ast.ClassDef))
        hint = f" (its classes: {', '.join(classes)})" if classes else ""
        raise ForecasterSpecError(f"{path} has no bot {name!r}{hint}")


def _import_file(path: Path) -> Any:
    """A bot's script as a module (once per process; its own name, so two scripts never clash).

    Its directory goes first on ``sys.path``, as Python does when it runs a script: a bot imports the
    modules beside it."""
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    name = f"consistency_bot_{path.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ForecasterSpecError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise ForecasterSpecError(f"{path}: importing it failed: {type(exc).__name__}: {exc}") from None
    return module


def library_bots(ft: Any) -> list[str]:
    """The ready-made bots the library exports (its lazy exports of optional parts are not touched)."""
    out = []
    for name in sorted(n for n in dir(ft) if n.endswith("Bot")):
        try:
            obj = getattr(ft, name)
        except Exception:
            continue
        if isinstance(obj, type) and issubclass(obj, ft.ForecastBot) and not inspect.isabstract(obj):
            out.append(name)
    return out


def bot_forecaster_class(spec: str) -> type[BotForecaster]:
    """A forecaster class for the bot ``spec`` names, whose options are the bot's constructor options."""
    cls = bot_class(spec)
    return type(f"ft_{cls.__name__}", (_SpecBot,), {"bot_class": cls, "name": f"ft_{cls.__name__}"})


class BotForecaster(Forecaster):
    """A forecasting-tools bot as a forecaster: ``BotForecaster(MyBot(llms=...))`` or ``BotForecaster(MyBot)``.

    The bot's prediction is the forecast (a probability, an option list or a distribution, by the question's
    type); its reasoning and research (trimmed) go in the metadata.
    A question the bot fails on (it raised, or too few of its predictions succeeded) is a failed item
    with the bot's own exception as the reason. Forecasts are kept in the response cache, keyed by the
    bot's code, configuration and the question, so an unchanged bot is not asked again.
    """

    name = "ft"

    def __init__(self, bot: Any, **options: Any) -> None:
        ft = forecasting_tools()
        if isinstance(bot, type):
            bot = make_bot(bot, options)
        elif options:
            raise ForecasterSpecError("options are for a bot class; pass them to the bot's constructor instead")
        if not isinstance(bot, ft.ForecastBot):
            raise ForecasterSpecError(f"{type(bot).__name__} is not a forecasting-tools ForecastBot")
        bot.publish_reports_to_metaculus = False  # never, whatever the bot was built with
        share_loop_primitives(bot)  # its questions run on threads of their own (BotThreads)
        self.bot = bot

    @property
    def label(self) -> str:
        return f"ft_{type(self.bot).__name__}"

    @property
    def spec(self) -> str:
        """How ``--forecaster`` names this bot (what a resume rebuilds it from)."""
        cls = type(self.bot)
        return f"ft:{cls.__module__}:{cls.__qualname__}"

    def config(self) -> dict[str, Any]:
        """The bot's constructor options as given (what rebuilds it on resume)."""
        return {k: v for k, v in super().config().items() if k != "bot"}

    def describe(self) -> dict[str, Any]:
        cls = type(self.bot)
        out = super().describe() | {"bot": f"{cls.__module__}:{cls.__qualname__}"}
        try:
            # the library leaves credentials out of its LLMs' dicts; a key anywhere else is scrubbed here
            out["bot_config"] = json.loads(redact(json.dumps(self.bot.get_config(), default=str)))
        except Exception as exc:  # a bot's config is informative only
            out["bot_config"] = f"unavailable ({type(exc).__name__})"
        return out

    async def forecast(self, question: ForecastingQuestion) -> AnyForecast:
        asked = library_question(question)
        cache, key = self._cache(), self._key(asked)
        hit = cache.get(key) if cache is not None else None
        if hit is not None:
            note_call(_call(cache_hit=True))
            return parse_forecast(question, hit["forecast"])
        try:
            report = await THREADS.run(self.bot.forecast_question(asked, return_exceptions=False))
        except Exception as exc:
            raise _root_cause(exc) from exc
        forecast = report_forecast(question, report)
        note_call(_call(cost=report.price_estimate or 0.0))
        if cache is not None:
            cache.put(key, self.label, {"forecast": forecast.model_dump(mode="json")})
        return forecast

    def _cache(self) -> Any:
        llm = getattr(self, "llm", None)
        return getattr(llm, "cache", None)

    def _key(self, asked: Any) -> str:
        cls = type(self.bot)
        try:
            config = {k: v for k, v in self.bot.get_config().items() if k not in _NOT_ANSWERS}
        except Exception:
            config = None
        ft = forecasting_tools()
        payload = [
            "ft-bot",
            getattr(ft, "__version__", None) or _version("forecasting-tools"),
            f"{cls.__module__}:{cls.__qualname__}",
            code_digest(cls),
            config,
            asked.model_dump(mode="json", exclude={"date_accessed"}),
        ]
        text = _ADDRESS.sub("", json.dumps(payload, sort_keys=True, default=str))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _SpecBot(BotForecaster):
    """What ``ft:SPEC`` loads: the bot class is fixed, ``-F`` options are its constructor's."""

    bot_class: type

    def __init__(self, **options: Any) -> None:
        super().__init__(type(self).bot_class, **options)


def make_bot(cls: type, options: dict[str, Any]) -> Any:
    """Build the bot with ``options`` checked against its constructor (``llms`` entries given as
    dicts become the library's ``GeneralLlm``); publishing to Metaculus is refused."""
    ft = forecasting_tools()
    params = {n: p for n, p in inspect.signature(cls.__init__).parameters.items() if n != "self"}
    open_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
    for key in options:
        if key not in params and not open_kwargs:
            names = ", ".join(n for n, p in params.items() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL))
            raise ForecasterSpecError(f"{cls.__name__} has no option {key!r}; its options: {names}")
    if options.get("publish_reports_to_metaculus"):
        raise ForecasterSpecError("bots are evaluated, never published: drop publish_reports_to_metaculus")
    kwargs = dict(options)
    if isinstance(kwargs.get("llms"), dict):
        kwargs["llms"] = {
            purpose: ft.GeneralLlm(**llm) if isinstance(llm, dict) else llm for purpose, llm in kwargs["llms"].items()
        }
    kwargs["publish_reports_to_metaculus"] = False
    if "publish_reports_to_metaculus" not in params and not open_kwargs:
        kwargs.pop("publish_reports_to_metaculus")
    try:
        return cls(**kwargs)
    except Exception as exc:
        raise ForecasterSpecError(f"cannot create {cls.__name__}: {type(exc).__name__}: {exc}") from None


def library_question(question: ForecastingQuestion) -> Any:
    """Our question as the library's question of its type: title, resolution criteria, fine print, background,
    dates and URL where we have them, our id in ``custom_metadata``; the options of a multiple-choice question;
    the bounds (open or closed), unit and scale of a numeric or date one (a log scale as the library's
    ``zero_point``, 0 for a plain one; dates as datetimes)."""
    ft = forecasting_tools()
    meta = question.metadata or {}
    extra = question.model_extra or {}

    def text(*names: str) -> str | None:
        for name in names:
            value = extra.get(name, meta.get(name))
            if isinstance(value, str) and value.strip():
                return value
        return None

    common: dict[str, Any] = {
        "question_text": question.title,
        "resolution_criteria": question.body or None,
        "fine_print": text("fine_print"),
        "background_info": text("background_info", "background"),
        "page_url": question.url,
        "scheduled_resolution_time": question.resolution_date,
        "open_time": question.created_date,
        "published_time": question.created_date,
        "custom_metadata": {"consistency_question_id": question.id, "data_source": question.data_source},
    }
    kind = question.question_type
    if kind == "multiple_choice":
        return ft.MultipleChoiceQuestion(options=list(question.options or []), **common)
    r = question.range
    if r is None:
        return ft.BinaryQuestion(**common)
    bounds: dict[str, Any] = {
        "open_lower_bound": r.open_lower,
        "open_upper_bound": r.open_upper,
        "zero_point": (r.zero_point or 0.0) if r.scale == "log" else None,
        "cdf_size": dist.GRID_POINTS,
    }
    if kind == "date":
        at = {"lower_bound": datetime.fromtimestamp(r.lower, UTC), "upper_bound": datetime.fromtimestamp(r.upper, UTC)}
        return ft.DateQuestion(**at, **bounds, **common)
    return ft.NumericQuestion(lower_bound=r.lower, upper_bound=r.upper, unit_of_measure=r.unit, **bounds, **common)


def report_forecast(question: ForecastingQuestion, report: Any) -> AnyForecast:
    """The bot's report as the forecast ``question`` takes; a report of another kind, or a prediction that does
    not fit the question (other option names, a CDF of another size), is a failed forecast saying so."""
    ft = forecasting_tools()
    metadata = _metadata(report)
    kind = question.question_type
    if kind == "multiple_choice":
        _expect(report, ft.MultipleChoiceReport)
        stated = {o.option_name: float(o.probability) for o in report.prediction.predicted_options}
        options = list(question.options or [])
        if set(stated) != set(options):
            raise ForecastError(
                f"the bot's options ({', '.join(map(repr, stated))}) are not the question's "
                f"({', '.join(map(repr, options))})"
            )
        return choice_forecast(question, [stated[o] for o in options], metadata)
    if question.range is not None:
        _expect(report, ft.NumericReport)
        cdf = [float(p.percentile) for p in report.prediction.get_cdf()]
        if len(cdf) != dist.GRID_POINTS:
            raise ForecastError(f"the bot's CDF has {len(cdf)} points, not the {dist.GRID_POINTS} of the question")
        heights = report.prediction.get_percentiles_at_target_heights([p / 100 for p in PERCENTILES])
        metadata["percentiles"] = {str(p): float(h.value) for p, h in zip(PERCENTILES, heights, strict=True)}
        return NumericForecast(cdf=cdf, metadata=metadata)
    _expect(report, ft.BinaryReport)
    return Forecast(prob=float(report.prediction), metadata=metadata)


def _expect(report: Any, cls: type) -> None:
    if not isinstance(report, cls):
        raise TypeError(f"the bot returned a {type(report).__name__}, not a {cls.__name__}")


def code_digest(cls: type) -> str:
    """A hash of the source files that define ``cls`` and its bases outside the library: a bot whose
    code changed is asked again instead of answered from the cache."""
    digest = hashlib.sha256()
    for klass in cls.__mro__:
        module = sys.modules.get(klass.__module__)
        path = getattr(module, "__file__", None)
        if path and "forecasting_tools" not in klass.__module__ and klass.__module__ != "builtins":
            try:
                digest.update(Path(path).read_bytes())
            except OSError:
                digest.update(path.encode())
    return digest.hexdigest()


def _root_cause(exc: BaseException) -> BaseException:
    """The bot's own exception inside the library's wrappers (exception groups, re-raised RuntimeErrors)."""
    seen = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        elif exc.__cause__ is not None:
            exc = exc.__cause__
        else:
            break
    return exc


def _metadata(report: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("forecast_rationales", "research", "summary"):
        try:
            value = getattr(report, name)
        except Exception:  # sections a custom report lacks
            continue
        if isinstance(value, str) and value.strip():
            out["reasoning" if name == "forecast_rationales" else name] = _trim(value)
    if "reasoning" not in out:
        out["reasoning"] = _trim(report.explanation)
    if report.errors:
        out["errors"] = [_trim(str(e), 300) for e in report.errors[:5]]
    out["price_estimate"] = report.price_estimate
    out["minutes_taken"] = report.minutes_taken
    return out


def _trim(text: str, limit: int = TRIM) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _call(cache_hit: bool = False, cost: float = 0.0) -> Any:
    usage = SimpleNamespace(prompt_tokens=0, completion_tokens=0, cost=cost)
    return SimpleNamespace(cache_hit=cache_hit, usage=usage)


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None
