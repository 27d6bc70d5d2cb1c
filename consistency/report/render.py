"""The report as one self-contained HTML page: the template (package data) filled with sections.

Everything is inline (CSS in the template, figures as SVG), nothing is fetched when the page is
opened, and no script is needed: collapsible parts are ``<details>`` elements.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from datetime import UTC, datetime
from importlib import resources
from string import Template

import numpy as np

from .. import __version__
from ..store.layout import SUMMARY
from . import figures
from .attack_section import SECTION as ATTACK_SECTION
from .attack_section import attack_section
from .compare import Comparison, by_depth
from .distributions import caption as tuple_caption
from .distributions import draw as draw_tuple
from .gather import METRICS, CheckResult, Run, WorstTuple

SECTIONS = (
    ("summary", "Summary"),
    ("consistency", "Consistency"),
    ("accuracy", "Accuracy"),
    ("comparison", "Comparison"),
    ("arbitrage", "By depth"),
    ATTACK_SECTION,
)


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def num(value: float | None, digits: int = 4) -> str:
    if value is None or not np.isfinite(value):
        return "—"
    return f"{value:.{digits}f}"


def pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _interval(score) -> tuple[float, float] | None:
    return None if score.low is None else (score.low, score.high)


def ci(interval: Iterable[float] | None, digits: int = 4) -> str:
    if not interval:
        return ""
    low, high = interval
    return f' <span class="ci">[{num(low, digits)}, {num(high, digits)}]</span>'


def table(head: list[str] | None, rows: Iterable[list[str]], cls: str = "", text_cols: int = 1) -> str:
    """Cells are HTML already (callers escape); the first ``text_cols`` columns are left-aligned."""
    th = "".join(f'<th class="{"text" if i < text_cols else ""}">{h}</th>' for i, h in enumerate(head or []))
    thead = f"<thead><tr>{th}</tr></thead>" if head else ""
    body = "".join(
        "<tr>"
        + "".join(f'<td class="{"text" if i < text_cols else "num"}">{c}</td>' for i, c in enumerate(r))
        + "</tr>"
        for r in rows
    )
    return f'<div class="scroll"><table class="{cls}">{thead}<tbody>{body}</tbody></table></div>'


def figure(drawn: figures.Drawn) -> str:
    return (
        f'<figure id="fig-{esc(drawn.name)}" data-figure="{esc(drawn.name)}">{drawn.svg}'
        f"<figcaption>{drawn.caption}</figcaption></figure>"
    )


def cut_note(shown: int, total: int, what: str, where: str) -> str:
    if total <= shown:
        return ""
    return (
        f'<p class="note" data-sampled="true">Showing the first {shown} of {total} {what}; all are in {esc(where)}.</p>'
    )


class Page:
    """Builds the page section by section; figures go through one :class:`figures.Figures`."""

    def __init__(self, runs: list[Run], comparison: Comparison | None, figs: figures.Figures, top: int) -> None:
        self.runs = runs
        self.comparison = comparison
        self.figs = figs
        self.top = top
        self.slugs = {id(r): f"run{i + 1}" for i, r in enumerate(runs)}

    def html(self, title: str) -> str:
        parts = [self.summary(), self.consistency(), self.accuracy()]
        shown = {"summary", "consistency", "accuracy"}
        if self.comparison is not None:
            parts.append(self.compare())
            shown.add("comparison")
        groups = by_depth(self.runs)
        if groups:
            parts.append(self.depths(groups))
            shown.add("arbitrage")
        attacks = [(r.name, r.attack) for r in self.runs if r.attack]
        if attacks:
            parts.append(attack_section(attacks, len(parts) + 1))
            shown.add(ATTACK_SECTION[0])
        sections = [(sid, label) for sid, label in SECTIONS if sid in shown]
        nav = " ".join(f'<a href="#{sid}">{esc(label)}</a>' for sid, label in sections)
        template = Template(resources.files(__package__).joinpath("template.html").read_text(encoding="utf-8"))
        stamp = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        subtitle = f"{len(self.runs)} run(s) · made {stamp} by consistency {__version__} (cc report)"
        return template.substitute(
            title=esc(title), subtitle=esc(subtitle), nav=nav, body="\n".join(parts), version=esc(__version__)
        )

    # ------------------------------------------------------------------ 1. summary
    def summary(self) -> str:
        out = ['<section id="summary" data-section="summary"><h2>1. Summary per run</h2><div class="runs">']
        for run in self.runs:
            slug = self.slugs[id(run)]
            rows = [["source", esc(run.source)], ["path", f"<code>{esc(run.path)}</code>"]]
            rows += [[esc(k), esc(v)] for k, v in run.info.items()]
            if run.checks:
                scored = sum(c.scored for c in run.checks)
                rows.append(["tuples scored", f"{scored} in {len(run.checks)} checks"])
            if run.accuracy is not None:
                rows.append(["questions scored", f"{run.accuracy.n} resolved ({run.accuracy.unresolved} unresolved)"])
            rows.append(["failures", f'<span class="{"fail" if run.n_failures else ""}">{run.n_failures}</span>'])
            rows.append(
                ["unscorable lines", f'<span class="{"fail" if run.n_unscorable else ""}">{run.n_unscorable}</span>']
            )
            out.append(f'<div class="run" id="{slug}" data-run="{esc(run.name)}"><h3>{esc(run.name)}</h3>')
            out.append(table(None, rows, "kv", 2))
            if run.n_failures:
                out.append(
                    f'<details class="failures" open><summary>{run.n_failures} failed question(s), with reasons'
                    "</summary>"
                    + cut_note(len(run.failures), run.n_failures, "failures", str(run.path / SUMMARY))
                    + '<ul class="list">'
                    + "".join(f"<li>{esc(f)}</li>" for f in run.failures)
                    + "</ul></details>"
                )
            if run.n_unscorable:
                out.append(
                    f'<details class="unscorable" open><summary>{run.n_unscorable} line(s) that could not be scored'
                    "</summary>"
                    + cut_note(len(run.unscorable), run.n_unscorable, "unscorable lines", str(run.path))
                    + '<ul class="list">'
                    + "".join(f"<li>{esc(e)}</li>" for e in run.unscorable)
                    + "</ul></details>"
                )
            out.append("</div>")
        out.append("</div></section>")
        return "\n".join(out)

    @staticmethod
    def gaps_note(runs: list[Run]) -> str:
        """Which run has no value for which check, and why, in words under the figure (and as data for tests):
        the means over checks of such runs average different checks."""
        gaps = figures.gaps(runs)
        if not gaps:
            return ""
        items = "".join(
            f'<li data-run="{esc(name)}">{esc(name)}: '
            + "; ".join(
                f'<span data-check="{esc(check)}" data-why="{esc(why)}">{esc(check)} ({esc(why)})</span>'
                for check, why in missing.items()
            )
            + "</li>"
            for name, missing in gaps.items()
        )
        return (
            f'<div class="note" data-gaps="{sum(len(m) for m in gaps.values())}"><p>Checks without a value '
            "(<i>not run</i>: the run did not include the check; <i>none scored</i>: no tuple of it could be "
            "scored). The means over checks of these runs leave them out, so they average different checks."
            f"</p><ul>{items}</ul></div>"
        )

    # ------------------------------------------------------------------ 2. consistency
    def consistency(self) -> str:
        out = ['<section id="consistency" data-section="consistency"><h2>2. Consistency</h2>']
        runs = [r for r in self.runs if r.checks]
        if not runs:
            out.append('<p class="note">No run among the inputs holds consistency results (tuple forecasts).</p>')
        else:
            out.append(
                '<p class="note">Arbitrage: the profit (nats) an arbitrageur is guaranteed trading against the '
                "forecasts; a tuple fails above 0.01. Frequentist: standard deviations away from a coherent "
                "forecaster; fails above 0.129. Means with bootstrap 95% intervals; the aggregate is the mean "
                "over checks.</p>"
            )
        for run in runs:
            slug = self.slugs[id(run)]
            out.append(f'<div class="run" data-run="{esc(run.name)}"><h3>{esc(run.name)}</h3>')
            out.append(self.check_table(run))
            drawn = self.figs.render(
                figures.violations(run.checks),
                f"{slug}_violations",
                f"Distribution of the violations of every scored tuple, per check ({esc(run.name)}).",
            )
            out.append(figure(drawn))
            out.append(f"<h4>The {self.top} largest violations per check, written out</h4>")
            total = sum(c.scored for c in run.checks)
            shown = sum(len(c.worst) for c in run.checks)
            out.append(
                f'<p class="note" data-sampled="{str(shown < total).lower()}">The page shows at most {self.top} '
                f"tuple(s) per check ({shown} of {total} scored tuples); the tables and distributions above use "
                "all of them. Prices are what the arbitrageur moves each market to; the profit is guaranteed "
                "whatever the questions resolve to.</p>"
            )
            for check in run.checks:
                out.append(self.worst(check, slug))
            out.append("</div>")
        out.append("</section>")
        return "\n".join(out)

    def check_table(self, run: Run) -> str:
        rows = []
        for c in run.checks:
            a, f = c.stats["default"], c.stats["frequentist"]
            rows.append(
                [
                    esc(c.check.name),
                    str(c.scored),
                    f'<span class="{"fail" if c.unscorable else ""}">{c.unscorable}</span>',
                    num(a["avg_violation"]) + ci(a.get("ci95")),
                    num(a.get("median_violation")),
                    pct(a["fraction_violated"]),
                    num(f["avg_violation"]) + ci(f.get("ci95")),
                    pct(f["fraction_violated"]),
                ]
            )
        agg = {m: run.aggregate(m) for m in METRICS}
        frac = {m: run.aggregate(m, "fraction_violated") for m in METRICS}
        rows.append(
            [
                "<b>aggregate</b>",
                str(sum(c.scored for c in run.checks)),
                str(sum(c.unscorable for c in run.checks)),
                f"<b>{num(agg['default'])}</b>",
                "",
                pct(frac["default"]),
                f"<b>{num(agg['frequentist'])}</b>",
                pct(frac["frequentist"]),
            ]
        )
        head = [
            "check",
            "n",
            "unscorable",
            "arbitrage mean [95% CI]",
            "median",
            "violated",
            "frequentist mean [95% CI]",
            "violated",
        ]
        return table(head, rows, "checks")

    def worst(self, c: CheckResult, slug: str = "run") -> str:
        if not c.worst:
            return (
                f'<details class="worst" data-check="{esc(c.check.name)}"><summary>{esc(c.check.name)}: '
                "no tuple with a positive violation</summary></details>"
            )
        condition = "; ".join(c.check.condition_texts)
        body = "".join(self.tuple_html(c, t, slug) for t in c.worst)
        return (
            f'<details class="worst" data-check="{esc(c.check.name)}"><summary>{esc(c.check.name)}: '
            f"{len(c.worst)} worst tuple(s), up to {num(c.worst[0].profit)} nats</summary>"
            f'<p class="note">A coherent forecaster satisfies <code>{esc(condition)}</code>.</p>{body}</details>'
        )

    def tuple_html(self, c: CheckResult, t: WorstTuple, slug: str = "run") -> str:
        verdict = '<span class="pass">passes</span>' if t.passed else '<span class="fail">fails</span>'
        rows = [
            [
                f"<code>{esc(r.field)}</code>",
                esc(r.meaning),
                esc(r.title),
                num(r.prob, 3),
                num(r.price, 3) if r.price is not None else "—",
            ]
            for r in t.rows
        ]
        picture = ""
        if t.picture is not None and t is c.worst[0]:  # the worst tuple of a multiple-choice or numeric check
            name = f"{slug}_{c.check.class_name}_line{t.line}"
            picture = figure(self.figs.render(draw_tuple(t.picture), name, esc(tuple_caption(c.check, t.picture))))
        return (
            f'<div class="tuple"><p>Line {t.line}: guaranteed profit <b>{num(t.profit)}</b> nats, '
            f"frequentist {num(t.frequentist, 3)}: {verdict}.</p>"
            + picture
            + table(["field", "means", "question", "forecast", "coherent price"], rows, "tuple", 3)
            + "</div>"
        )

    # ------------------------------------------------------------------ 3. accuracy
    def accuracy(self) -> str:
        out = ['<section id="accuracy" data-section="accuracy"><h2>3. Accuracy</h2>']
        runs = [r for r in self.runs if r.accuracy is not None]
        if not runs and not any(r.typed for r in self.runs):
            out.append('<p class="note">No ground-truth run among the inputs (resolved questions scored).</p>')
        elif runs:
            out.append(
                '<p class="note">Brier score (lower is better) and log score in bits (the paper\'s unit, lower is '
                "better) with bootstrap 95% intervals; calibration error over 10 bins weighted by their share; the "
                "Murphy decomposition groups forecasts by their exact values, so reliability − resolution + "
                "uncertainty equals the Brier score.</p>"
            )
        for run in runs:
            acc = run.accuracy
            assert acc is not None
            m = acc.murphy
            rows = [
                [
                    str(acc.n),
                    num(acc.brier) + ci(acc.brier_ci),
                    num(acc.log_bits) + ci(acc.log_ci),
                    num(acc.base_rate, 3),
                    num(acc.calibration_error),
                    num(m.reliability),
                    num(m.resolution),
                    num(m.uncertainty),
                ]
            ]
            head = [
                "questions",
                "Brier [95% CI]",
                "log score, bits [95% CI]",
                "base rate",
                "calibration error",
                "reliability",
                "resolution",
                "uncertainty",
            ]
            out.append(f'<div class="run" data-run="{esc(run.name)}"><h3>{esc(run.name)}</h3>')
            out.append(table(head, rows, "accuracy", 0))
            drawn = self.figs.render(
                figures.reliability(acc, run.name),
                f"{self.slugs[id(run)]}_reliability",
                "Reliability diagram: observed frequency of YES against the mean forecast in each bin of 0.1; "
                "the numbers are the forecasts in each bin, also drawn below.",
            )
            out.append(figure(drawn))
            t = acc.calibration
            edges = t.edges if t.edges is not None else np.linspace(0, 1, t.n_bins + 1)
            bins = [
                [
                    f"{edges[i]:.1f}–{edges[i + 1]:.1f}",
                    str(int(t.count[i])),
                    num(t.mean_forecast[i], 3),
                    num(t.frequency[i], 3),
                ]
                for i in range(t.n_bins)
            ]
            out.append(
                "<details><summary>Calibration table</summary>"
                + table(["bin", "forecasts", "mean forecast", "observed frequency"], bins, "calibration")
                + "</details></div>"
            )
        out += self.typed_scores()
        out.append("</section>")
        return "\n".join(out)

    def typed_scores(self) -> list[str]:
        """Multiple-choice, numeric and date questions: one table per type, a row per run, its proper scores."""
        from ..accuracy.typed import LABELS, SCORES_BY_TYPE

        out = []
        for kind, names in SCORES_BY_TYPE.items():
            rows = []
            for run in self.runs:
                for board in (b for b in run.typed if b.question_type == kind):
                    for s in board.standings:
                        scores = [num(s.scores[n].mean) + ci(_interval(s.scores[n])) for n in names]
                        rows.append([esc(run.name), str(s.n_questions), *scores])
            if rows:
                out.append(f"<h3>{esc(kind.replace('_', ' ').capitalize())} questions</h3>")
                head = ["run", "questions", *(f"{esc(LABELS[n])} [95% CI]" for n in names)]
                out.append(table(head, rows, "accuracy typed", 1))
        if out:
            out.insert(
                0,
                '<p class="note">Multiple-choice, numeric and date questions, scored by their own proper scores '
                "(lower is better; logs in bits): the multi-class Brier and log score of the option that happened; "
                "the CRPS and the log of the density at the outcome, with bootstrap 95% intervals.</p>",
            )
        return out

    # ------------------------------------------------------------------ 4. several runs
    def compare(self) -> str:
        comp = self.comparison
        assert comp is not None
        out = ['<section id="comparison" data-section="comparison"><h2>4. Comparison of runs</h2>']
        out += self.leaderboard(comp)
        runs = [r for r in self.runs if r.checks]
        if runs:
            out.append("<h3>Per check, side by side</h3>")
            drawn = self.figs.render(
                figures.checks_by_run(runs),
                "checks_by_run",
                "Mean violation per check and run, with bootstrap 95% intervals; a flat mark labelled 0 is a "
                "mean of 0, a hatched empty slot a check with no value.",
            )
            out.append(figure(drawn))
            out.append(self.gaps_note(runs))
        out += self.versus(comp)
        out.append("</section>")
        return "\n".join(out)

    def leaderboard(self, comp: Comparison) -> list[str]:
        """The runs ranked (consistency, then Brier), and the runs left without a partner."""
        out = []
        rows = []
        for i, e in enumerate(comp.entries, start=1):
            cons = e.consistency
            acc = e.accuracy.accuracy if e.accuracy is not None else None
            rows.append(
                [
                    str(i),
                    esc(e.name),
                    num(cons.aggregate("default")) if cons else "—",
                    num(cons.aggregate("frequentist")) if cons else "—",
                    str(sum(c.scored for c in cons.checks)) if cons else "—",
                    num(acc.brier) + ci(acc.brier_ci) if acc else "—",
                    num(acc.log_bits) if acc else "—",
                    str(acc.n) if acc else "—",
                ]
            )
        out.append("<h3>Leaderboard</h3>")
        out.append(
            '<p class="note">Most consistent first (mean over checks of the mean arbitrage violation), then lowest '
            "Brier. Runs of one forecaster share a row: same class and configuration when both record them, "
            "else the same name (case, - and _, and the paper's split suffixes ignored) or the same NAME= on the "
            "command line; <code>cc correlate</code> pairs by the same rule.</p>"
        )
        if comp.unpaired:
            items = "".join(f"<li><code>{esc(path)}</code>: {esc(why)}</li>" for path, why in comp.unpaired.items())
            n = len(comp.unpaired)
            out.append(
                f'<details class="note" data-unpaired="{n}"><summary>{n} run(s) without a partner</summary>'
                f"<ul>{items}</ul></details>"
            )
        out.append(
            table(
                [
                    "#",
                    "forecaster",
                    "arbitrage (mean over checks)",
                    "frequentist",
                    "tuples",
                    "Brier [95% CI]",
                    "log score (bits)",
                    "questions",
                ],
                rows,
                "leaderboard",
                2,
            )
        )
        return out

    def versus(self, comp: Comparison) -> list[str]:
        """Each check's violation against the Brier score across forecasters: a table and a figure per metric."""
        out = []
        out.append("<h3>Consistency versus accuracy</h3>")
        if comp.why_no_correlation:
            out.append(
                f'<p class="note" data-correlation="none">No correlation: {esc(comp.why_no_correlation)}. It needs '
                "forecasters with both a tuple run and a ground-truth run (pair them with NAME=PATH).</p>"
            )
        else:
            out.append(
                '<p class="note">Pearson correlation across forecasters of each check\'s mean violation with the Brier '
                f"score, with bootstrap 95% intervals (as <code>cc correlate</code>); forecasters with Brier above "
                f"{comp.max_brier} are left out, as in the consistency-checks paper.</p>"
            )
            checks = list(comp.correlations["default"])
            rows = []
            for check in checks:
                cells = [esc(check)]
                for metric in METRICS:
                    r = comp.correlations[metric][check]
                    cells.append(
                        "—"
                        if not np.isfinite(r.r)
                        else f"{r.r:+.2f}" + ci((r.low, r.high) if np.isfinite(r.low) else None, 2)
                    )
                cells.append(str(comp.correlations["default"][check].n))
                rows.append(cells)
            out.append(
                table(["check", "arbitrage r [95% CI]", "frequentist r [95% CI]", "forecasters"], rows, "versus")
            )
            for metric in METRICS:
                drawn = self.figs.render(
                    figures.versus(comp, metric),
                    f"versus_{metric}",
                    f"Each forecaster's mean {figures.METRIC_LABEL[metric]} per check against its Brier score.",
                )
                out.append(figure(drawn))
        return out

    # ------------------------------------------------------------------ 5. ArbitrageForecaster
    def depths(self, groups: dict[str, dict[int, Run]]) -> str:
        out = [
            '<section id="arbitrage" data-section="arbitrage"><h2>5. ArbitrageForecaster: violation by depth</h2>',
            '<p class="note">Runs of the ArbitrageForecaster that differ only in depth, side by side: each check\'s '
            "mean violation and the mean over checks at each depth.</p>",
        ]
        for i, (label, series) in enumerate(groups.items(), start=1):
            depths = sorted(series)
            names = [c.check.name for c in series[depths[0]].checks]
            rows = []
            for d in depths:
                by_name = {c.check.name: c.stats["default"]["avg_violation"] for c in series[d].checks}
                rows.append([str(d), *(num(by_name.get(n)) for n in names), num(series[d].aggregate("default"))])
            out.append(f"<h3>{esc(label) or 'ArbitrageForecaster'}</h3>")
            out.append(table(["depth", *map(esc, names), "mean over checks"], rows, "depth"))
            drawn = self.figs.render(
                figures.depth(series, label),
                f"arbitrage_depth_{i}",
                "Mean arbitrage (left) and frequentist (right) violation per check against depth.",
            )
            out.append(figure(drawn))
        out.append("</section>")
        return "\n".join(out)
