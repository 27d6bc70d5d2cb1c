"""`cc evaluate --questions` on resolved multiple-choice, numeric and date questions, over real HTTP against the
scripted server: each is scored with its own proper scores (multi-class Brier and log; log density and CRPS),
equal to hand computations; the yes/no results file stays as it was; a resolution that is not an option or of the
wrong kind is a skipped line named with its reason."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from consistency import distributions as dist
from consistency.cli import app
from consistency.fake_openai import ScriptedServer
from consistency.fake_openai.rules import coherent_rule
from consistency.jsonl import iter_json_lines
from consistency.models import ForecastingQuestion
from tests.support.categorical_runs import sources

runner = CliRunner()


pytestmark = pytest.mark.usefixtures("in_tmp_dir")


def resolved() -> list[ForecastingQuestion]:
    """The source questions, resolved: an option, a number inside the range, beyond an open bound, a date."""
    qs = sources()
    outcomes = {"mc3": "Nairobi", "mc4": "Other", "units": "above_upper_bound", "gdp": 2500.0, "launch": "2027-09-14"}
    out = [q.model_copy(update={"resolution": None}) for q in qs.values()]
    out = [ForecastingQuestion.model_validate({**q.model_dump(mode="json"), "resolution": outcomes[q.id]}) for q in out]
    yes_no = ForecastingQuestion(id="yn", title="Will it rain in Oslo on 1 June 2027?", resolution=True)
    return [*out, yes_no]


def bad_lines() -> list[dict]:
    mc = sources()["mc3"].model_dump(mode="json")
    numeric = sources()["units"].model_dump(mode="json")
    return [
        {**mc, "id": "bad1", "title": "Which city, again?", "resolution": "Paris"},  # not an option
        {**mc, "id": "bad2", "title": "Which city, once more?", "resolution": 2},  # an index, not a label
        {**numeric, "id": "bad3", "title": "How many, again?", "resolution": "yes"},  # not a number
    ]


def crps_by_hand(cdf: np.ndarray, t: float) -> float:
    """∫₀¹ (F(x) - [x ≥ t])² dx with F linear between the grid points, by a fine midpoint rule."""
    x = (np.arange(2_000_000) + 0.5) / 2_000_000
    f = np.interp(x, dist.locations(), cdf)
    return float(np.mean((f - (x >= t)) ** 2))


def test_multiple_choice_and_numeric_resolutions_get_their_own_scores(tmp_path):
    questions = resolved()
    path = Path("resolved.jsonl")
    path.write_text("".join(json.dumps(x) + "\n" for x in [q.model_dump(mode="json") for q in questions] + bad_lines()))
    with ScriptedServer(coherent_rule(questions)) as srv:
        res = runner.invoke(app, ["evaluate", "-f", f"basic:{srv.model_spec()}", "-q", str(path), "-o", "run"])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "run" / "ground_truth_summary.json").read_text())
    assert summary["unreadable_lines"] == [
        "resolved.jsonl:7: resolution: resolution 'Paris' is not one of the options ('Lagos', 'Nairobi', 'Other')",
        "resolved.jsonl:8: resolution: a multiple_choice resolution is one of the option labels, got 2",
        "resolved.jsonl:9: resolution: a numeric resolution is a finite number or 'below_lower_bound'/"
        "'above_upper_bound', got 'yes'",
    ]
    assert "resolved.jsonl:7: resolution: resolution 'Paris' is not one of the options" in res.output
    assert summary["scored"] == 6 and summary["unresolved"] == 0 and len(summary["unreadable_lines"]) == 3
    assert summary["by_type"]["multiple_choice"]["scored"] == 2 and summary["by_type"]["numeric"]["scored"] == 2
    assert "multiple_choice: 2 scored, Brier " in res.output and "date: 1 scored, log score " in res.output
    # the yes/no file holds the yes/no question only, in the paper's fields
    (binary,) = [obj for _, obj in iter_json_lines(tmp_path / "run" / "ground_truth_results.jsonl")]
    assert binary["question"]["id"] == "yn" and set(binary) >= {"prob", "brier_score", "log_score"}
    by_id = {q.id: q for q in questions}
    typed = {
        obj["question"]["id"]: obj for _, obj in iter_json_lines(tmp_path / "run" / "ground_truth_typed_results.jsonl")
    }
    assert set(typed) == {"mc3", "mc4", "units", "gdp", "launch"}
    for qid in ("mc3", "mc4"):
        q, line = by_id[qid], typed[qid]
        p = np.array(line["forecast"]["probs"])
        hit = q.options.index(q.resolution)  # type: ignore[union-attr]
        assert line["brier_score"] == pytest.approx(float(((p - np.eye(len(p))[hit]) ** 2).sum()), abs=1e-12)
        assert line["log_score_bits"] == pytest.approx(-math.log2(p[hit]), abs=1e-12)
    units = np.array(typed["units"]["forecast"]["cdf"])  # beyond the open upper bound: the mass left above it
    assert typed["units"]["log_score_bits"] == pytest.approx(-math.log2(1 - units[-1]), abs=1e-12)
    assert typed["units"]["crps_score"] == pytest.approx(crps_by_hand(units, 1.0), abs=1e-6)
    for qid in ("gdp", "launch"):  # inside the range: the density per unit of the scale, in the outcome's cell
        q, line = by_id[qid], typed[qid]
        cdf = np.array(line["forecast"]["cdf"])
        t = float(q.range.location(q.resolution))  # type: ignore[union-attr, arg-type]
        cell = int(t * 200)
        density = (cdf[cell + 1] - cdf[cell]) * 200
        assert line["log_score_bits"] == pytest.approx(-math.log2(density), abs=1e-9)
        assert line["crps_score"] == pytest.approx(crps_by_hand(cdf, t), abs=1e-6)
    mean_brier = np.mean([typed[q]["brier_score"] for q in ("mc3", "mc4")])
    assert summary["by_type"]["multiple_choice"]["brier_score"]["mean"] == pytest.approx(mean_brier, abs=1e-12)
