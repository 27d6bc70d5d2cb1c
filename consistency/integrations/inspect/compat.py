"""Two accommodations with inspect-ai 0.3.285: our objects' registry names, and the ``openai`` pin.

**Names.** inspect namespaces a task, solver, scorer or metric with its package (``consistency/negation``)
only when it believes the package is installed: its module lies in site-packages, or a distribution
named like the *import* package records an editable install (PEP 610 ``direct_url.json``). Neither holds
for an editable install of ours: the distribution is ``forecast-consistency`` (PyPI's ``consistency`` is
another project), and the test depends on ``sys.path`` anyway: ``python -m pytest`` or ``python -c`` run
from a clone put the clone's root first, where setuptools leaves an ``.egg-info`` without
``direct_url.json``. Every object then registered bare (``negation``) and ``inspect eval
consistency/negation`` found no task. :func:`registered_name` gives each decorator the name that makes
the result ``consistency/<name>`` wherever Python starts and however the package was installed.

**openai.**
inspect-ai 0.3.285 refuses ``openai`` below 3.4.0 for every OpenAI-based provider, for one reason
(its comment in ``validate_openai_client``): from 3.4.0, Azure clients ignore ``AZURE_OPENAI_AD_TOKEN``
when given explicit credentials, which its credential refresh relies on. We cannot install 3.4: every
``instructor`` release caps ``jiter`` below 0.15 and every ``openai`` from 3.3.1 needs ``jiter>=0.16``,
so 3.3.0 is the newest that resolves with instructor. Chat completions through inspect's providers
work on 3.3.0 (tests/integrations/test_inspect_http.py runs them over HTTP), so the check is relaxed for exactly
that version, and kept for Azure (an ``AZURE_OPENAI_*`` variable set) and for any other version.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)

#: The namespace of every inspect object this package registers (``inspect eval consistency/...``).
NAMESPACE = "consistency"


def registered_name(name: str) -> str:
    """What to pass as ``name=`` to inspect's decorators so the object registers as ``consistency/<name>``.

    inspect prefixes the package itself when it recognises the install (then ``name`` as it is), and
    leaves a given name alone otherwise (then the full name); it decides the same way for every module
    of this package, so this function's own module stands for them all.
    """
    # pinned inspect-ai: checked by tests/integrations/test_inspect.py
    from inspect_ai._util.registry import registry_name

    return name if registry_name(registered_name, name) == f"{NAMESPACE}/{name}" else f"{NAMESPACE}/{name}"


def eval_max_retries() -> int | None:
    """The run's ``--max-retries`` (``inspect_ai.eval(max_retries=...)``), if one was given."""
    from inspect_ai.model._generate_config import active_generate_config  # pinned inspect-ai

    return active_generate_config().max_retries


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
