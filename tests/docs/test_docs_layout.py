"""The documentation site as a reader sees it, in headless Chromium: cc's output tables fit a 1,400 px window,
and the CLI reference never breaks an option's name across lines (docs/stylesheets/extra.css)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.test_docs_site import ROOT, _require_mkdocs
from tests.report.test_report import browser  # noqa: F401  (the fixture: headless Chromium through chromedriver)

WIDTH = 1400
#: Pages with cc's widest output tables (up to 146 columns) and the generated CLI reference.
TABLE_PAGES = ["tutorials/paper-tables", "guides/arbitrage", "guides/batches", "getting-started", "guides/ranking"]

#: Per code block holding a box-drawn table: its widest table line in pixels, and the room the block has.
_TABLE_WIDTHS = """
const out = [];
for (const code of document.querySelectorAll('.md-typeset pre > code')) {
  const lines = code.innerText.split('\\n').filter(line => /[┃┏┗]/.test(line));
  if (!lines.length) continue;
  const probe = document.createElement('span');
  probe.textContent = '─'.repeat(100);
  code.appendChild(probe);
  const perChar = probe.getBoundingClientRect().width / 100;
  probe.remove();
  const style = getComputedStyle(code);
  const room = code.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  out.push([Math.max(...lines.map(line => line.length)), Math.round(perChar * Math.max(...lines.map(l => l.length))),
            Math.floor(room)]);
}
return out;
"""
#: First-column names of the CLI reference's tables that the browser laid out on more than one line.
_BROKEN_NAMES = """
return [...document.querySelectorAll('.md-typeset td:first-child code')]
  .filter(code => code.getClientRects().length > 1).map(code => code.innerText);
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    _require_mkdocs()
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


def _open(browser, site: Path, page: str) -> None:  # noqa: F811
    from selenium.webdriver.support.ui import WebDriverWait

    browser.set_window_size(WIDTH, 1000)
    browser.get((site / page / "index.html").as_uri())
    # get() can return before a file:// page has finished parsing (seen under load): wait for it
    WebDriverWait(browser, 60).until(lambda b: b.execute_script("return document.readyState") == "complete")


@pytest.mark.parametrize("page", TABLE_PAGES)
def test_output_tables_fit_a_1400_px_window(browser, site, page):  # noqa: F811
    _open(browser, site, page)
    widths = browser.execute_script(_TABLE_WIDTHS)
    assert widths, f"{page} has no box-drawn table: the page list is out of date"
    cut = [(columns, needed, room) for columns, needed, room in widths if needed > room]
    assert not cut, f"{page}: tables (columns, px needed, px of room) cut at {WIDTH} px: {cut}"


def test_cli_reference_keeps_option_names_whole(browser, site):  # noqa: F811
    _open(browser, site, "reference/cli")
    names = browser.execute_script("return document.querySelectorAll('.md-typeset td:first-child code').length")
    assert names > 100, names  # every command's options are there
    broken = browser.execute_script(_BROKEN_NAMES)
    assert not broken, f"option names broken across lines at {WIDTH} px: {broken[:10]}"


def test_cli_reference_shows_choices_as_typed_and_ranges_in_words():
    """Choices were upper-cased (AUTO|LLM|TEMPLATE, which cc rejects) and a bounded int read "INT RANGE"."""
    sys.path.insert(0, str(ROOT / "docs" / "hooks"))
    try:
        from cli_reference import cli_reference
    finally:
        sys.path.remove(str(ROOT / "docs" / "hooks"))
    text = cli_reference()
    assert "| `--instantiator` `auto|llm|template` | auto |" in text
    assert "| `--keep`, `-k` `INT` | 20 | Most violated tuples returned. At least 1. |" in text
    assert "RANGE" not in text and "AUTO|" not in text
