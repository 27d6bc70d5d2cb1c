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

It also writes ``typed/forecasts/<Checker>.jsonl``: a synthetic forecaster's answers to those tuples, incoherent
in the ways the checks catch, for the documentation's examples of ``cc score``, ``cc repair``, ``cc diff`` and
``cc report`` (:func:`sample_forecasts`; not a model's forecasts). Same inputs give byte-identical files.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..checks import CDF_THRESHOLDS, MC_BINARY, NUMERIC_PARAPHRASE, Check, get_check
from ..generate.categorical import categorical_tuple, fits
from ..jsonl import read_jsonl, write_jsonl
from ..models import ChoiceForecast, ForecastingQuestion, NumericForecast, tuple_model
from ..outcomes import event_of
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


def sample_forecasts(check: Check, tup: dict[str, Any]) -> dict[str, Any]:
    """One forecast line of the synthetic sample forecaster for a tuple of the typed benchmark.

    Multiple choice: weights 1, 1/2, 1/3, … over the options. Numeric: the CDF through the 10th, 50th and 90th
    percentiles at a fifth, half and four fifths of the scale (the second wording's 50th a twentieth higher).
    A yes/no question about an option or a threshold: the distribution's own probability, then moved as an
    incoherent forecaster would: PARTITION's answers times 1.2 (summing to 1.2), MC_BINARY's and the threshold
    questions' a tenth higher (a CDF shifted against its thresholds), cut to [0.01, 0.99]."""
    made = tuple_model(check).model_validate(tup)
    questions = {f: getattr(made, f) for f in check.fields}
    bases = {  # the source questions, also where a tuple asks only about them (PARTITION)
        q.id: q for q in (ForecastingQuestion.model_validate(b) for b in tup["metadata"]["base_sentences"].values())
    }
    distributions: dict[str, Any] = {}
    line: dict[str, Any] = {}
    for name, q in [*questions.items(), *bases.items()]:
        if q.question_type == "multiple_choice":
            weights = [1.0 / (i + 1) for i in range(len(q.options or []))]
            distributions[q.id] = ChoiceForecast.normalised(q, weights)
        elif q.range is not None:
            middle = 0.55 if name == "para_X" else 0.5
            points = {0.1: q.range.value(0.2), 0.5: q.range.value(middle), 0.9: q.range.value(0.8)}
            distributions[q.id] = NumericForecast.from_percentiles(q, points)
    for name, q in questions.items():
        if q.question_type != "binary":
            forecast = distributions[q.id].model_dump(mode="json", exclude={"metadata"})
        else:
            event = event_of(q)
            assert event is not None
            p = event.probability(bases[event.question_id], distributions[event.question_id])
            p = 1.2 * p if check.name.startswith("PARTITION") else p + 0.1
            forecast = {"prob": round(min(max(p, 0.01), 0.99), 6)}
        line[name] = {"question": tup[name], "forecast": forecast}
    return {"line": line}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, default=typed_benchmark_dir() / "questions.jsonl")
    parser.add_argument("--out", type=Path, default=typed_benchmark_dir() / "tuples")
    parser.add_argument("--forecasts", type=Path, default=typed_benchmark_dir() / "forecasts")
    args = parser.parse_args(argv)
    for name, tuples in make_typed(args.questions, args.out).items():
        print(f"{args.out / name}.jsonl: {len(tuples)} tuples")
        write_jsonl(args.forecasts / f"{name}.jsonl", [sample_forecasts(get_check(name), t) for t in tuples])


if __name__ == "__main__":
    main()
