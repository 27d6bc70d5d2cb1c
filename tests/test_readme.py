"""The README's Python examples run, in order, in one namespace (so they cannot rot)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def test_python_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples write run directories under runs/
    monkeypatch.setenv("CC_CACHE_DIR", str(tmp_path / "cache"))
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) >= 4
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    np.testing.assert_allclose(namespace["result"].arbitrage.violation, [0.0243, 0.0], atol=1e-4)
    np.testing.assert_allclose(namespace["result"].frequentist, [0.2376, 0.0], atol=1e-4)
    assert namespace["res"].violation[0] > 0
    sym = namespace["score_forecasts"]("symand", [[0.2, 0.3]]).arbitrage.violation
    np.testing.assert_allclose(sym, [0.0135], atol=1e-4)
    run = namespace["run"]
    assert run.meta["status"] == "complete" and not run.failures
    assert (run.run_dir / "NegChecker.jsonl").exists()
