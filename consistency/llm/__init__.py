"""The LLM layer: model specs, the client (cache, retries, limits, costs) and the bundled local model.

Imports are lazy: a command's ``--help`` reads :class:`LLMSettings`' declared options without loading
the openai client, which only a call needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..names import lazy_exports

if TYPE_CHECKING:
    from .accounting import RunStats, Usage
    from .cache import ResponseCache
    from .client import LLM
    from .fatal import FatalError
    from .models import LLMResult, LLMSettings
    from .secrets import MissingKeyError
    from .specs import ModelSpec, ModelSpecError, parse_model_spec

_EXPORTS = {
    "RunStats": ".accounting",
    "Usage": ".accounting",
    "ResponseCache": ".cache",
    "LLM": ".client",
    "FatalError": ".fatal",
    "LLMResult": ".models",
    "LLMSettings": ".models",
    "MissingKeyError": ".secrets",
    "ModelSpec": ".specs",
    "ModelSpecError": ".specs",
    "parse_model_spec": ".specs",
}

__all__ = [
    "LLM",
    "FatalError",
    "LLMResult",
    "LLMSettings",
    "MissingKeyError",
    "ModelSpec",
    "ModelSpecError",
    "ResponseCache",
    "RunStats",
    "Usage",
    "parse_model_spec",
]

__getattr__ = lazy_exports(__name__, _EXPORTS)
