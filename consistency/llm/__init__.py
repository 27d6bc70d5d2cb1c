"""The LLM layer: model specs, the client (cache, retries, limits, costs) and the bundled local model."""

from .accounting import RunStats, Usage
from .cache import ResponseCache
from .client import LLM, LLMResult, LLMSettings
from .fatal import FatalError
from .secrets import MissingKeyError
from .specs import ModelSpec, ModelSpecError, parse_model_spec

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
