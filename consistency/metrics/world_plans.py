"""One precomputed plan per distinct worlds matrix, shared by every call that solves over it."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")


@lru_cache(maxsize=128)
def _build(factory: Callable[[np.ndarray], Any], key: bytes, shape: tuple[int, int]) -> Any:
    return factory(np.frombuffer(key, dtype=np.int8).reshape(shape))


def plan_for(factory: Callable[[np.ndarray], T], worlds: np.ndarray) -> T:
    """``factory(worlds)``, built once per (factory, worlds' contents): worlds arrays arrive as fresh copies."""
    w = np.ascontiguousarray(worlds, dtype=np.int8)
    return _build(factory, w.tobytes(), w.shape)
