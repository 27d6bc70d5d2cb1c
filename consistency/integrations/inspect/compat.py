"""Where inspect_ai's assumptions do not fit this project: the ``openai`` it pins, and its distribution's name.

**openai.** inspect-ai 0.3.285 refuses ``openai`` below 3.4.0 for every OpenAI-based provider, for one reason
(its comment in ``validate_openai_client``): from 3.4.0, Azure clients ignore ``AZURE_OPENAI_AD_TOKEN``
when given explicit credentials, which its credential refresh relies on. We cannot install 3.4: every
``instructor`` release caps ``jiter`` below 0.15 and every ``openai`` from 3.3.1 needs ``jiter>=0.16``,
so 3.3.0 is the newest that resolves with instructor. Chat completions through inspect's providers
work on 3.3.0 (tests/test_inspect_http.py runs them over HTTP), so the check is relaxed for exactly
that version, and kept for Azure (an ``AZURE_OPENAI_*`` variable set) and for any other version.

**The name.** inspect names an extension's tasks, solvers and scorers by its import package
(``consistency/negation``) when the module lies in site-packages, or when a distribution *of the same
name* is installed editable. Ours is ``forecast-consistency`` (PyPI's ``consistency`` is another project),
so from a clone's editable install inspect registered ``negation`` and ``inspect eval
consistency/negation`` found no task. :func:`namespace_as_consistency` tells it the two names go together.
"""

from __future__ import annotations

import logging
import os

from ...extras import DISTRIBUTION

log = logging.getLogger(__name__)

#: The openai release the project pins (pyproject.toml); only it is let through.
PINNED_OPENAI = "3.3.0"


def accept_pinned_openai() -> None:
    """Wrap inspect's ``validate_openai_client`` once; idempotent."""
    from inspect_ai.model._providers import providers

    original = providers.validate_openai_client
    if getattr(original, "_consistency_wrapped", False):
        return

    def validate(feature: str) -> None:
        if not _pinned_and_not_azure():
            original(feature)

    validate._consistency_wrapped = True  # type: ignore[attr-defined]
    providers.validate_openai_client = validate


def _pinned_and_not_azure() -> bool:
    try:
        import openai
    except ImportError:
        return False
    if openai.__version__ != PINNED_OPENAI or any(k.startswith("AZURE_OPENAI") for k in os.environ):
        return False
    log.debug("accepting openai %s for inspect's OpenAI providers (chat completions)", openai.__version__)
    return True


def namespace_as_consistency() -> None:
    """Have inspect take an editable install of our distribution as the package ``consistency``; idempotent.
    Called by the modules that register with inspect, before their decorators run."""
    from inspect_ai._util import package

    original = package.package_is_installed_editable
    if getattr(original, "_consistency_wrapped", False):
        return

    def editable(name: str) -> bool:
        return original(name) or (name == "consistency" and original(DISTRIBUTION))

    editable._consistency_wrapped = True  # type: ignore[attr-defined]
    package.package_is_installed_editable = editable
