"""API keys: read from the environment or a ``.env`` file, and kept out of everything we write."""

from __future__ import annotations

import hashlib
import logging
import os
import re
from pathlib import Path
from typing import Any

from ..errors import RunFailed

#: Environment variables that may hold secrets; their values are scrubbed from any text we keep.
KEY_VARIABLES = ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "CC_API_KEY", "METACULUS_TOKEN", "NEWSAPI_KEY")
_KEY_PATTERN = re.compile(r"\b(sk|rk|pk)-[A-Za-z0-9_\-]{8,}|\bBearer\s+[A-Za-z0-9_\-.]{8,}")
_KEY_HINTS = ("sk-", "rk-", "pk-", "Bearer")  # one of them is in every match of _KEY_PATTERN
#: The password of a URL's ``user:password@``, and URL query parameters named like credentials.
_URL_USERINFO = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s/:@?#'\"]*:)(?P<secret>[^\s/@?#'\"]+)(?=@)")
_URL_QUERY_KEY = re.compile(
    r"(?P<head>[?&;](?:[a-z0-9_\-]*(?:key|token|secret|password|passwd|pwd|auth|signature|sig|credential)s?)=)"
    r"(?P<secret>(?:(?!::)[^&#\s'\"])+)",
    re.IGNORECASE,
)


class MissingKeyError(RunFailed):
    pass


def load_dotenv(path: str | Path = ".env") -> None:
    """Add ``KEY=VALUE`` lines of ``path`` to the environment, never overriding what is set."""
    path = Path(path)
    if not path.is_file():
        return
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, value = line.removeprefix("export ").split("=", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        os.environ.setdefault(name.strip(), value)


def api_key(variable: str, model: str) -> str:
    load_dotenv()
    value = os.environ.get(variable, "").strip()
    if not value:
        raise MissingKeyError(f"{variable} is not set: export it or put it in a .env file to use model {model!r}.")
    return value


def optional_key(variable: str) -> str | None:
    load_dotenv()
    return os.environ.get(variable, "").strip() or None


def key_for(spec: Any) -> str | None:
    """The key a :class:`~.specs.ModelSpec`'s endpoint takes (None: it needs none)."""
    if spec.provider == "custom":
        return optional_key("CC_API_KEY")  # self-hosted servers often need none
    if spec.key_variable:
        return api_key(spec.key_variable, spec.text)
    return None


def redact(text: str) -> str:
    """Remove anything that looks like a key, and the values of our key variables, from ``text``."""
    for variable in KEY_VARIABLES:
        value = os.environ.get(variable, "")
        if len(value) >= 6:
            text = text.replace(value, "[redacted]")
    text = scrub_url(text)
    if not any(hint in text for hint in _KEY_HINTS):  # a plain substring test is far cheaper than the regex
        return text
    return _KEY_PATTERN.sub("[redacted]", text)


def scrub_url(text: str, *, fingerprint: bool = False) -> str:
    """``text`` with URL passwords and credential-like query values replaced: by ``[redacted]``,
    or with ``fingerprint`` by a short hash of the secret (so cache keys of two keys differ)."""

    def hide(match: re.Match[str]) -> str:
        secret = match["secret"]
        if fingerprint:
            return f"{match['head']}sha256-{hashlib.sha256(secret.encode()).hexdigest()[:16]}"
        return f"{match['head']}[redacted]"

    if "://" in text and "@" in text:  # what a password in a URL needs (cheap tests before the regex)
        text = _URL_USERINFO.sub(hide, text)
    if "=" in text:
        text = _URL_QUERY_KEY.sub(hide, text)
    return text


def redact_record(record: logging.LogRecord) -> bool:
    """A logging filter: scrubs secrets from a record (URLs with passwords in HTTP client logs)."""
    message = record.getMessage()
    clean = redact(message)
    if clean != message:
        record.msg, record.args = clean, None
    return True
