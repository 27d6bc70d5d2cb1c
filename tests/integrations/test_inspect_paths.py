"""``inspect eval consistency/...`` resolves the same from any working directory and any venv.

inspect namespaces our tasks only when it recognises the install, and its test for an editable install
reads the distribution metadata found first on ``sys.path``. ``python -c`` (like ``python -m pytest``)
puts the working directory first: from a clone's root that is the ``.egg-info`` setuptools leaves there,
which records no editable install, so the tasks registered as a bare ``negation`` and every in-process
``inspect_ai.eval("consistency/negation")`` failed with "No inspect tasks were found".
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.inspect_support import require_inspect

require_inspect()

ROOT = Path(__file__).resolve().parents[2]

#: Runs a task in-process as a user's script does (mockllm with token usage set: no tiktoken download).
EVAL = """
import json
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model

def respond(messages, tools, tool_choice, config):
    out = ModelOutput.from_content(model="mockllm", content=json.dumps({"reasoning": "r", "prob": 0.3}))
    out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    return out

model = get_model("mockllm/model", custom_outputs=respond, memoize=False)
(log,) = inspect_eval("consistency/negation", model=model, task_args={"limit": 2}, display="none", log_dir=LOGS)
print(log.status, log.eval.task, len(log.samples))
"""


def outside_venv(tmp: Path) -> Path:
    """A venv outside the clone whose packages are this interpreter's (its site-packages added, .pth files
    and the editable install's finder included): the layout of a clone with its venv elsewhere."""
    venv = tmp / "venv-outside"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    (purelib,) = (venv / "lib").glob("python3*/site-packages")
    lines = [f"import site; site.addsitedir({d!r})" for d in site.getsitepackages()]
    (purelib / "zz_from_the_test_venv.pth").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return venv / "bin" / "python"


@pytest.mark.parametrize("venv", ["this", "outside"])
@pytest.mark.parametrize("where", ["clone root", "elsewhere", "beside stale metadata"])
def test_tasks_resolve_from_any_working_directory(tmp_path, venv, where):
    python = Path(sys.executable) if venv == "this" else outside_venv(tmp_path)
    cwd = ROOT if where == "clone root" else tmp_path / "work"
    if where != "clone root":
        cwd.mkdir()
    if where == "beside stale metadata":
        # What setuptools leaves in a clone (checked here whatever built this install), under the
        # distribution's name and under the import package's (a clone from before the rename): metadata
        # without the record of an editable install, first on sys.path.
        for name in ("forecast-consistency", "consistency"):
            meta = cwd / f"{name.replace('-', '_')}.egg-info"
            meta.mkdir()
            (meta / "PKG-INFO").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.0\n", encoding="utf-8")
            entry = "[inspect_ai]\nconsistency = consistency.integrations.inspect._registry\n"  # pyproject.toml's
            (meta / "entry_points.txt").write_text(entry, encoding="utf-8")
    code = f"LOGS = {str(tmp_path / 'logs')!r}\n" + EVAL
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    result = subprocess.run([str(python), "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["success", "consistency/negation", "2"]
