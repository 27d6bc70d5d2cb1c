"""Results of every kind, made once per test module for the DataFrame tests: two consistency runs, two
ground-truth runs, a joint repair, an attack against the scripted server and two ForecastBench rounds with
forecast sets."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

from consistency.attack import attack
from consistency.datasets import benchmark_dir
from consistency.evaluation import evaluate
from consistency.evaluation.ground_truth import evaluate_questions
from consistency.fake_openai import ScriptedServer
from consistency.fake_openai.rules import RULES
from consistency.forecastbench.synthetic import forecast_set, make_round, write_round
from consistency.forecasters.simple import ConstantForecaster
from consistency.llm import LLMSettings
from consistency.repair.runs import repair_run

#: ForecastBench rounds of the fixture and the day they are scored on.
DUES = (date(2025, 3, 2), date(2025, 3, 16))
AS_OF = date(2025, 6, 1)


def make_results(root: Path) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for name, p in (("half", 0.5), ("high", 0.9)):
        run = evaluate(ConstantForecaster(p), checks=["neg", "and", "cond"], limit=6, out=root / "runs" / name)
        out[name] = run.run_dir
    questions = root / "resolved.jsonl"
    with questions.open("w") as fh:
        for i, line in enumerate((benchmark_dir() / "questions.jsonl").read_text().splitlines()[:12]):
            fh.write(json.dumps({**json.loads(line), "resolution": i % 3 == 0}) + "\n")
    for name, p in (("gt_low", 0.3), ("gt_high", 0.8)):
        out[name] = evaluate_questions(ConstantForecaster(p), questions, out=root / "truth" / name).run_dir
    out["truth"] = root / "truth"
    out["repair"] = Path(repair_run(out["high"], "brier", True, root / "repaired").out or "")
    with ScriptedServer(RULES["constant"]()) as srv:
        attack(srv.model_spec(), budget=60, out=root / "attack", llm=LLMSettings(timeout=5, max_backoff=0.05))
    out["attack"] = root / "attack"
    fb = root / "fb"
    for due in DUES:
        rnd = make_round(due, AS_OF, seed=3)
        write_round(rnd, fb / "datasets")
        for model, noise in (("sharp", 0.3), ("rough", 1.5)):
            path = fb / "forecasts" / f"{due}.Lab.{model}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(forecast_set(rnd, "Lab", model, noise=noise, seed=1)))
    out["fb"] = fb
    return out
