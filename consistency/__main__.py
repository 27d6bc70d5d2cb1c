"""Entry point of the ``cc`` command and of ``python -m consistency``.

``cc`` is also the conventional name of the C compiler, and inside a virtual environment our
script shadows it; build tools (cmake, pip building C extensions) then call us. So before
anything else, a compiler-style invocation is handed to the next ``cc`` on PATH.
"""

from __future__ import annotations

import sys

from .cli import COMMANDS  # the command table, plain data: no typer is imported before the hand-off


def main() -> None:
    from ._compiler import delegate_if_compiler

    delegate_if_compiler(sys.argv, [name.partition(" ")[0] for name in COMMANDS])
    from .cli import app
    from .cli.exits import ExitCode, install_sigterm, terminated

    install_sigterm()
    try:
        app(prog_name="cc")
    except SystemExit:
        if terminated():  # whatever the command made of the interruption, SIGTERM exits with its own code
            raise SystemExit(ExitCode.TERMINATED) from None
        raise


if __name__ == "__main__":
    main()
