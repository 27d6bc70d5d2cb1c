"""``cc attack``: search for the tuples on which a forecaster contradicts itself most, within a forecast budget."""

from __future__ import annotations

from ..attack.options import AttackDir, Baseline, Generator, Questions, Resume, SearchSettings, SeedTuples
from ..llm import LLMSettings
from .console import err, escape, show
from .declared import option, options_from
from .errors import handle_errors
from .llm_command import llm_settings_command
from .options import AsJson, Checks, Forecaster, ForecasterOptions


@handle_errors(after="finished forecasts are journaled; run the same command with --resume")
@llm_settings_command
@options_from(SearchSettings, "options", flags={"budget": ("--budget", "-b"), "keep": ("--keep", "-k")})
def attack_cmd(
    forecaster: Forecaster = "local",
    forecaster_option: ForecasterOptions = None,
    checks: Checks = None,
    questions: option(Questions, "--questions", "-q") = None,
    tuples: option(SeedTuples, "--tuples", "-t") = None,
    model: option(Generator, "--model", "-m") = None,
    out_dir: option(AttackDir, "--out", "-o") = None,
    resume: option(Resume, "--resume") = False,
    baseline: option(Baseline, "--baseline/--no-baseline") = True,
    as_json: AsJson = False,
    *,
    options: SearchSettings,
    llm_settings: LLMSettings,
) -> None:
    """Search adaptively for the tuples a forecaster is most incoherent on; write them as a benchmark."""
    from ..attack import attack
    from ..attack.report import render_markdown
    from ..forecasters.loading import parse_options
    from .progress import Progress

    display = Progress(transient=True)
    task = display.task("searching", total=options.budget, info="starting the search")
    with display:
        result = attack(
            forecaster, budget=options.budget, out=out_dir, questions=questions, tuples=tuples, generator=model,
            checks=[c.strip() for c in checks.split(",") if c.strip()] if checks else None,
            forecaster_options=parse_options(forecaster_option or []), options=options, llm=llm_settings,
            baseline=baseline, resume=resume,
            on_round=lambda search: task.update(completed=search.used("search"), info=f"round {search.rounds}"),
        )  # fmt: skip
    text = {"markup": False, "highlight": False, "soft_wrap": True, "end": ""}
    show(result.summary, as_json, lambda: render_markdown(result.summary), **text)
    where = escape(str(result.out))
    err.print(f"attack directory: [bold]{where}[/bold] (tuples/ for cc evaluate -t, forecasts/ for cc score)")
