"""Shared fixtures."""

from __future__ import annotations

import os
import signal
from importlib.util import find_spec
from pathlib import Path

import pytest

if find_spec("hypothesis") is not None:
    # Imported before any test runs: hypothesis's pytest plugin otherwise imports it in the terminal summary,
    # and CPython 3.11.7's ast then fails ("AST constructor recursion depth mismatch") in a process where
    # tests hit RecursionError (deeply nested JSON), ending a green run with a traceback and exit code 1.
    import hypothesis  # noqa: F401

# litellm (under forecasting-tools) fetches its model cost map from GitHub when first imported, unless told
# to use the copy it ships: tests that import the library directly must not reach the network (and wait
# seconds for a timeout where there is none). The package sets the same for its own import of the library.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# Tests press Ctrl-C in a child (SIGINT) as a terminal would. A session started as a shell's background
# job (`pytest &`, a sweep script) has SIGINT ignored, and an ignored signal stays ignored in every child
# it starts, so those children slept through it and the tests timed out. A handler, unlike SIG_IGN, is
# reset to the default at exec: children start as from a terminal. The tests that want SIGINT ignored in
# a child (a backgrounded `cc`) set that themselves.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def in_tmp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test that runs commands in its own directory with its own cache (``pytestmark =
    pytest.mark.usefixtures("in_tmp_dir")``): nothing is written to the checkout or the user's cache."""
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)


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
