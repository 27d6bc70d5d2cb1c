"""The llama.cpp server's life cycle: start or reuse, health, state file and lock, stop at exit.

A state file per weights and server settings (context, slots, GPU layers) lets other processes, and
later runs, reuse a healthy server instead of starting another; a file lock makes concurrent starts end
with one server. The process that started a server stops it when it exits (atexit, and SIGTERM/SIGINT
handlers chained to the previous ones); a process that only reused it leaves it running.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from . import interrupts
from .bootstrap import BOOTSTRAP, MARKER, OWNER_VAR
from .errors import INSTALL_HINT, LocalModelError
from .files import file_lock, load_json, local_cache_dir, write_json_atomic
from .weights import resolve_weights, weights_sha256

#: The model id the server answers to (its alias); requests may use it as ``model``.
LOCAL_MODEL_NAME = "local"

ENV_THREADS = "CC_LOCAL_THREADS"
ENV_PARALLEL = "CC_LOCAL_PARALLEL"
ENV_GPU_LAYERS = "CC_LOCAL_GPU_LAYERS"
#: Most threads the server gets by default (measured: benchmarks/bench_local_ceiling.py); see default_threads().
MAX_DEFAULT_THREADS = 2
DEFAULT_PARALLEL = 4  # slots: requests decoded together (benchmarks/bench_local.py)
DEFAULT_N_CTX = 4096  # context per slot: room for few-shot forecasting prompts; SmolLM2 was trained with 8192
#: Tokens a request may generate when it does not say (a 135M model can ramble until its context is full).
DEFAULT_N_PREDICT = 512
CACHE_RAM_MIB = 256  # llama.cpp's cache of finished prompts, in RAM (its default is 8 GiB)
#: llama.cpp's DRY sampler penalises extending a repeated passage: without it, SmolLM2 at temperature 0
#: often loops ("This is a probability question. This is a probability question. ...") until cut off.
DRY_MULTIPLIER = 0.8
STARTUP_TIMEOUT = 120.0
STOP_TIMEOUT = 5.0

_LOCK_NAME = "local-server.lock"

log = logging.getLogger(__name__)


def default_threads() -> int:
    """One thread per core that is free now (1-minute load average), at least 1 and at most 2.

    llama.cpp's threads spin while they wait for each other, so a thread without a core of its own
    slows every request down: on 2 busy cores two threads were several times slower than one, while
    on 2 idle cores the second thread nearly doubles prompt processing (benchmarks/bench_local_ceiling.py).
    """
    cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this platform
        load = 0.0
    return max(1, min(MAX_DEFAULT_THREADS, cores, round(cores - load)))


def _int_from_env(name: str, default: int | None, what: str, minimum: int = 1) -> int | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        kind = "a positive" if minimum == 1 else "a non-negative"
        raise LocalModelError(f"{name} must be {kind} whole number of {what}, got {raw!r}.")
    return value


# ------------------------------------------------------------------------------------ process helpers


def _pid_is_our_server(pid: int) -> bool:
    """True if ``pid`` is alive and (where /proc exists) runs one of our servers."""
    if pid <= 0:
        return False
    proc = Path("/proc")
    if proc.is_dir():
        try:
            cmdline = (proc / str(pid) / "cmdline").read_bytes()
        except OSError:
            return False
        return MARKER.encode() in cmdline  # empty for a zombie
    return _pid_alive(pid)


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _http_ok(port: int, path: str, timeout: float) -> bool:
    try:
        with _NO_PROXY.open(f"http://127.0.0.1:{port}{path}", timeout=timeout) as resp:
            if resp.status != 200:
                return False
            if path == "/v1/models":
                data = json.loads(resp.read())
                return any(m.get("id") == LOCAL_MODEL_NAME for m in data.get("data", []))
            return True
    except (OSError, ValueError, AttributeError):
        return False


def _healthy(port: int) -> bool:
    """The server answers with our model; a server busy with long requests gets a second, slower chance."""
    return _http_ok(port, "/v1/models", 2.0) or _http_ok(port, "/health", 10.0)


def _log_tail(path: Path, lines: int = 20) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 8192))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


def _terminate_group(proc: subprocess.Popen[bytes], timeout: float = STOP_TIMEOUT) -> None:
    """SIGTERM the server's process group, wait, then SIGKILL it."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        if proc.poll() is not None:
            break
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            continue
        break


