"""Regenerate the bundled benchmark: ``python -m consistency.datasets.make_benchmark``.

Reads ``benchmark/questions.jsonl`` (base questions written for this project, resolving
2027-2030) and writes ``benchmark/tuples/<Checker>.jsonl``: ``--per-check`` tuples of every
builtin check, built by the deterministic template instantiator, with related questions (same category)
paired. MONOTONE's chains start from the questions whose "by DATE" deadline the template can move
(:func:`consistency.generate.chains.find_deadline`; 42 of the 72), one chain per question. Same inputs
and seed give byte-identical files.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from ..checks import get_check
from ..checks.builtin import BUILTIN_CHECKS
from ..generate import Instantiated, TemplateInstantiator, instantiate_all
from ..jsonl import read_jsonl, write_jsonl
from ..models import ForecastingQuestion
from ..store import layout
from . import benchmark_dir

PER_CHECK = 24


def make_benchmark(
    questions_path: Path, out_dir: Path, per_check: int = PER_CHECK, seed: int = 0
) -> dict[str, Instantiated]:
    """Every builtin check's tuples written to ``out_dir``; what was made (and skipped), per checker file."""
    questions = []
    for _, item in read_jsonl(questions_path, ForecastingQuestion):
        if isinstance(item, list):
            raise ValueError(str(item[0]))
        questions.append(item)
    instantiator = TemplateInstantiator()
    made = {}
    for check in BUILTIN_CHECKS:  # MONOTONE's chains start only from questions with a deadline to move
        made[check.class_name] = asyncio.run(instantiate_all(instantiator, check, questions, per_check, seed=seed))
        write_jsonl(out_dir / layout.forecast_file(check), made[check.class_name].tuples)
    return made


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, default=benchmark_dir() / layout.BENCHMARK_QUESTIONS)
    parser.add_argument("--out", type=Path, default=benchmark_dir() / layout.TUPLES_DIR)
    parser.add_argument("--per-check", type=int, default=PER_CHECK)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for name, made in make_benchmark(args.questions, args.out, args.per_check, args.seed).items():
        note = made.note(get_check(name))
        print(f"{args.out / name}.jsonl: {len(made.tuples)} tuples" + (f" ({note})" if note else ""))


if __name__ == "__main__":
    main()
