"""Validation shared by every scoring family: precise errors instead of silent garbage."""

from __future__ import annotations

import numpy as np

from ..errors import InputError


class ScoreInputError(InputError):
    """Inputs that cannot be scored: the message says which values and why."""


def probabilities(values, name: str = "forecasts") -> np.ndarray:
    """Finite floats in [0, 1]; the error names the first offending positions and values."""
    arr = np.asarray(values, dtype=float)
    bad = ~np.isfinite(arr) | (arr < 0) | (arr > 1)
    if bad.any():
        where = np.argwhere(bad)[:3]
        shown = ", ".join(
            f"{tuple(int(i) for i in w) if arr.ndim > 1 else int(w[0])}: {float(arr[tuple(w)])!r}" for w in where
        )
        raise ScoreInputError(f"{name} must be probabilities in [0, 1]; {int(bad.sum())} are not (e.g. {shown})")
    return arr


def outcomes(values, name: str = "resolutions") -> np.ndarray:
    """Resolutions as 0.0/1.0; accepts bools, 0/1 and the strings yes/no/true/false/1/0."""
    arr = np.asarray(values)
    if arr.dtype.kind in "biuf":  # numbers: checked in one vectorised pass (millions of rows)
        out = arr.astype(float)
        if np.all((out == 0.0) | (out == 1.0)):
            return out
    raw = np.asarray(values, dtype=object).ravel()
    table = {1: 1.0, 0: 0.0, "yes": 1.0, "no": 0.0, "true": 1.0, "false": 0.0, "1": 1.0, "0": 0.0}  # True == 1
    out = np.empty(len(raw))
    for i, v in enumerate(raw):
        key = v.strip().lower() if isinstance(v, str) else (v.item() if isinstance(v, np.generic) else v)
        if isinstance(key, float) and key in (0.0, 1.0):
            key = int(key)
        if key not in table:
            raise ScoreInputError(f"{name}[{i}] = {v!r} is not a resolution (expected yes/no, true/false or 1/0)")
        out[i] = table[key]
    return out.reshape(np.shape(values))


def weights(values, n: int, name: str = "weights") -> np.ndarray:
    """Non-negative finite weights, one per item, not all zero; ``None`` means all 1."""
    if values is None:
        return np.ones(n)
    arr = np.asarray(values, dtype=float)
    if arr.shape != (n,):
        raise ScoreInputError(f"{name} must have shape ({n},), got {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ScoreInputError(f"{name} must be finite and non-negative")
    if arr.sum() <= 0:
        raise ScoreInputError(f"{name} sum to zero")
    return arr