def _terminate_pid(pid: int) -> None:
    """Stop an orphaned server of ours (not our child): SIGTERM its group, wait, SIGKILL."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        deadline = time.monotonic() + STOP_TIMEOUT
        while time.monotonic() < deadline:
            if not _pid_is_our_server(pid):
                return
            time.sleep(0.1)


def _server_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != OWNER_VAR}
    env[OWNER_VAR] = str(os.getpid())
    return env


# ------------------------------------------------------------------------------------------- server


class LocalServer:
    """One llama.cpp server for one GGUF: started here, or reused from another process.

    ``start()`` reuses a healthy server for the same weights and settings recorded in the state file, or
    starts one and records it. ``parallel`` slots decode that many requests together (continuous batching);
    llama.cpp queues requests beyond them. Only the process that started a server stops it (``stop()``, the context
    manager, or at exit); ``stop()`` on a reused server just forgets it.
    """

    model_name = LOCAL_MODEL_NAME

    def __init__(
        self,
        weights: Path | str | None = None,
        *,
        threads: int | None = None,
        parallel: int | None = None,
        gpu_layers: int | None = None,
        n_ctx: int = DEFAULT_N_CTX,
        startup_timeout: float = STARTUP_TIMEOUT,
        cache_dir: Path | str | None = None,
    ) -> None:
        self._weights_arg = Path(weights) if weights is not None else None
        if threads is None:
            threads = _int_from_env(ENV_THREADS, None, "threads")
        # A default chosen from the load may differ between processes: any running server will do then.
        self._any_threads = threads is None
        self.threads = threads if threads is not None else default_threads()
        self.parallel = parallel if parallel is not None else _int_from_env(ENV_PARALLEL, DEFAULT_PARALLEL, "slots")
        if gpu_layers is None:
            gpu_layers = _int_from_env(ENV_GPU_LAYERS, None, "layers", minimum=0)
        self.gpu_layers = gpu_layers  # None: llama.cpp's default (all that fit, on a GPU build)
        self.n_ctx = int(n_ctx)
        self.startup_timeout = float(startup_timeout)
        self._cache_arg = Path(cache_dir) if cache_dir is not None else None
        self._lock = threading.RLock()
        self.weights: Path | None = None
        self.weights_sha256: str | None = None
        self.port: int | None = None
        self.pid: int | None = None
        self.owned = False
        self.log_path: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._owner_pid: int | None = None
        self._state_path: Path | None = None

    # ---- public

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise LocalModelError("the local model server is not started; call start() first")
        return f"http://127.0.0.1:{self.port}/v1"

    def settings(self) -> dict[str, Any]:
        """What the server is started with, besides the weights; a reused server must match it."""
        return {
            "alias": LOCAL_MODEL_NAME,
            "parallel": self.parallel,
            "n_ctx": self.n_ctx,
            "n_predict": DEFAULT_N_PREDICT,
            "threads": self.threads,
            "gpu_layers": self.gpu_layers,
            "cache_ram_mib": CACHE_RAM_MIB,
            "dry_multiplier": DRY_MULTIPLIER,
        }

    def command(self, weights: Path, ready_file: Path) -> list[str]:
        """The command line that starts the server (it writes its address to ``ready_file``)."""
        config = json.dumps({"model": str(weights), **self.settings()}, sort_keys=True)
        return [sys.executable, "-P", "-c", BOOTSTRAP, config, str(ready_file)]

    def is_running(self) -> bool:
        """Whether the server process is still there (cheap: no HTTP request)."""
        if self._proc is not None:
            return self._proc.poll() is None
        return self.pid is not None and _pid_is_our_server(self.pid)

    def start(self) -> LocalServer:
        with self._lock:
            if self.port is not None and self.is_running():
                return self
            self._forget()
            weights = (self._weights_arg or resolve_weights(cache_dir=self._cache_arg)).resolve()
            if not weights.is_file():
                raise LocalModelError(f"the model weights {weights} do not exist")
            cache = local_cache_dir(self._cache_arg)
            sha = weights_sha256(weights, cache_dir=cache)
            if find_spec("xllamacpp") is None:
                raise LocalModelError(
                    f"the local model needs xllamacpp (llama.cpp's server), which is not installed: "
                    f"install the local extra with {INSTALL_HINT}"
                )
            self.weights, self.weights_sha256 = weights, sha
            gpu = "" if self.gpu_layers is None else f"-gpu{self.gpu_layers}"
            self._state_path = cache / f"local-server-{sha[:16]}-ctx{self.n_ctx}-p{self.parallel}{gpu}.json"
            self.log_path = self._state_path.with_suffix(".log")
            with file_lock(cache / _LOCK_NAME, self.startup_timeout + 60, "starting the local model"):
                state = load_json(self._state_path)
                if state and self._adopt(state):
                    log.info("using the local model server already running on port %d", self.port)
                    return self
                if state:
                    self._discard(state)
                started, threads = time.monotonic(), f"{self.threads} thread{'s' * (self.threads != 1)}"
                log.info("starting the local model server (%s, %s)...", weights.name, threads)
                self._launch(weights)
                log.info(
                    "the local model server started in %.1f s; it answers %d questions at a time",
                    time.monotonic() - started, self.parallel,
                )  # fmt: skip
                write_json_atomic(
                    self._state_path,
                    {
                        "pid": self.pid,
                        "port": self.port,
                        "weights": str(weights),
                        "sha256": sha,
                        "settings": self.settings(),
                        "started_by_pid": os.getpid(),
                        "started_at": time.time(),
                        "log": str(self.log_path),
                    },
                )
            _register_owned(self)
            return self

    def stop(self) -> None:
        """Stop the server if this process started it; otherwise just forget it."""
        with self._lock:
            self._stop_owned_process()
            self._forget()

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = f"port={self.port}, pid={self.pid}, owned={self.owned}" if self.port else "not started"
        return f"LocalServer({where}, weights={self.weights or self._weights_arg or 'bundled'})"

    # ---- internals

    def _adopt(self, state: dict[str, Any]) -> bool:
        pid, port = state.get("pid"), state.get("port")
        if not (isinstance(pid, int) and isinstance(port, int)):
            return False
        theirs, ours = dict(state.get("settings") or {}), self.settings()
        if self._any_threads and isinstance(theirs.get("threads"), int):
            ours["threads"] = theirs["threads"]
        if state.get("sha256") != self.weights_sha256 or theirs != ours:
            return False
        if not (_pid_is_our_server(pid) and _healthy(port)):
            return False
        self.pid, self.port, self.owned = pid, port, False
        self.threads = ours["threads"]
        log = state.get("log")
        self.log_path = Path(log) if isinstance(log, str) else self.log_path
        return True

    def _discard(self, state: dict[str, Any]) -> None:
        """Replace a stale record; a live but unhealthy server of ours whose owner is gone is stopped."""
        pid, owner = state.get("pid"), state.get("started_by_pid")
        if isinstance(pid, int) and _pid_is_our_server(pid):
            owner_alive = isinstance(owner, int) and _pid_alive(owner)
            if not owner_alive and state.get("sha256") == self.weights_sha256:
                _terminate_pid(pid)
        with contextlib.suppress(FileNotFoundError):
            assert self._state_path is not None
            self._state_path.unlink()

    def _launch(self, weights: Path) -> None:
        assert self.log_path is not None
        ready = self.log_path.with_suffix(".ready")
        with contextlib.suppress(FileNotFoundError):
            ready.unlink()
        with open(self.log_path, "wb") as log:
            proc = subprocess.Popen(
                self.command(weights, ready),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=_server_env(),
                cwd=str(self.log_path.parent),
                start_new_session=True,  # own process group; a terminal's Ctrl-C does not reach it
                close_fds=True,
            )
        try:
            port = self._wait_until_healthy(proc, ready)
        except BaseException:
            _terminate_group(proc)
            raise
        finally:
            with contextlib.suppress(FileNotFoundError):
                ready.unlink()
        self._proc, self.pid, self.port, self.owned = proc, proc.pid, port, True
        self._owner_pid = os.getpid()

    def _wait_until_healthy(self, proc: subprocess.Popen[bytes], ready: Path) -> int:
        """Wait for the server to write its address, then to answer; return its port."""
        assert self.log_path is not None
        deadline = time.monotonic() + self.startup_timeout
        delay, port = 0.05, None
        signals = interrupts.mark()
        while True:
            interrupts.check(signals, "the local model server's start")  # SIGTERM or Ctrl-C meanwhile
            code = proc.poll()
            if code is not None:
                raise LocalModelError(
                    f"the local model server exited with code {code} while starting; "
                    f"the end of its log {self.log_path}:\n{_log_tail(self.log_path)}"
                )
            if port is None:
                url = load_json(ready).get("url")
                if isinstance(url, str) and url.rpartition(":")[2].isdigit():
                    port = int(url.rpartition(":")[2])
            if port is not None and _http_ok(port, "/v1/models", 2.0):
                return port
            if time.monotonic() > deadline:
                raise LocalModelError(
                    f"the local model server did not answer within {self.startup_timeout:.0f} s; "
                    f"the end of its log {self.log_path}:\n{_log_tail(self.log_path)}"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.5)

    def _stop_owned_process(self) -> None:
        """Stop the server process if this very process started it (not a forked child of ours)."""
        proc = self._proc
        if proc is None or not self.owned or self._owner_pid != os.getpid():
            return
        _terminate_group(proc)
        state_path = self._state_path
        if state_path is not None and load_json(state_path).get("pid") == proc.pid:
            with contextlib.suppress(FileNotFoundError):
                state_path.unlink()

    def _forget(self) -> None:
        _unregister_owned(self)
        self._proc = None
        self.pid = self.port = self._owner_pid = None
        self.owned = False


# ------------------------------------------------------------------------------ owned servers, at exit

_OWNED: list[LocalServer] = []
_OWNED_LOCK = threading.Lock()
_PREVIOUS_HANDLERS: dict[int, Any] = {}
_ATEXIT_REGISTERED = False


def _register_owned(server: LocalServer) -> None:
    global _ATEXIT_REGISTERED
    with _OWNED_LOCK:
        if server not in _OWNED:
            _OWNED.append(server)
        if not _ATEXIT_REGISTERED:
            atexit.register(_stop_all_owned)
            _ATEXIT_REGISTERED = True
    install_exit_handlers()


def _unregister_owned(server: LocalServer) -> None:
    with _OWNED_LOCK:
        if server in _OWNED:
            _OWNED.remove(server)


def _stop_all_owned() -> None:
    """Stop every server this process started. Takes no lock a signal could have interrupted."""
    for server in list(_OWNED):
        with contextlib.suppress(Exception):
            server._stop_owned_process()
        with contextlib.suppress(ValueError):
            _OWNED.remove(server)


def _on_signal(signum: int, frame: Any) -> None:
    interrupts.note(signum)  # a download or start under way in a worker thread gives up
    _stop_all_owned()
    previous = _PREVIOUS_HANDLERS.get(signum, signal.SIG_DFL)
    if callable(previous):
        previous(signum, frame)  # e.g. Python's SIGINT handler raises KeyboardInterrupt
    elif previous != signal.SIG_IGN:  # SIG_DFL (or unknown): die of the signal, as without us
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def install_exit_handlers() -> bool:
    """Install the SIGTERM/SIGINT handlers that stop owned servers, chained to the previous handlers.

    Idempotent. Signal handlers can only be set from the main thread: elsewhere this returns False and the
    servers still stop at a normal exit (atexit) or, failing that, by their own watchdog once we are gone.
    Call it from the main thread (e.g. the event loop's) when servers are started from worker threads.
    A signal the process ignores stays ignored: bash starts background jobs with SIGINT ignored, and a
    handler there turned ``cc``'s SIGTERM (which hands over to the SIGINT handler) into a no-op.
    """
    if threading.current_thread() is not threading.main_thread():
        return False
    with _OWNED_LOCK:
        for signum in (signal.SIGTERM, signal.SIGINT):
            current = signal.getsignal(signum)
            if current is _on_signal or current == signal.SIG_IGN:
                continue
            _PREVIOUS_HANDLERS[signum] = current
            try:
                signal.signal(signum, _on_signal)
            except ValueError:  # pragma: no cover - not the main interpreter
                return False
    return True


# ------------------------------------------------------------------------------------- process-wide

_SHARED: LocalServer | None = None
_SHARED_LOCK = threading.Lock()


def get_local_server() -> LocalServer:
    """The process-wide local server, started (or reused) on first use and restarted if it has gone."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None or not _SHARED.is_running():
            if _SHARED is not None:
                _SHARED.stop()
            server = LocalServer()
            server.start()
            _SHARED = server
        return _SHARED
