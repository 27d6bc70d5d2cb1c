"""Options derived from the library's declarations (consistency/cli/declared.py): a field's ``Doc`` is the
help, its bounds the range (open ends refused by name), its default the default; undocumented fields are
not options; a dataclass, a pydantic model and a function declare the same way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import typer
from annotated_doc import Doc
from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel
from typer.testing import CliRunner

from consistency.cli.declared import declared_fields, options_from
from consistency.evaluation.request import Request
from consistency.llm import LLMSettings

runner = CliRunner()


@dataclass(frozen=True)
class Settings:
    size: Annotated[int, Ge(1), Doc("How many.")] = 3
    share: Annotated[float, Gt(0), Lt(1), Doc("A share strictly inside (0, 1).")] = 0.5
    ceiling: Annotated[float, Ge(0), Lt(2), Doc("Below 2.")] = 1.0
    rate: Annotated[float, Gt(0), Doc("A positive rate.")] = 1.0
    name: Annotated[str, Doc("A required name.")] = ""
    internal: int = 7  # no Doc: not an option


class Model(BaseModel):
    level: Annotated[int, Ge(0), Le(10), Doc("A level from 0 to 10.")] = 4
    hidden: float = 1.0


def work(path: str, *, verbose: Annotated[bool, Doc("Say more.")] = False, rounds: int = 2) -> None:
    """A library function whose documented parameters are options."""


def _app(*decorators: Any, command: Any) -> typer.Typer:
    app = typer.Typer()
    for decorate in decorators:
        command = decorate(command)
    app.command("cmd")(command)
    app.command("other")(lambda: None)  # two commands: typer keeps the command's name
    return app


def test_documented_fields_of_each_kind_of_source_are_found_in_order():
    assert list(declared_fields(Settings)) == ["size", "share", "ceiling", "rate", "name"]
    assert list(declared_fields(Model)) == ["level"]
    assert list(declared_fields(work)) == ["verbose"]
    assert declared_fields(Settings)["size"][1] == 3


def test_the_options_carry_help_range_and_default_and_build_the_object():
    seen: list[Any] = []

    def cmd(*, settings: Settings, model: Model, call: dict[str, Any]) -> None:
        seen.extend([settings, model, call])

    app = _app(
        options_from(Settings, "settings", flags={"size": ("--size", "-s")}),
        options_from(Model, "model"),
        options_from(work, "call", flags={"verbose": "--verbose"}, build=dict),
        command=cmd,
    )
    shown = runner.invoke(app, ["cmd", "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"}).output
    for text in ("How many.", "A share strictly inside (0, 1).", "A level from 0 to 10.", "Say more.", "-s"):
        assert text in shown
    assert "--internal" not in shown and "--hidden" not in shown and "--rounds" not in shown
    assert "--no-verbose" not in shown  # the flag was declared flag-only
    done = runner.invoke(app, ["cmd", "-s", "5", "--share", "0.25", "--level", "10", "--verbose"])
    assert done.exit_code == 0, done.output
    assert seen == [Settings(size=5, share=0.25), Model(level=10), {"verbose": True}]


def test_out_of_range_values_are_refused_at_the_option_with_the_bound_said():
    app = _app(options_from(Settings, "settings"), command=lambda *, settings: None)
    refused = [(["--size", "0"], "--size"), (["--rate", "0"], "more than 0"), (["--ceiling", "2"], "less than 2"),
               (["--share", "0"], "strictly between 0 and 1"), (["--share", "1"], "strictly between 0 and 1"),
               (["--share", "nan"], "--share")]  # fmt: skip
    for args, said in refused:
        result = runner.invoke(app, ["cmd", *args], env={"COLUMNS": "200", "NO_COLOR": "1"})
        assert result.exit_code == 2, (args, result.output)
        assert said in result.output, (args, result.output)


def test_names_rename_a_parameter_where_two_sources_share_a_field():
    seen: list[Any] = []
    app = _app(
        options_from(Settings, "settings", names={"size": "settings_size"}),
        options_from(Model, "model", names={"level": "size"}, flags={"level": "--level"}),
        command=lambda *, settings, model: seen.extend([settings.size, model.level]),
    )
    assert runner.invoke(app, ["cmd", "--settings-size", "2", "--level", "1"]).exit_code == 0
    assert seen == [2, 1]


def test_the_library_declarations_of_cc_evaluate_are_its_options():
    """The help a user reads on the command line is the text the Python API carries."""
    from consistency.cli import app

    shown = " ".join(runner.invoke(app, ["evaluate", "--help"], env={"COLUMNS": "400", "NO_COLOR": "1"}).output.split())
    for source in (Request, LLMSettings):
        for name, (annotation, _) in declared_fields(source).items():
            doc = next(m for m in annotation.__metadata__ if isinstance(m, Doc)).documentation
            assert " ".join(doc.split())[:60] in shown, (source.__name__, name)
