"""Model specs: one string names a model and the OpenAI-compatible endpoint that serves it.

- ``gpt-4o`` or ``openai/gpt-4o``: OpenAI, key in ``OPENAI_API_KEY``;
- ``openrouter/<vendor>/<model>``: OpenRouter, key in ``OPENROUTER_API_KEY``;
- ``<base_url>::<model>``: any OpenAI-compatible server (vLLM, Ollama, llama.cpp, a LiteLLM
  proxy); its key, if it wants one, in ``CC_API_KEY``;
- ``local``: the bundled model, served by llama.cpp on 127.0.0.1 by the framework itself.

A ``?mode=`` suffix (``tools``, ``json_schema``, ``json``, ``md_json``) overrides the structured
output mode; the defaults are what each endpoint supports (``local`` answers in JSON constrained by
the schema's grammar: SmolLM2's chat template produces no tool calls).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import instructor

from ..errors import InputError
from .secrets import redact, scrub_url

OPENROUTER_URL = "https://openrouter.ai/api/v1"

_MODES = {
    "tools": instructor.Mode.TOOLS,
    "json_schema": instructor.Mode.JSON_SCHEMA,
    "json": instructor.Mode.JSON,
    "md_json": instructor.Mode.MD_JSON,
}


class ModelSpecError(InputError):
    """A spec that names no model; its message never holds a key written into the spec."""

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))


@dataclass(frozen=True)
class ModelSpec:
    text: str  # as the user wrote it
    provider: str  # openai | openrouter | custom | local
    model: str  # the name sent to the API
    base_url: str | None  # None: the provider's default (or, for local, started on demand)
    key_variable: str | None  # environment variable holding the key; None: no key needed
    mode: instructor.Mode

    @property
    def label(self) -> str:
        """A short, secret-free name for tables and file names."""
        return "local" if self.provider == "local" else self.model.rsplit("/", 1)[-1]

    @property
    def public(self) -> str:
        """The spec as written, with any password or key inside its URL replaced: for logs and files."""
        return scrub_url(self.text)

    def identity(self) -> str:
        """What the cache keys on: the endpoint and model. Never a key: a secret inside the URL
        enters as a hash, so two keys to one endpoint stay distinct without being stored."""
        return f"{self.provider}|{scrub_url(self.base_url or '', fingerprint=True)}|{self.model}"


def known_models() -> list[str]:
    """Model names a bare spec may use: ``local`` and the price table's (ours and ``CC_PRICES``'s)."""
    from .accounting import price_table

    return list(dict.fromkeys(["local", *price_table()]))


@lru_cache(maxsize=256)
def parse_model_spec(text: str) -> ModelSpec:
    raw = text.strip()
    if not raw:
        raise ModelSpecError(
            "empty model spec; try 'gpt-4o-mini', 'openrouter/<vendor>/<model>', 'URL::model' or 'local'"
        )
    # the ?mode= suffix follows the model name; a URL's own query (before ::) is the endpoint's
    url, sep, rest = raw.rpartition("::")
    rest, _, query = rest.partition("?")
    spec = url + sep + rest
    mode_name = None
    if query:
        key, _, value = query.partition("=")
        if key != "mode" or value not in _MODES:
            raise ModelSpecError(f"unknown option {query!r} in model spec {raw!r}; use ?mode={'|'.join(_MODES)}")
        mode_name = value
    if spec == "local":
        provider, model, base_url, key_var, default_mode = "local", "local", None, None, "json_schema"
    elif "::" in spec:
        base_url, model = spec.split("::", 1)
        if not base_url.startswith(("http://", "https://")) or not model:
            raise ModelSpecError(f"model spec {raw!r}: expected 'http(s)://host:port/v1::model-name'")
        provider, key_var, default_mode = "custom", "CC_API_KEY", "tools"
    elif spec.startswith("openrouter/"):
        model = spec.removeprefix("openrouter/")
        if "/" not in model:
            raise ModelSpecError(f"model spec {raw!r}: expected 'openrouter/<vendor>/<model>'")
        provider, base_url, key_var, default_mode = "openrouter", OPENROUTER_URL, "OPENROUTER_API_KEY", "tools"
    else:
        model = spec.removeprefix("openai/")
        if "/" in model or ":" in model:
            raise ModelSpecError(
                f"model spec {raw!r} is not a known form: use 'gpt-4o', 'openai/<model>', "
                "'openrouter/<vendor>/<model>', 'http://host:port/v1::<model>' or 'local'"
            )
        provider, base_url, key_var, default_mode = "openai", None, "OPENAI_API_KEY", "tools"
    return ModelSpec(raw, provider, model, base_url, key_var, _MODES[mode_name or default_mode])
