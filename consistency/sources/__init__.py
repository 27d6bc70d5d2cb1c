"""Question sources beyond generation: forecasting platforms (Metaculus, Manifold, Polymarket),
news, model resolution, and the paper's published dataset.

Names are imported on first use, so ``consistency.sources.paper`` (read by every command that
takes a questions or tuples path) does not pull in the HTTP client.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_WHERE = {
    "FatalHTTPError": "http",
    "FetchError": "http",
    "HttpSettings": "http",
    "MalformedPage": "http",
    "PageCache": "http",
    "WebClient": "http",
    "Manifold": "manifold",
    "Metaculus": "metaculus",
    "Polymarket": "polymarket",
    "ScrapeOptions": "scraper",
    "ScrapeReport": "scraper",
    "Skip": "scraper",
    "scrape": "scraper",
}

__all__ = ["SOURCES", *_WHERE]


def __getattr__(name: str) -> Any:
    if name == "SOURCES":
        return {"metaculus": __getattr__("Metaculus"), "manifold": __getattr__("Manifold"),
                "polymarket": __getattr__("Polymarket")}  # fmt: skip
    if name in _WHERE:
        return getattr(import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
