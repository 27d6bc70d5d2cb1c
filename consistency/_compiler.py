"""Hand compiler-style invocations of ``cc`` to the real C compiler.

Our console script is named ``cc``, which is also the C compiler's name. Inside a virtual environment
our script comes first on PATH, and build tools (cmake, ``pip install`` of C extensions) that run ``cc``
would reach us instead of the compiler. When the arguments look like a compiler invocation we ``exec``
the next ``cc`` on PATH after our own directory, with the same arguments and untouched standard streams,
so the caller sees the compiler's output and exit code.

Standard library only and nothing heavy: this runs before the CLI (numpy, typer, ...) is imported.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

#: Options of our own CLI that must never be forwarded to the compiler when they come first.
_OWN_OPTIONS = frozenset({"--help", "-h", "--install-completion", "--show-completion"})

#: Our CLI's global options, given before a command (``cc -V evaluate ...``): never the compiler's.
GLOBAL_OPTIONS = frozenset({"-V", "--verbose"})

#: Options only our commands take (no C compiler driver knows them): a call holding one is ours.
OWN_COMMAND_OPTIONS = frozenset(
    {
        *("--forecaster", "--forecaster-option", "--tuples", "--checks", "--questions", "--resume", "--out"),
        *("--json", "--model", "--limit", "--concurrency", "--forecast-timeout", "--no-cache", "--cost-limit"),
        *("--max-attempts", "--max-connections", "--transcript", "--instantiator", "--bootstrap", "--epsilon"),
    }
)

#: Suffixes of files a C/C++ compiler driver accepts (case matters: ``.C`` is C++, ``.S`` is assembler).
_SOURCE_SUFFIXES = (
    *(".c", ".h", ".i", ".ii", ".s", ".S", ".cc", ".cp", ".cxx", ".cpp", ".c++", ".C", ".m", ".mm"),
    *(".o", ".obj", ".a", ".so", ".lo", ".la", ".d", ".res", ".rsp"),
)

#: Set before exec; holds the real paths of our scripts already traversed (guards against ping-pong).
_GUARD_VAR = "CONSISTENCY_CC_DELEGATED"

_NAME = "cc"


def _is_compiler_argument(arg: str) -> bool:
    return arg.startswith(("-", "@")) or arg.endswith(_SOURCE_SUFFIXES)


def _is_ours(args: Sequence[str], commands: Sequence[str]) -> bool:
    """Whether ``args`` (after the program name) are meant for our CLI rather than the C compiler.

    A compiler is called with flags or source/object files first (``cc -c x.c``, ``cc x.c -o x``);
    our CLI with a command word, possibly after global options (``cc -V evaluate``). A bare first word
    that is no command of ours is a mistyped one (``cc evalute --forecaster local``): our CLI answers
    it with "did you mean", where the compiler would only complain about ``--forecaster``.
    """
    if not args or args[0] in _OWN_OPTIONS:
        return True
    rest = list(args)
    while rest and rest[0] in GLOBAL_OPTIONS:
        rest.pop(0)
    if not rest or rest[0] in commands or rest[0] in _OWN_OPTIONS:
        return True
    if any(a.split("=", 1)[0] in OWN_COMMAND_OPTIONS for a in args):
        return True
    return not _is_compiler_argument(rest[0])  # a bare word: a command of ours, or a mistyped one


def _is_executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _path_dirs() -> list[str]:
    return [d or os.curdir for d in os.environ.get("PATH", os.defpath).split(os.pathsep)]


def _own_path(argv0: str) -> str:
    """Real path of the running script (argv[0] without a slash was found on PATH)."""
    if os.sep not in argv0:
        for d in _path_dirs():
            candidate = os.path.join(d, argv0)
            if _is_executable(candidate):
                return os.path.realpath(candidate)
    return os.path.realpath(argv0)


def _is_our_script(path: str) -> bool:
    """True for a console script of this project (e.g. the ``cc`` of another virtualenv)."""
    try:
        with open(path, "rb") as f:
            head = f.read(1024)
    except OSError:
        return False
    return head.startswith(b"#!") and b"consistency.__main__" in head


def find_next_compiler(own: str) -> str | None:
    """The first executable ``cc`` on PATH after the directory holding ``own`` (the whole PATH if absent)."""
    candidates = [os.path.join(d, _NAME) for d in _path_dirs()]
    candidates = [c for c in candidates if _is_executable(c)]
    reals = [os.path.realpath(c) for c in candidates]
    if own in reals:
        start = reals.index(own) + 1
        candidates, reals = candidates[start:], reals[start:]
    visited = {own, *filter(None, os.environ.get(_GUARD_VAR, "").split(os.pathsep))}
    for candidate, real in zip(candidates, reals, strict=True):
        if real not in visited and not _is_our_script(real):
            return candidate
    return None


def delegate_if_compiler(argv: list[str], commands: Sequence[str]) -> None:
    """Exec the real C compiler if ``argv`` looks like a compiler invocation; otherwise return.

    Returns (so our CLI runs) when not invoked as ``cc`` (e.g. ``python -m consistency``) or when
    :func:`_is_ours` says the arguments are our CLI's. Exits 127 if no other ``cc`` is found on PATH.
    """
    args = argv[1:]
    if os.path.basename(argv[0]) != _NAME:  # e.g. ``python -m consistency``: never a compiler
        return
    if _is_ours(args, commands):
        return
    own = _own_path(argv[0])
    compiler = find_next_compiler(own)
    if compiler is None:
        print(
            f"{_NAME}: this is the 'consistency' command; no C compiler named {_NAME} found on PATH "
            f"after {os.path.dirname(own)}",
            file=sys.stderr,
        )
        sys.exit(127)
    previous = os.environ.get(_GUARD_VAR)
    os.environ[_GUARD_VAR] = own if not previous else os.pathsep.join((previous, own))
    os.execv(compiler, [compiler, *args])
