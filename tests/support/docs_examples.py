"""Run the documentation's examples: the harness behind ``tests/docs/test_docs_examples.py``.

In ``docs/**/*.md`` a ```` ```console ```` block is a session: lines starting with ``$ `` are commands
(a trailing ``\\`` continues one on the next line), the lines after a command are its expected output.
Commands run with bash in a directory prepared per page (``consistency/`` of this checkout is linked
into it, so bundled paths work as in a clone), with the offline servers' addresses in the environment:

- ``CC_DEMO_MODEL``: model spec of the scripted server answering with the ``demo`` rule
  (``python -m consistency.fake_openai --rule demo``), ``CC_DEMO_URL`` its base URL;
- ``CC_WEB_URL``: the fixture web server (``python -m consistency.fake_openai.web``);
- ``CC_COHERENT_MODEL`` and ``CC_INCOHERENT_MODEL``: the scripted server with the ``coherent`` and ``incoherent``
  rules (:data:`RULE_SERVERS`), whose forecasts of multiple-choice and numeric questions agree, or disagree by known
  amounts, with their yes/no questions.

Outputs are compared after normalising what differs between runs (times, durations, ports, the
temporary directory, progress bars). ```` ```python ```` blocks of a page run in order in one
namespace. ``CC_DOCS_UPDATE=1 pytest tests/docs/test_docs_examples.py`` rewrites each console block's
output with what the commands printed (review the diff): outputs are captured, never typed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
BLOCK = re.compile(r"^```(console|python)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
SHOWN_DEMO_PORT, SHOWN_WEB_PORT = 8000, 8001  # the ports the pages tell users to start the servers on
#: Scripted servers of other rules the pages use: rule -> the port the pages start it on (``$CC_<RULE>_MODEL``).
RULE_SERVERS = {"coherent": 8002, "incoherent": 8003}
COMMAND_TIMEOUT = 180


@dataclass
class Step:
    command: str
    expected: str


@dataclass
class Block:
    kind: str  # console or python
    start: int  # character offsets of the block's body in the page
    end: int
    body: str

    def steps(self) -> list[Step]:
        steps: list[Step] = []
        lines = self.body.splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            if not line.startswith("$ "):
                raise ValueError(f"console block: output before any command: {line!r}")
            parts = [line[2:]]
            while parts[-1].endswith("\\") and i + 1 < len(lines):
                i += 1
                parts.append(lines[i])
            i += 1
            out = []
            while i < len(lines) and not lines[i].startswith("$ "):
                out.append(lines[i])
                i += 1
            steps.append(Step("\n".join(parts), "\n".join(out)))
        return steps


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    return [Block(m.group(1), m.start(2), m.end(2), m.group(2)) for m in BLOCK.finditer(text)]


def pages_with_examples() -> list[Path]:
    """The site's pages and the README, those that hold examples."""
    return sorted(p for p in [ROOT / "README.md", *DOCS.rglob("*.md")] if blocks(p))


# ------------------------------------------------------------------------------ normalising

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_ISO = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d[:-]\d\d[:-]\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?")
_STAMP = re.compile(r"\d{8}T\d{6}")
_CLOCK = re.compile(r"\b\d+:\d\d:\d\d\b")
_SECONDS = re.compile(r"\b\d+(?:\.\d+)?\s?s\b")
_PORT = re.compile(r"\b(127\.0\.0\.1|localhost):\d+")
_PID = re.compile(r"\bprocess \d+")
_BAR = re.compile(r"\b\d+/(?:\d+\b|\?).*\b\d+:\d\d:\d\d\b")
_SPACES = re.compile(r"[ \t]+$", re.M)


def _progress(line: str) -> bool:
    """A progress bar's line (terminal-only noise), not a table's heavy border."""
    stripped = line.strip()
    if "━" in stripped and stripped[0] not in "┏┡┗┣┃╇":
        return True
    return bool(_BAR.search(stripped))  # "NAME  3/10 ... 0:00:01": a bar drawn with no progress yet


def presentable(text: str, tmp: Path, ports: dict[int, int]) -> str:
    """What a page shows: the run's own output, with its temporary paths and ports made readable."""
    text = _ANSI.sub("", text.replace("\r\n", "\n"))
    text = "\n".join(line for line in text.split("\n") if not _progress(line))
    text = text.replace(str(tmp / "cache"), "~/.cache/consistency").replace(str(tmp) + "/", "").replace(str(tmp), ".")
    for actual, shown in ports.items():
        text = re.sub(rf"\b(127\.0\.0\.1|localhost):{actual}\b", rf"\g<1>:{shown}", text)
    return _SPACES.sub("", text).strip("\n")


def normalised(text: str) -> str:
    """Equal for two runs of one example: times, durations, ports and pids replaced by placeholders."""
    text = _ANSI.sub("", text)
    text = "\n".join(line for line in text.split("\n") if not _progress(line))
    text = _ISO.sub("<time>", text)
    text = _STAMP.sub("<time>", text)
    text = _CLOCK.sub("<clock>", text)
    text = _SECONDS.sub("<secs>", text)
    text = _PORT.sub(r"\1:<port>", text)
    text = _PID.sub("process <pid>", text)
    text = re.sub(r"\b(batch_|file-)[0-9a-f]{6,}", r"\1<id>", text)  # ids the Batch API draws at random
    text = re.sub(r"[ \t]+", " ", text)  # table widths follow the widths of normalised values
    text = re.sub(r"[─━═┄]+", "─", text)
    return "\n".join(line.strip() for line in text.strip("\n").split("\n"))


# ------------------------------------------------------------------------------ running


def environment(
    tmp: Path, demo_spec: str, demo_url: str, web_url: str, rule_specs: dict[str, str] | None = None
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_TOKEN")) and k != "NEWSAPI_KEY"}
    env.update({f"CC_{rule.upper()}_MODEL": spec for rule, spec in (rule_specs or {}).items()})
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        CC_DEMO_MODEL=demo_spec,
        CC_DEMO_URL=demo_url,
        CC_WEB_URL=web_url,
        CC_CACHE_DIR=str(tmp / "cache"),
        COLUMNS="160",
        TERM="dumb",
        NO_COLOR="1",
        PYTHONUNBUFFERED="1",
        PYTHONHASHSEED="0",
    )
    return env


def prepare(tmp: Path) -> None:
    tmp.mkdir(parents=True, exist_ok=True)
    link = tmp / "consistency"
    if not link.exists():
        link.symlink_to(ROOT / "consistency", target_is_directory=True)


_EXPORT = re.compile(r"^export ([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def run_command(command: str, tmp: Path, env: dict[str, str]) -> str:
    """Run one command as a user would in bash; ``export`` lines persist for the page's later commands."""
    if (found := _EXPORT.match(command.strip())) and "$(" not in command:
        value = found.group(2).strip().strip("'\"")
        env[found.group(1)] = re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m.group(1), ""), value)
        return ""
    proc = subprocess.run(
        ["bash", "-c", command],
        cwd=tmp,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )
    return proc.stdout
