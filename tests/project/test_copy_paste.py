"""What a user copies from help and docs works as shown: no `<bool>` after flags, every accepted check name listed,
an unpriced cache hit says "unknown price", skip reasons are shown by pytest, and a forecaster file with a main
guard loads without running its script part."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from consistency.checks import get_check
from consistency.fake_openai import ScriptedServer, probability_rule
from consistency.forecasters import load_forecaster

CC = Path(sys.executable).parent / "cc"
ROOT = Path(__file__).resolve().parents[2]


def cc(*argv: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")} | {"NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run([str(CC), *argv], cwd=cwd, env=base | env, capture_output=True, text=True, timeout=120)


def test_help_shows_no_type_after_flags(tmp_path):
    for argv in (["--help"], ["evaluate", "--help"], ["checks", "--help"], ["generate", "--help"]):
        text = cc(*argv, cwd=tmp_path).stdout
        assert "<bool>" not in text, argv
    assert "<int range> [x>=1]" in cc("evaluate", "--help", cwd=tmp_path).stdout  # a value option keeps its type


def test_checks_json_lists_every_short_name_the_table_shows(tmp_path):
    rows = json.loads(cc("checks", "--json", cwd=tmp_path).stdout)
    table = cc("checks", cwd=tmp_path).stdout
    by_name = {row["name"]: row for row in rows}
    assert by_name["NEGATION"]["aliases"] == ["neg", "negation"]
    # the package's own checks, as a fresh interpreter has them (a test module may have declared more in this one)
    fresh = "import json; from consistency.checks import all_checks; print(json.dumps([c.name for c in all_checks()]))"
    names = json.loads(subprocess.run([sys.executable, "-c", fresh], capture_output=True, text=True, check=True).stdout)
    assert set(names) == set(by_name)
    for check in map(get_check, names):
        row = by_name[check.name]
        assert ", ".join([check.class_name, *row["aliases"]]) in table
        assert all(get_check(alias) is check for alias in row["aliases"])


def test_an_unpriced_cache_hit_says_unknown_price(tmp_path):
    env = {"CC_CACHE_DIR": str(tmp_path / "cache")}
    with ScriptedServer(probability_rule()) as srv:
        first = cc("ask", "Will it rain in 2030?", "-m", srv.model_spec(), cwd=tmp_path, **env)
        again = cc("ask", "Will it rain in 2030?", "-m", srv.model_spec(), cwd=tmp_path, **env)
    assert first.returncode == again.returncode == 0, again.stderr
    assert "1 call(s)" in first.stderr and first.stderr.rstrip().endswith("unknown price")
    assert ", cache, " in again.stderr and again.stderr.rstrip().endswith("unknown price")
    assert "$0.00000" not in again.stderr


def test_cc_ask_without_a_key_stops_with_the_same_sentence_as_evaluate(tmp_path):
    asked = cc("ask", "Will it rain?", "-m", "gpt-4o-mini", cwd=tmp_path)
    sentence = "OPENAI_API_KEY is not set: export it or put it in a .env file to use model 'gpt-4o-mini'."
    assert asked.returncode == 1
    assert asked.stderr.strip() == f"error {sentence}"


def test_pytest_shows_skip_reasons():
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    report = next(opt[2:] for opt in addopts.split() if opt.startswith("-r"))
    assert "s" in report or "a" in report  # skips with their reasons
    assert "f" in report or "a" in report  # and failures are still listed (-r replaces pytest's default "fE")


def test_a_forecaster_file_with_a_main_guard_loads_without_running_its_script(tmp_path):
    path = tmp_path / "my_forecaster.py"
    path.write_text(
        "from consistency import Forecaster, Forecast\n"
        "LOADED_AS = __name__\n\n"
        "class Mine(Forecaster):\n"
        "    async def forecast(self, question):\n"
        "        return Forecast(prob=0.25)\n\n"
        'if __name__ == "__main__":\n'
        '    raise SystemExit("the script part ran on import")\n'
    )
    forecaster = load_forecaster(f"{path}::Mine")
    assert forecaster.forecast_sync("Will it?").prob == 0.25
    assert sys.modules[type(forecaster).__module__].LOADED_AS != "__main__"
