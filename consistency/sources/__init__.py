"""Question sources beyond generation: forecasting platforms (Metaculus, Manifold, Polymarket)."""

from .http import FatalHTTPError, FetchError, HttpSettings, MalformedPage, PageCache, WebClient
from .manifold import Manifold
from .metaculus import Metaculus
from .polymarket import Polymarket
from .scrape import ScrapeOptions, ScrapeReport, Skip, scrape

SOURCES = {"metaculus": Metaculus, "manifold": Manifold, "polymarket": Polymarket}

__all__ = [
    "SOURCES",
    "FatalHTTPError",
    "FetchError",
    "HttpSettings",
    "MalformedPage",
    "Manifold",
    "Metaculus",
    "PageCache",
    "Polymarket",
    "ScrapeOptions",
    "ScrapeReport",
    "Skip",
    "WebClient",
    "scrape",
]
