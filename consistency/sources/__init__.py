"""Question sources beyond generation: forecasting platforms (Metaculus, Manifold, Polymarket),
news, model resolution, and the paper's published dataset.

Names are imported on first use, so ``consistency.sources.paper`` (read by every command that
takes a questions or tuples path) does not pull in the HTTP client.
"""

from __future__ import annotations

from typing import Any

from ..names import lazy_exports

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
    return _lazy(name)


_lazy = lazy_exports(__name__, {name: f".{module}" for name, module in _WHERE.items()})
