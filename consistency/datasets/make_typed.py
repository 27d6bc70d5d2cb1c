"""Regenerate the bundled multiple-choice and numeric benchmark: ``python -m consistency.datasets.make_typed``.

Reads ``typed/questions.jsonl`` (multiple-choice, numeric and date questions written for this project in the
shapes Metaculus and Polymarket publish, each with ``metadata.provenance`` saying which) and writes
``typed/tuples/<Checker>.jsonl`` with the template instantiator, no model call:

- ``Partition<k>Checker``: each multiple-choice question with k options, its options asked one by one;
- ``McBinaryChecker``: each multiple-choice question against the option or union its id chooses and against the
  union of its first two options (its second and third when that was the choice);
- ``CdfThresholdsChecker``: each numeric or date question at three thresholds, evenly on its scale and rounded;
- ``NumericParaphraseChecker``: each numeric or date question and the second wording written beside it
  (``metadata.second_wording``), so that no model is asked for one.

Same inputs give byte-identical files.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..checks import CDF_THRESHOLDS, MC_BINARY, NUMERIC_PARAPHRASE, get_check
from ..generate.categorical import categorical_tuple, fits
from ..jsonl import read_jsonl, write_jsonl
from ..models import ForecastingQuestion
from . import typed_benchmark_dir


def read_questions(path: Path) -> list[ForecastingQuestion]:
    questions = []
    for _, item in read_jsonl(path, ForecastingQuestion):
        if isinstance(item, list):
            raise ValueError(str(item[0]))
        questions.append(item)
    return questions


def make_typed(questions_path: Path, out_dir: Path) -> dict[str, list[dict]]:
    """The tuples of the four multiple-choice and numeric checks, written to ``out_dir``; per checker file."""
    questions = read_questions(questions_path)
    made: dict[str, list[dict]] = {}

    def add(check, tup: dict) -> None:
        made.setdefault(check.class_name, []).append(tup)

    for q in questions:
        if q.question_type == "multiple_choice":
            options = q.options or []
            add(get_check(f"PARTITION{len(options)}"), categorical_tuple(get_check(f"PARTITION{len(options)}"), q))
            one = categorical_tuple(MC_BINARY, q)
            union = categorical_tuple(MC_BINARY, q, options=options[:2])
            if union["P"]["id"] == one["P"]["id"]:  # the choice by id was that union already
                union = categorical_tuple(MC_BINARY, q, options=options[1:3])
            add(MC_BINARY, one)
            add(MC_BINARY, union)
        elif fits(CDF_THRESHOLDS, q):
            add(CDF_THRESHOLDS, categorical_tuple(CDF_THRESHOLDS, q))
            wording = (q.metadata or {}).get("second_wording")
            if wording:
                pair = (wording["title"], wording["body"])
                add(NUMERIC_PARAPHRASE, categorical_tuple(NUMERIC_PARAPHRASE, q, wordings={"para_X": pair}))
    for name, tuples in sorted(made.items()):
        write_jsonl(out_dir / f"{name}.jsonl", tuples)
    return made


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, default=typed_benchmark_dir() / "questions.jsonl")
    parser.add_argument("--out", type=Path, default=typed_benchmark_dir() / "tuples")
    args = parser.parse_args(argv)
    for name, tuples in make_typed(args.questions, args.out).items():
        print(f"{args.out / name}.jsonl: {len(tuples)} tuples")


if __name__ == "__main__":
    main()
