"""Shared fixtures."""

from __future__ import annotations

import os
from importlib.util import find_spec
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def local_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled local model's verified GGUF (fetched once per session), or a skip without the ``local``
    extra; under ``CC_REQUIRE_LOCAL=1`` (as in CI) a failure instead, so the local tests cannot be skipped."""
    from consistency.llm.local import LocalModelError, resolve_weights

    required = os.environ.get("CC_REQUIRE_LOCAL") == "1"
    if find_spec("xllamacpp") is None:
        reason = 'xllamacpp is not installed: install the local extra with pip install -e ".[local]"'
        pytest.fail(f"CC_REQUIRE_LOCAL=1 but {reason}") if required else pytest.skip(reason)
    saved = os.environ.pop("CC_LOCAL_MODEL", None)
    try:
        return resolve_weights(cache_dir=tmp_path_factory.mktemp("local-model-cache"))
    except LocalModelError as exc:
        pytest.fail(f"CC_REQUIRE_LOCAL=1 but {exc}") if required else pytest.skip(str(exc))
    finally:
        if saved is not None:
            os.environ["CC_LOCAL_MODEL"] = saved
