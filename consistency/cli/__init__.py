"""The ``cc`` command line: thin commands over the library, printing with rich.

:data:`COMMANDS` is the one table of commands: each name, and where its function (or Typer group) lives;
``"group sub"`` adds a subcommand to a group. It is plain data, so that ``cc``'s entry point reads it
without importing typer (see :mod:`consistency.__main__`); :mod:`.main` builds the application from it,
importing each command only when it runs (:mod:`.lazy`).
"""

from __future__ import annotations

from typing import Any

COMMANDS: dict[str, str] = {
    "evaluate": "evaluate_cmd:evaluate_cmd",
    "generate": "generate_cmd:generate_cmd",
    "questions": "questions_cmd:app",
    "questions import": "fb_import_cmd:app",
    "score": "score_cmd:score",
    "validate": "validate_cmd:validate",
    "checks": "checks_cmd:checks",
    "ask": "ask_cmd:ask",
    "leaderboard": "leaderboard_cmd:leaderboard",
    "compare": "compare_cmd:compare",
    "correlate": "correlate_cmd:correlate",
    "proxy": "proxy_cmd:proxy",
    "cache": "cache_cmd:app",
    "batches": "batches_cmd:batches",
    "arbitrage": "arbitrage_cmd:app",
    "report": "report_cmd:report",
    "attack": "attack_cmd:attack_cmd",
    "export": "export_cmd:app",
    "export forecastbench": "fb_export_cmd:forecastbench",
    "diff": "diff_cmd:diff",
    "repair": "repair_cmd:repair",
    "version": "main:version",
}


def __getattr__(name: str) -> Any:
    if name == "app":  # the typer application, built on first use
        from .main import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
