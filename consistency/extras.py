"""The distribution's name and how to install one of its extras, for the messages that ask for one.

The import package is ``consistency`` and the command ``cc``, but on a package index the distribution
is ``forecast-consistency``: PyPI's ``consistency`` is an unrelated project, so no message may name
``consistency`` as what to install. This module imports nothing.
"""

from __future__ import annotations

DISTRIBUTION = "forecast-consistency"

#: What must be installed before an extra: sentence-transformers would otherwise pull a CUDA torch.
_FIRST = {"embeddings": "pip install torch==2.13.0 (the CPU build) first, then "}


def install_hint(extra: str) -> str:
    """The command that installs ``extra``: by the distribution's name, or into a clone's editable install."""
    return f'{_FIRST.get(extra, "")}pip install "{DISTRIBUTION}[{extra}]" (in a clone: pip install -e ".[{extra}]")'
