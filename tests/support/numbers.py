"""Comparing results computed in two processes (a command's JSON against the Python API's): floats are
equal to a relative 1e-9, since summation order, and so the last digits, can differ between processes
(array alignment, BLAS kernels); everything else must be equal exactly."""

from __future__ import annotations

import math
from typing import Any


def same_numbers(a: Any, b: Any, rel: float = 1e-9, where: str = "") -> None:
    """Assert ``a`` and ``b`` (JSON-like trees) are equal, floats to ``rel``; the message names the path."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), (where, sorted(a.keys() ^ b.keys()))
        for key in a:
            same_numbers(a[key], b[key], rel, f"{where}.{key}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), (where, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same_numbers(x, y, rel, f"{where}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert isinstance(a, int | float) and isinstance(b, int | float), (where, a, b)
        assert math.isclose(a, b, rel_tol=rel, abs_tol=1e-12), (where, a, b)
    else:
        assert a == b, (where, a, b)
