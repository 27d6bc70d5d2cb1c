"""The report's "Adversarial search" section, for ``cc attack`` directories (their ``attack.json`` summary).

Per attack: what was spent, the headline comparison with uniform sampling at the same budget, the
violation distribution per check (returned vs uniform), which families paid off, and the most
violated tuples with every answer. Self-contained HTML (the page's table classes), no figures.
"""

from __future__ import annotations

import html
from collections.abc import Iterable

from ..store.records import AttackSummary

SECTION = ("attack", "Adversarial search")


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _n(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _table(head: list[str], rows: Iterable[list[object]]) -> str:
    th = "".join(f'<th class="{"text" if i == 0 else ""}">{_e(h)}</th>' for i, h in enumerate(head))
    body = "".join(
        "<tr>" + "".join(f'<td class="{"text" if i == 0 else "num"}">{_e(c)}</td>' for i, c in enumerate(r)) + "</tr>"
        for r in rows
    )
    return f'<div class="scroll"><table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>'


def attack_section(attacks: list[tuple[str, AttackSummary]], number: int) -> str:
    """``attacks``: (run name, summary) pairs."""
    out = [f'<section id="attack" data-section="attack"><h2>{number}. Adversarial search</h2>']
    for name, s in attacks:
        f = s.forecasts
        out.append(f'<div class="attack" data-run="{_e(name)}"><h3>{_e(name)}</h3>')
        spent = f"search {f.search}/{s.budget} forecasts"
        if f.baseline is not None:
            spent += f", uniform baseline {f.baseline}"
        ratio = s.attack_over_random
        verdict = (
            f"{s.found_above_threshold} returned tuple(s) above the threshold ({s.threshold:g})"
            if s.found_above_threshold
            else f"nothing found above the threshold ({s.threshold:g})"
        )
        out.append(
            f"<p>{_e(spent)}; {_e(verdict)}. Mean violation of the returned tuples "
            f"<b>{_n(s.attack_mean_violation)}</b> against <b>{_n(s.random_mean_violation)}</b> for the most "
            f"violated uniformly sampled ones (ratio {'—' if ratio is None else f'{ratio:.1f}×'}).</p>"
        )
        rows = []
        for check, row in s.per_check.items():
            a, u = row.found, row.uniform
            rows.append([check, a.n, _n(a.mean), _n(a.max), a.above_threshold, u.n, _n(u.mean), _n(u.max),
                         u.above_threshold])  # fmt: skip
        head = ["check", "returned", "mean", "max", "above", "uniform", "mean", "max", "above"]
        out.append("<h4>Violation per check: returned vs uniform sampling</h4>" + _table(head, rows))
        rows = [
            [fam, r.tuples, r.forecasts, _n(r.mean_violation), r.above_threshold, r.returned, r.rejected]
            for fam, r in s.families.items()
        ]
        head = ["family", "tuples", "forecasts", "mean violation", "above", "returned", "rejected"]
        out.append("<h4>Families: what paid off</h4>" + _table(head, rows))
        out.append("<h4>Most violated tuples</h4><ol>")
        for top in s.top:
            fields = "".join(f"<li>{_e(r.field)} = {_e(r.shown())}: {_e(r.title)}</li>" for r in top.fields)
            out.append(
                f"<li>{_e(top.check)}, violation {_n(top.violation)} ({_e(top.family)}"
                f"{', ' + _e(top.how) if top.how else ''})<ul>{fields}</ul></li>"
            )
        out.append("</ol></div>")
    out.append("</section>")
    return "\n".join(out)
