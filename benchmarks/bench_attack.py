"""The adversarial search against a planted weakness: ``python benchmarks/bench_attack.py [--budget N]``.

The scripted server's ``planted`` rule is a perfectly coherent forecaster except on negations of
titles longer than 130 characters, where it overlooks the "NO". ``cc attack`` spends ``--budget``
forecasts searching from the bundled benchmark; the same budget then goes to seed tuples drawn
uniformly at random. Prints

    attack_mean_violation=<mean arbitrage violation of the K tuples the search returns>
    random_mean_violation=<the same for the K most violated uniformly sampled tuples>
    random_all_mean_violation=<mean over every uniformly sampled tuple>
    attack_over_random=<ratio; target >= 3>
    planted_hit_rate=<share of the returned tuples with a field in the planted region; target > 0.5>
    forecasts_search=<n> forecasts_baseline=<n> target_calls=<n> rounds=<n> wall_s=<s> load=<1-min load average>
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from smoke import parse_args

from consistency.attack import SearchOptions, attack
from consistency.llm import LLMSettings
from consistency.testing import ScriptedServer
from consistency.testing.rules import RULES, in_planted_region


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--keep", type=int, default=20)
    args = parse_args(parser, {"budget": 12, "keep": 4})
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CC_CACHE_DIR"] = str(Path(tmp) / "cache")  # a cold cache: every forecast is a real request
        with ScriptedServer(RULES["planted"]()) as srv:
            start = time.perf_counter()
            result = attack(
                srv.model_spec(),
                budget=args.budget,
                out=Path(tmp) / "attack",
                options=SearchOptions(keep=args.keep),
                llm=LLMSettings(timeout=10),
            )
            wall = time.perf_counter() - start
    s = result.summary
    hits = sum(any(in_planted_region(e.tuple[f]["title"]) for f in e.check.field_names) for e in result.found)

    def show(value: float | None) -> str:
        return "nan" if value is None else f"{value:.4f}"

    ratio = s["attack_over_random"]
    print(f"attack_mean_violation={show(s['attack_mean_violation'])}")
    print(f"random_mean_violation={show(s['random_mean_violation'])}")
    print(f"random_all_mean_violation={show(s['random_all_mean_violation'])}")
    print(f"attack_over_random={'inf' if ratio is None else f'{ratio:.2f}'}")
    print(f"planted_hit_rate={hits / max(len(result.found), 1):.3f}")
    print(
        f"forecasts_search={s['forecasts']['search']} forecasts_baseline={s['forecasts']['baseline']} "
        f"target_calls={s['target_llm']['calls']} rounds={s['rounds']} wall_s={wall:.2f} load={os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
