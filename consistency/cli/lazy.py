"""Commands registered by name and imported only when invoked, so ``cc`` starts fast.

Each command module pulls in what it needs (numpy, pydantic models, the LLM client...); importing
all of them for ``cc version`` cost over a second. ``LazyTyper.lazy("score", "score_cmd:score")``
records where a command lives; the click group imports that module only when the command runs
(or its own ``--help`` is shown). ``cc --help`` lists every command from the docstrings read off
the modules' source with :mod:`ast`, without importing them.
"""

from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass
from difflib import get_close_matches
from pathlib import Path
from typing import Any, ClassVar

import typer

try:  # typer >= 0.2x carries its own copy of click
    from typer._click.core import Command, Context, ParameterSource
    from typer._click.exceptions import UsageError
    from typer._click.globals import get_current_context
except ImportError:  # pragma: no cover - older typer uses click itself
    from click import Command, Context, get_current_context  # type: ignore[no-redef]
    from click.core import ParameterSource  # type: ignore[no-redef]
    from click.exceptions import UsageError  # type: ignore[no-redef]

__all__ = ["Command", "Context", "LazyTyper", "typed_options"]
from typer.core import TyperCommand, TyperGroup
from typer.main import get_command_from_info, get_group
from typer.models import CommandInfo

from .errors import handle_errors


def _no_type_on_flags() -> None:
    """typer 0.2x shows a flag's type (``--json  <bool>``), as if it took a value that a user might copy; a
    flag takes none, so its type column stays empty (options with values keep ``<int>``, ``<path>``...)."""
    from typer.core import TyperOption

    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "_flags_untyped", False):
        return

    def display_type_rich(self: TyperOption, ctx: Context) -> str | None:
        return None if getattr(self, "is_flag", False) and not getattr(self, "count", False) else shown(self, ctx)

    display_type_rich._flags_untyped = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_no_type_on_flags()


@dataclass(frozen=True)
class LazyEntry:
    """Where a command lives: ``module:attribute`` relative to this package; a function or a Typer app."""

    target: str

    @property
    def module(self) -> str:
        return f"{__package__}.{self.target.partition(':')[0]}"

    @property
    def attribute(self) -> str:
        return self.target.partition(":")[2]

    def load(self) -> object:
        return getattr(importlib.import_module(self.module), self.attribute)

    def help_from_source(self) -> str | None:
        """The command's docstring (or a Typer app's ``help=``), read from the module's source without importing it."""
        path = Path(__file__).with_name(self.target.partition(":")[0] + ".py")
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError):
            return None
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == self.attribute:
                return ast.get_docstring(node)
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Call)
                and any(isinstance(t, ast.Name) and t.id == self.attribute for t in node.targets)
            ):
                for kw in node.value.keywords:
                    if kw.arg == "help" and isinstance(kw.value, ast.Constant):
                        return str(kw.value.value)
        return None


class _LazyGroup(TyperGroup):
    """A click group that resolves registered names to real commands on first use."""

    lazy: ClassVar[dict[str, LazyEntry]] = {}  # set per app by LazyTyper
    children: ClassVar[dict[str, dict[str, LazyEntry]]] = {}  # group name -> its subcommands from other modules
    typer_settings: ClassVar[dict[str, object]] = {}
    _listing = False

    def format_help(self, ctx: Context, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def list_commands(self, ctx: Context) -> list[str]:
        return [*self.lazy, *(n for n in super().list_commands(ctx) if n not in self.lazy)]

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        # The help listing asks for every command: a stand-in with the docstring avoids importing them all.
        if cmd_name in self.lazy and cmd_name not in self.commands:
            if ctx.resilient_parsing or self._listing:
                text = self.lazy[cmd_name].help_from_source()
                if text is not None:
                    return TyperCommand(cmd_name, help=text)
            return self.load(cmd_name)
        return super().get_command(ctx, cmd_name)

    def resolve_command(self, ctx: Context, args: list[str]):  # type: ignore[override]
        if args and args[0] in self.lazy:
            self.load(args[0])
        try:
            return super().resolve_command(ctx, args)
        except UsageError as exc:  # typer suggests among the loaded commands only: suggest among all
            matches = get_close_matches(args[0], self.list_commands(ctx)) if args else []
            if matches and "Did you mean" not in exc.message:
                exc.message = f"{exc.message.rstrip('.')}. Did you mean {', '.join(map(repr, matches))}?"
            raise

    def load(self, name: str) -> Command:
        """Import the command ``name`` and add it to the group (once), its errors mapped to exit codes."""
        if name not in self.commands:
            obj = self.lazy[name].load()
            if isinstance(obj, typer.Typer):
                for sub, entry in self.children.get(name, {}).items():
                    child = entry.load()
                    if isinstance(child, typer.Typer):
                        obj.add_typer(child, name=sub)
                    else:
                        obj.command(sub)(child)
                _handle_errors_of(obj)
                command: Command = get_group(obj)
                command.name = name
            else:
                command = get_command_from_info(
                    CommandInfo(name=name, callback=handle_errors(obj)),  # type: ignore[arg-type]
                    pretty_exceptions_short=bool(self.typer_settings.get("pretty_exceptions_short", True)),
                    rich_markup_mode=self.typer_settings.get("rich_markup_mode"),  # type: ignore[arg-type]
                )
            self.add_command(command, name)
        return self.commands[name]


def _handle_errors_of(group: typer.Typer) -> None:
    """Every command of a Typer group (and of its subgroups) ends through :func:`.errors.handle_errors`."""
    for info in group.registered_commands:
        info.callback = handle_errors(info.callback)
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            _handle_errors_of(sub.typer_instance)


class LazyTyper(typer.Typer):
    """A Typer app whose commands can be registered by location, imported only when invoked.

    ``app.lazy("score", "score_cmd:score")`` registers function ``score`` of ``consistency/cli/score_cmd.py``
    as ``cc score``; ``app.lazy("cache", "cache_cmd:app")`` registers a Typer app as a command group, and
    ``app.lazy("export forecastbench", "fb_export_cmd:forecastbench")`` a command of that group.
    """

    def __init__(self, **kwargs: object) -> None:
        self._lazy: dict[str, LazyEntry] = {}
        self._children: dict[str, dict[str, LazyEntry]] = {}
        group = type("LazyGroup", (_LazyGroup,), {"lazy": self._lazy, "children": self._children, "typer_settings": {}})
        super().__init__(cls=group, **kwargs)  # type: ignore[arg-type]
        group.typer_settings.update(
            pretty_exceptions_short=self.pretty_exceptions_short, rich_markup_mode=self.rich_markup_mode
        )

    def lazy(self, name: str, target: str) -> None:
        """Register ``name`` (``"group sub"``: a subcommand of a lazily registered group) at ``target``."""
        group, _, sub = name.partition(" ")
        place, key = (self._children.setdefault(group, {}), sub) if sub else (self._lazy, name)
        if key in place:
            raise ValueError(f"command {name!r} is registered twice")
        place[key] = LazyEntry(target)

    @property
    def lazy_commands(self) -> dict[str, str]:
        """Registered names and their ``module:attribute`` targets, in registration order."""
        return {name: entry.target for name, entry in self._lazy.items()}


def typed_options() -> set[str]:
    """The parameters of the running command that the user typed (not left at their defaults)."""
    ctx = get_current_context(silent=True)
    if ctx is None:
        return set()
    return {name for name in ctx.params if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE}
