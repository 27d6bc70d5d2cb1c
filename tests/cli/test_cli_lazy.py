"""Commands are imported only when invoked: fast `cc version`, `cc checks`, `cc score --help`."""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer

from consistency.__main__ import COMMANDS
from consistency.cli import app
from consistency.cli.lazy import Context, _LazyGroup

HEAVY = (
    "openai",
    "instructor",
    "numpy",
    "scipy",
    "consistency.llm.client",
    "consistency.evaluation.scoring",
    "consistency.fake_openai",
)


def imported_by(*argv: str) -> list[str]:
    """Heavy modules loaded by running ``cc ARGV`` in a fresh interpreter."""
    code = (
        "import sys\n"
        f"sys.argv = ['cc', *{list(argv)!r}]\n"
        "from consistency.__main__ import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print([m for m in {HEAVY!r} if m in sys.modules])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return eval(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    ("argv", "allowed"),
    [
        (("version",), ()),
        (("--help",), ()),
        (("score", "--help"), ()),
        (("proxy", "--help"), ()),
        (("correlate", "--help"), ()),
        (("leaderboard", "--help"), ()),  # its options are declared on light settings (accuracy.settings)
        (("compare", "--help"), ()),
        (("report", "--help"), ()),  # consistency.report imports its stack when a report is made
        (("export", "forecastbench", "--help"), ()),
        (("checks",), ("numpy",)),  # the checks' possible worlds are numpy arrays
        (("repair", "--help"), ()),  # options declared in light library modules (repair.options...)
        (("diff", "--help"), ()),
        # the model options are LLMSettings' fields (llm.models): the client loads when a call is made
        *[((name, "--help"), ()) for name in ("attack", "generate", "ask")],
    ],
)
def test_start_up_imports_only_what_the_command_needs(argv, allowed):
    assert set(imported_by(*argv)) <= set(allowed)


def test_every_registered_command_loads_and_its_listed_help_is_its_own():
    group = typer.main.get_command(app)
    assert isinstance(group, _LazyGroup)
    ctx = Context(group)
    for name, entry in app._lazy.items():
        listed = entry.help_from_source()
        command = group.load(name)  # type: ignore[attr-defined]
        assert command.name == name
        assert listed is not None and listed == (command.help or ""), name
    assert set(app.lazy_commands) | {"version"} == set(group.list_commands(ctx))


def test_the_compiler_hand_off_knows_every_command():
    assert set(app.lazy_commands) | {"version"} <= set(COMMANDS)


def test_registering_a_name_twice_is_refused():
    with pytest.raises(ValueError, match="registered twice"):
        app.lazy("score", "score_cmd:score")


def test_the_light_copies_of_the_methods_and_aggregators_match_the_library():
    from consistency.accuracy.aggregates import AGGREGATORS
    from consistency.accuracy.ranking import METHODS
    from consistency.accuracy.settings import AGGREGATORS as listed
    from consistency.accuracy.settings import METHODS as methods

    assert listed == tuple(AGGREGATORS)
    assert methods == tuple(METHODS)
