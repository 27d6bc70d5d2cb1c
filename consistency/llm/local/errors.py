"""The local model's error, and the install hint its messages give."""

from __future__ import annotations

from ...errors import RunFailed
from ...extras import install_hint

INSTALL_HINT = install_hint("local")


class LocalModelError(RunFailed):
    """The local model cannot be used: missing package or weights, bad file, or a server that will not start."""
