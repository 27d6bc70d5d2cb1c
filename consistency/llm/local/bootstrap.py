"""The code that runs inside the local model's server process: llama.cpp's own server, through xllamacpp.

``xllamacpp.Server`` runs llama.cpp's C++ HTTP server (continuous batching over ``n_parallel`` slots) on
threads of the process that creates it. We create it in a process of its own, so that the owner's
interpreter, a Ctrl-C in its terminal or a crash of either side never takes the other down with it, and
add an owner watchdog: the server stops itself once the process that started it is gone, even after a
``kill -9``. The server binds port 0 (the kernel picks a free port, so two starts never race for one) and
writes the address it listens on to a file the owner waits for.
"""

from __future__ import annotations

MARKER = "consistency-local-server"  # in the server's command line: tells our servers from other processes
OWNER_VAR = "CC_LOCAL_OWNER_PID"  # the owner's pid, for the watchdog; read (and removed) by BOOTSTRAP

#: Run in the server process as ``python -P -c BOOTSTRAP <config JSON> <ready file>``.
BOOTSTRAP = r"""# consistency-local-server: llama.cpp's server (xllamacpp), stopped when its owner is gone
import json, os, signal, sys, threading, time

def _watch_owner(owner):
    while os.getppid() == owner:
        time.sleep(0.5)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(10)
    os._exit(1)

_owner = int(os.environ.pop("CC_LOCAL_OWNER_PID", "0") or 0)
if _owner:
    threading.Thread(target=_watch_owner, args=(_owner,), daemon=True).start()

config, ready = json.loads(sys.argv[1]), sys.argv[2]
import xllamacpp

params = xllamacpp.CommonParams()
params.model.path = config["model"]
params.model_alias = {config["alias"]}
params.hostnames = ["127.0.0.1"]
params.port = 0
params.n_parallel = config["parallel"]
params.n_ctx = config["n_ctx"] * config["parallel"]  # llama.cpp splits it evenly between the slots
params.n_predict = config["n_predict"]
params.cpuparams.n_threads = config["threads"]
params.cpuparams_batch.n_threads = config["threads"]
params.cache_ram_mib = config["cache_ram_mib"]
params.cache_prompt = True  # a slot keeps its last prompt: the next one reuses the shared start (system prompt)
params.sampling.dry_multiplier = config["dry_multiplier"]
if config.get("gpu_layers") is not None:
    params.n_gpu_layers = config["gpu_layers"]
server = xllamacpp.Server(params)
with open(ready + ".tmp", "w") as fh:
    json.dump({"url": server.listening_address, "pid": os.getpid()}, fh)
os.replace(ready + ".tmp", ready)
print("consistency: serving", config["model"], "at", server.listening_address, file=sys.stderr, flush=True)
while True:
    time.sleep(3600)
"""
