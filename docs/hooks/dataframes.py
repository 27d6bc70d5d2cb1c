"""The DataFrame reference, generated from ``consistency.analysis``'s column declarations (so it cannot drift).

As an MkDocs hook (``hooks:`` in mkdocs.yml) it replaces the marker ``<!-- dataframe-columns -->`` in a page
with one table per frame function: every column's name, its type in pandas and in polars, and what it
holds. Run as a script (``python docs/hooks/dataframes.py``) it prints the same Markdown.
"""

from __future__ import annotations

from typing import Any

MARKER = "<!-- dataframe-columns -->"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def dataframe_reference() -> str:
    from consistency.analysis import DTYPES, FRAMES

    out = []
    for name, columns in FRAMES.items():
        function = name.split("(")[0]
        out.append(f"### `{name}` {{ #{function.replace('_', '-')}{'-text' if '(' in name else ''} }}\n")
        out.append("| column | pandas | polars | meaning |\n|---|---|---|---|")
        for c in columns:
            pandas, polars = DTYPES[c.dtype]
            out.append(f"| `{c.name}` | `{pandas}` | `{polars}` | {_cell(c.meaning)} |")
        out.append("")
    return "\n".join(out)


def on_page_markdown(markdown: str, **_: Any) -> str:
    return markdown.replace(MARKER, dataframe_reference()) if MARKER in markdown else markdown


if __name__ == "__main__":
    print(dataframe_reference())
