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

from ..checks import chain_fields
from ..checks.builtin import BUILTIN_CHECKS
from ..generate import TemplateInstantiator, instantiate_all
from ..generate.chains import fits_horizon
from ..jsonl import read_jsonl, write_jsonl
from ..models import ForecastingQuestion
from . import benchmark_dir

PER_CHECK = 24


def make_benchmark(questions_path: Path, out_dir: Path, per_check: int = PER_CHECK, seed: int = 0) -> dict[str, int]:
    questions = []
    for _, item in read_jsonl(questions_path, ForecastingQuestion):
        if isinstance(item, list):
            raise ValueError(str(item[0]))
        questions.append(item)
    instantiator = TemplateInstantiator()
    counts = {}
    for check in BUILTIN_CHECKS:
        pool = questions
        if chain_fields(check):
            pool = [q for q in questions if fits_horizon(q)]
        tuples = asyncio.run(instantiate_all(instantiator, check, pool, per_check, seed=seed))
        counts[check.class_name] = write_jsonl(out_dir / f"{check.class_name}.jsonl", tuples)
    return counts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, default=benchmark_dir() / "questions.jsonl")
    parser.add_argument("--out", type=Path, default=benchmark_dir() / "tuples")
    parser.add_argument("--per-check", type=int, default=PER_CHECK)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    counts = make_benchmark(args.questions, args.out, args.per_check, args.seed)
    for name, n in counts.items():
        print(f"{args.out / name}.jsonl: {n} tuples")


if __name__ == "__main__":
    main()
