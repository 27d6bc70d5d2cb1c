"""Multiple-choice, numeric and date questions and tuple files of the checks made from them, for the tests that run
forecasters and ``cc evaluate`` on those checks against the scripted server's worlds (:mod:`consistency.fake_openai.
categorical`)."""

from __future__ import annotations

import json
from pathlib import Path

from consistency.checks import get_check
from consistency.generate.categorical import categorical_tuple
from consistency.models import ForecastingQuestion

#: The checks the tuple files hold, each with (source id, extra arguments of ``categorical_tuple``) per tuple.
PLAN: dict[str, list[tuple[str, dict]]] = {
    "PARTITION3": [("mc3", {})],
    "PARTITION4": [("mc4", {})],
    "MC_BINARY": [("mc3", {"options": ["Lagos"]}), ("mc4", {"options": ["Red", "Green"]})],
    "CDF_THRESHOLDS": [("units", {}), ("gdp", {}), ("launch", {})],
    "NUMERIC_PARAPHRASE": [("units", {}), ("gdp", {}), ("launch", {})],
}
SECOND_WORDING = {
    "units": "How many heat pumps will Norway's registry record as installed during 2027?",
    "gdp": "What will Freedonia's nominal GDP be for 2027, in millions of USD?",
    "launch": "On what date will the Orion capsule next leave the launch pad?",
}


def sources() -> dict[str, ForecastingQuestion]:
    """Five source questions: two multiple-choice (3 and 4 options), numeric on a linear scale with an open upper
    bound, numeric on a log scale open on both sides, and a date with closed bounds."""
    common = {"resolution_date": "2027-12-31", "created_date": "2026-01-01"}
    return {
        "mc3": ForecastingQuestion(
            id="mc3",
            title="Which city will host the 2031 Pan-African Games?",
            body="Resolves to the city the organising committee names.",
            question_type="multiple_choice",
            options=["Lagos", "Nairobi", "Other"],
            **common,
        ),
        "mc4": ForecastingQuestion(
            id="mc4",
            title="Which party will win the 2027 election in Freedonia?",
            body="Resolves to the party whose candidate is sworn in as president.",
            question_type="multiple_choice",
            options=["Red", "Blue", "Green", "Other"],
            **common,
        ),
        "units": ForecastingQuestion(
            id="units",
            title="How many heat pumps will be installed in Norway in 2027?",
            body="Per the national registry's annual figure.",
            question_type="numeric",
            range={"lower": 0, "upper": 200_000, "open_upper": True, "unit": "heat pumps"},
            **common,
        ),
        "gdp": ForecastingQuestion(
            id="gdp",
            title="What will Freedonia's nominal GDP be in 2027 (millions of USD)?",
            body="Per the IMF's World Economic Outlook.",
            question_type="numeric",
            range={"lower": 100, "upper": 1_000_000, "open_lower": True, "open_upper": True, "scale": "log"},
            **common,
        ),
        "launch": ForecastingQuestion(
            id="launch",
            title="When will the next crewed Orion capsule launch?",
            body="The date of lift-off, UTC.",
            question_type="date",
            range={"lower": "2027-01-01", "upper": "2029-01-01"},
            **common,
        ),
    }


def tuples() -> dict[str, list[dict]]:
    """The tuples of :data:`PLAN`, by check name (template-made; the second wordings given)."""
    qs = sources()
    out: dict[str, list[dict]] = {}
    for name, items in PLAN.items():
        check = get_check(name)
        made = []
        for source_id, extra in items:
            kw = dict(extra)
            if name == "NUMERIC_PARAPHRASE":
                kw["wordings"] = {"para_X": (SECOND_WORDING[source_id], qs[source_id].body)}
            made.append(categorical_tuple(check, qs[source_id], **kw))
        out[name] = made
    return out


def write_tuples(directory: Path, checks: tuple[str, ...] | None = None) -> Path:
    """One ``<Checker>.jsonl`` tuple file per check of :data:`PLAN` (or of ``checks``) in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, made in tuples().items():
        if checks is None or name in checks:
            path = directory / f"{get_check(name).class_name}.jsonl"
            path.write_text("".join(json.dumps(t) + "\n" for t in made), encoding="utf-8")
    return directory


def questions() -> list[ForecastingQuestion]:
    """Every question of the tuples (what a scripted world is given to answer derived questions exactly)."""
    out = []
    for made in tuples().values():
        for t in made:
            out.extend(ForecastingQuestion.model_validate(v) for k, v in t.items() if k != "metadata")
    return out
