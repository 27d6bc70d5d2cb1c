"""The project's exceptions, one tree, so a command can tell bad input from a failed run from a bug.

    ConsistencyError            anything the package raises on purpose; ``str()`` is one sentence to print
    ├── InputError              bad input or options, refused before (or instead of) any work: exit 2
    │   ├── DetectionError, ScoringError, ScoreInputError, RunDirError (RunStopped), RunMetaError, OutputPathError,
    │   │   DiffInputError, ReportInputError, RepairInputError, ReplayError, EstimateError, LimitError
    │   ├── ForecasterSpecError, ModelSpecError, UnknownCheckError (also a KeyError), CheckDeclarationError,
    │   │   ConditionError, FormulaSyntaxError, DatasetRefError, NoHorizon, AttackError, AnswerError,
    │   │   ForecastBenchError, InUseError (another command writes the file)
    │   └── HTTPError of the scripted test server (a request it refuses)
    ├── RunFailed               the work started and produced nothing usable, or stopped on an error no
    │   │                       retry can fix: exit 1
    │   ├── FatalError, MissingKeyError, LocalModelError, BatchFailure, ValidationFailed
    │   ├── ForecastError (BudgetExceeded), InstantiationError, FetchError (FatalHTTPError, MalformedPage)
    │   ├── ConflictingTuples (ConflictingForecasts), RepairFailed (also ValueErrors)
    │   ├── NothingToScore, NothingToRepair (also InputErrors, for callers that catch those; exit 1)
    │   └── InconsistentForecaster (also an AssertionError, for pytest)
    └── Interrupted             stopped by Ctrl-C or SIGTERM, with what finished saved: exit 130 / 143
        └── CallsStopped        no new model call: SpendingCapReached (``--max-cost``: exit 3)

``InputError`` is also a :class:`ValueError` and ``RunFailed`` a :class:`RuntimeError`, so code that
catches those keeps working. Where a class is both (``NothingToScore``), the run branch decides the exit
code. Any other exception escaping a command (``KeyError``, ``AttributeError``...) is a bug, not bad
input: ``cc`` prints its traceback and asks for a report (:mod:`consistency.cli.errors`).
``tests/project/test_structure.py`` holds every exception class of the package to this tree.
"""

from __future__ import annotations


class ConsistencyError(Exception):
    """The base of every error the package raises on purpose."""


class InputError(ConsistencyError, ValueError):
    """A file, field or option that cannot be used; the message names it and says why."""


class RunFailed(ConsistencyError, RuntimeError):
    """Work that started and produced nothing usable (or stopped on an error no retry can fix)."""


class Interrupted(ConsistencyError):
    """Stopped by the user or the system (Ctrl-C, SIGTERM, a spending cap); what finished is kept."""
