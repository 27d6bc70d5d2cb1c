"""The command-line reference, generated from the ``cc`` Typer app itself (so it cannot drift).

Used two ways: as an MkDocs hook (``hooks:`` in mkdocs.yml) it replaces the marker
``<!-- cli-reference -->`` in a page with every command, its usage, help and options; run as a
script (``python docs/hooks/cli_reference.py``) it prints the same Markdown.
"""

from __future__ import annotations

import enum
import inspect
from typing import Any

MARKER = "<!-- cli-reference -->"


def _root_command() -> Any:
    import typer.main

    from consistency.cli import app

    return typer.main.get_command(app)


def _subcommands(group: Any, ctx: Any) -> list[tuple[str, Any]]:
    found = []
    for name in group.list_commands(ctx):
        command = group.load(name) if hasattr(group, "load") and name in getattr(group, "lazy", {}) else None
        command = command or group.get_command(ctx, name)
        if command is not None and not getattr(command, "hidden", False):
            found.append((name, command))
    return found


def _default(param: Any) -> str:
    default = param.default
    if callable(default) or default is None or getattr(param, "required", False):
        return ""
    if isinstance(default, enum.Enum):
        default = default.value
    if isinstance(default, bool):
        if not getattr(param, "is_flag", False):
            return str(default).lower()
        if getattr(param, "secondary_opts", None):
            return param.opts[0] if default else param.secondary_opts[0]
        return "on" if default else "off"
    if isinstance(default, (list, tuple)):
        return ", ".join(map(str, default)) if default else ""
    return str(default)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _metavar(param: Any, ctx: Any) -> str:
    if getattr(param, "metavar", None):
        return str(param.metavar)
    if hasattr(param, "display_type"):  # Typer's "<int range>", "<auto|llm|template>"
        shown = param.display_type(ctx).strip("<>")
        # choices exactly as they are typed; a type by its name alone (its range goes in the meaning)
        return shown if "|" in shown else shown.split()[0].upper()
    if hasattr(param, "make_metavar"):  # plain click
        takes_ctx = "ctx" in inspect.signature(param.make_metavar).parameters
        return param.make_metavar(ctx) if takes_ctx else param.make_metavar()
    return str(param.name).upper()


def _param_name(param: Any, ctx: Any) -> str:
    if param.param_type_name == "argument":
        return f"`{getattr(param, 'metavar', None) or str(param.name).upper()}`"
    names = [*param.opts, *getattr(param, "secondary_opts", [])]
    text = ", ".join(f"`{n}`" for n in names)
    if not getattr(param, "is_flag", False) and not getattr(param, "count", False):
        text += f" `{_metavar(param, ctx)}`"
    return text


def _range(param: Any) -> str:
    """The bounds of a number option (``--help`` shows ``[x>=1]``) as a sentence, else nothing."""
    low, high = getattr(param, "min", None), getattr(param, "max", None)
    if low is not None and high is not None:
        return f" From {low} to {high}."
    if low is not None or high is not None:
        return f" At least {low}." if low is not None else f" At most {high}."
    return ""


def _usage(command: Any, ctx: Any) -> str:
    pieces = command.collect_usage_pieces(ctx)
    return " ".join([ctx.command_path, *pieces])


def _render(command: Any, ctx: Any, level: int, out: list[str]) -> None:
    out.append(f"{'#' * level} `{ctx.command_path}`\n")
    text = inspect.cleandoc(command.help or "")
    if text:
        out.append(text.replace("\b\n", "") + "\n")
    out.append(f"```text\n{_usage(command, ctx)}\n```\n")
    params = [p for p in command.get_params(ctx) if not getattr(p, "hidden", False)]
    params = [p for p in params if p.name != "help"]
    if params:
        out.append("| argument / option | default | meaning |\n|---|---|---|")
        for param in params:
            meaning = getattr(param, "help", None) or ""
            if param.param_type_name == "argument":
                meaning = meaning or ("required" if param.required else "optional")
            meaning += _range(param)
            out.append(f"| {_param_name(param, ctx)} | {_cell(_default(param))} | {_cell(meaning)} |")
        out.append("")
    if hasattr(command, "list_commands"):
        for name, sub in _subcommands(command, ctx):
            sub_ctx = sub.make_context(name, [], parent=ctx, resilient_parsing=True)
            _render(sub, sub_ctx, min(level + 1, 4), out)


def cli_reference() -> str:
    """Markdown for ``cc`` and every command below it, in the order ``cc --help`` lists them."""
    root = _root_command()
    ctx = root.make_context("cc", [], resilient_parsing=True)
    out: list[str] = []
    _render(root, ctx, 2, out)
    return "\n".join(out)


def on_page_markdown(markdown: str, **_: Any) -> str:
    return markdown.replace(MARKER, cli_reference()) if MARKER in markdown else markdown


if __name__ == "__main__":
    print(cli_reference())
