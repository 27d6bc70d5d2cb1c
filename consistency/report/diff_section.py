"""The report's diff section (``cc report A B --diff``): run B against run A, tuple by tuple, as ``cc diff``."""

from __future__ import annotations

from html import escape
from pathlib import Path

from ..evaluation.diff import DiffResult


def diff_html(result: DiffResult) -> str:
    """One self-contained ``<section>``: the paired table and the tuples that changed most."""
    what = "Brier score" if result.a.kind == "ground_truth" else f"{result.metric} violation"
    ci = f"{100 * (1 - result.level):g}% CI"
    head = ["", "n", "A", "B", "B − A", ci, f"p ({result.test})", "better / worse / same"]
    rows = []
    per_group = result.level / max(1, len(result.groups))
    for name, d in [*result.groups.items(), ("overall", result.overall)]:
        cut = result.level if name == "overall" else per_group
        verdict = "worse" if d.significantly_worse(cut, result.test) else ""
        verdict = verdict or ("better" if d.significantly_better(cut, result.test) else "")
        cells = [
            name,
            str(d.n),
            _num(d.mean_a),
            _num(d.mean_b),
            _num(d.diff, signed=True),
            "–" if d.ci_low is None else f"[{d.ci_low:+.4f}, {d.ci_high:+.4f}]",
            f"{d.p(result.test):.3g}",
            f"{d.better} / {d.worse} / {d.same}",
        ]
        cls = f' class="{verdict}"' if verdict else ""
        rows.append(f"<tr{cls}>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + f"<td>{verdict}</td></tr>")
    out = [
        '<section id="diff" data-section="diff"><h2>Run B against run A</h2>',
        f"<p>A: {escape(str(result.a.path))} ({escape(result.a.label)}); "
        f"B: {escape(str(result.b.path))} ({escape(result.b.label)}). Mean {escape(what)}, lower is better; "
        "B − A &gt; 0 means B is worse.</p>",
    ]
    out += [f"<p class='note'>{escape(note)}</p>" for note in result.notes]
    out.append("<table><thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "<th></th></tr></thead>")
    out.append("<tbody>" + "".join(rows) + "</tbody></table>")
    if result.changed:
        out.append("<h3>Changed most</h3><ol>")
        for c in result.changed:
            answers = "".join(
                f"<li>{escape(f)}: {pa:.3f} → {pb:.3f} — {escape(t)}</li>"
                for f, t, pa, pb in zip(c.fields, c.titles, c.probs_a, c.probs_b, strict=True)
            )
            out.append(
                f"<li>{escape(c.group)} {c.score_a:.4f} → {c.score_b:.4f} ({c.change:+.4f})<ul>{answers}</ul></li>"
            )
        out.append("</ol>")
    out.append("</section>")
    return "".join(out)


def add_to_report(page: Path, section: str) -> None:
    """Put ``section`` at the end of a written report's main content."""
    html = page.read_text(encoding="utf-8")
    at = html.rfind("</main>")
    at = at if at >= 0 else html.rfind("</body>")
    page.write_text(html[:at] + section + html[at:] if at >= 0 else html + section, encoding="utf-8")


def _num(value: float | None, signed: bool = False) -> str:
    return "–" if value is None else (f"{value:+.4f}" if signed else f"{value:.4f}")
