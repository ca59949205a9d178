"""The HTML page of `rebench report`: one self-contained file (figures embedded as SVG)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

from rebench.analysis.budget import BudgetScore
from rebench.analysis.cost import (
    AXIS_LABELS,
    NOT_RECORDED,
    cell_text,
    columns,
    cost_axis,
    has_tokens,
    token_detail,
)
from rebench.analysis.humans import Fact, HumanReference
from rebench.analysis.report import PAPER_SETTING, Report
from rebench.analysis.table import ScoreScale
from rebench.analysis.units import format_duration

CSS = """
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d1d1f;margin:0;
 background:#f6f7f9}
main{max-width:1180px;margin:0 auto;padding:28px 32px 60px;background:#fff}
h1{font-size:28px;margin:0 0 4px}
h2{font-size:20px;margin:36px 0 8px;border-bottom:1px solid #e3e5e8;padding-bottom:4px}
.meta{color:#5f6368;font-size:13px}.note{color:#5f6368;font-size:13px;max-width:900px}
table{border-collapse:collapse;font-size:13px;margin:10px 0}
th,td{padding:5px 10px;border-bottom:1px solid #eceef1;text-align:right;white-space:nowrap}
th{background:#f3f4f6;font-weight:600;white-space:normal;vertical-align:bottom}td.l,th.l{text-align:left}
td small{color:#6b7280}td.h{background:#fafafa}.best{font-weight:700}
img.fig{max-width:100%;height:auto;display:block;margin:8px 0}
.scroll{overflow-x:auto}table.envs th{max-width:110px}
.cards{display:flex;gap:14px;flex-wrap:wrap;margin:16px 0}
.card{border:1px solid #e3e5e8;border-radius:8px;padding:10px 14px;min-width:150px}
.card b{display:block;font-size:22px}.card span{color:#5f6368;font-size:12px}
.warn{background:#fff7e6;border:1px solid #f5d48b;padding:8px 12px;border-radius:6px}
sup a{text-decoration:none;color:#2563eb}
.setting{border-left:4px solid #2563eb;background:#eff6ff;padding:8px 12px;margin:14px 0}
.setting.apart{border-color:#d97706;background:#fff7e6}
h2 .prof{font-size:14px;font-weight:500;color:#b45309;margin-left:8px}
"""


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def _cite(key: str, humans: HumanReference) -> str:
    keys = list(humans.sources)
    return f'<sup><a href="#src-{escape(key)}">[{keys.index(key) + 1}]</a></sup>'


def _cards(report: Report) -> str:
    table = report.table
    items = [
        (str(len(table.runs)), "runs"), (str(len(table.events())), "score events"),
        (str(len(table.env_ids())), "environments"), (str(len(table.agents())), "agents"),
        (", ".join(format_duration(t) for t in table.time_limits()) or "-", "time limits"),
    ]
    cells = "".join(f"<div class=card><b>{escape(v)}</b><span>{escape(k)}</span></div>"
                    for v, k in items)
    return f"<div class=cards>{cells}</div>"


def _cell(score: BudgetScore | None, top: bool) -> str:
    if score is None:
        return "<td>-</td>"
    star = "" if score.complete else "*"
    cls = ' class="best"' if top else ""
    return (f"<td><span{cls}>{score.mean:.2f}{star}</span> <small>[{score.lo:.2f}, "
            f"{score.hi:.2f}]<br>{escape(score.allocation)}</small></td>")


def budget_table(report: Report) -> str:
    """Agents x budgets: mean score@k, 95% interval and allocation; best per budget in bold."""
    index = {(s.agent, s.budget_s): s for s in report.curve}
    top = {b: max((s.mean for s in report.curve if s.budget_s == b), default=math.nan)
           for b in report.budgets}
    head = "".join(f"<th>T = {escape(format_duration(b))}</th>" for b in report.budgets)
    rows = []
    for agent in report.table.agents():
        cells = "".join(
            _cell(index.get((agent, b)), index.get((agent, b)) is not None
                  and index[(agent, b)].mean == top[b]) for b in report.budgets)
        rows.append(f"<tr><td class=l>{escape(agent)}</td>{cells}</tr>")
    body = "".join(rows)
    return f"<div class=scroll><table><tr><th class=l>agent</th>{head}</tr>{body}</table></div>"


def _env_head(env_id: str) -> str:
    """An environment id as a column head that may wrap at its underscores."""
    return "_<wbr>".join(escape(part) for part in env_id.split("_"))


def env_table(report: Report) -> str:
    """Agents x environments at the focus budget (agents as rows: a table with many agents
    grows down, not off the page), then the published human rows on the paper's scale."""
    envs = report.table.env_ids()
    head = "".join(f"<th>{_env_head(e)}</th>" for e in envs)
    rows = []
    for s in report.focus:
        fill = {e.env_id: e for e in report.focus_fill if e.agent == s.agent}
        by_env = {e.env_id: e for e in s.per_env}
        cells = []
        for env_id in envs:
            e = by_env.get(env_id) or fill.get(env_id)
            own = "" if env_id in by_env or e is None else \
                f"<br><small>own: {e.k} x {escape(format_duration(e.tau_s))}</small>"
            cells.append("<td>-</td>" if e is None else
                         f"<td>{e.score:.2f}<br><small>{e.lo:.2f}-{e.hi:.2f} n={e.n_runs}"
                         f"</small>{own}</td>")
        rows.append(f"<tr><td class=l>{escape(s.agent)}<br><small>{escape(s.allocation)}"
                    f"</small></td>{''.join(cells)}</tr>")
    humans = _human_rows(report, envs) if report.paper_comparable else ""
    return (f"<div class=scroll><table class=envs><tr><th class=l>agent<br><small>allocation"
            f"</small></th>{head}</tr>{''.join(rows)}{humans}</table></div>")


def _human_rows(report: Report, envs: list[str]) -> str:
    """The published human reference per environment (not runs of this report)."""
    refs = [report.humans.environments.get(e) for e in envs]
    best = "".join(f"<td class=h>{_fmt(r.best.value) if r and r.best else '-'}</td>"
                   for r in refs)
    mean = "".join(f"<td class=h>{_fmt(r.mean_normalized) if r else '-'}</td>" for r in refs)
    humans = report.humans
    best_src = next((r.best.source for r in refs if r and r.best), "paper_table5")
    mean_src = next((r.mean_raw.source for r in refs if r and r.mean_raw), "metr_runs")
    return (f"<tr><td class=\"l h\">human best, published{_cite(best_src, humans)}<br><small>"
            f"paper Table 5; {PAPER_SETTING}</small></td>{best}</tr>"
            f"<tr><td class=\"l h\">human mean 7-9 h, published{_cite(mean_src, humans)}<br>"
            f"<small>METR data, paper anchors; {PAPER_SETTING}</small></td>{mean}</tr>")


def humans_section(humans: HumanReference, apart: Sequence[str] = ()) -> str:
    """The human reference facts with numbered sources; `apart`: the profiles of this page
    whose runs are not comparable with them (said in the caption)."""
    groups = "".join(
        f"<tr><td class=l>{escape(g.group)}</td><td>{g.runs}</td><td>{g.mean.value:.2f}"
        f"{_cite(g.mean.source, humans)}</td></tr>" for g in humans.group_means)
    envs = []
    for env_id, e in humans.environments.items():
        ceiling = (f"{e.week_ceiling.low:.2f}-{e.week_ceiling.high:.2f}"
                   f"{_cite(e.week_ceiling.source, humans)}" if e.week_ceiling else "-")
        runs = f"{e.human_runs.value:.0f}{_cite(e.human_runs.source, humans)}" \
            if e.human_runs else "-"
        best = f"{e.best.value:.2f}{_cite(e.best.source, humans)}" if e.best else "-"
        raw = f"{e.mean_raw.value:g}{_cite(e.mean_raw.source, humans)}" if e.mean_raw else "-"
        envs.append(f"<tr><td class=l>{escape(env_id)}</td><td>{runs}</td><td>{best}</td>"
                    f"<td>{ceiling}</td><td>{raw}</td><td>{_fmt(e.mean_normalized)}</td></tr>")
    totals = _totals_sentence(humans)
    heads = "".join(f"<li>{escape(h.text)}{_cite(h.source, humans)}</li>"
                    for h in humans.headlines)
    sources = "".join(
        f'<li id="src-{escape(s.key)}">{escape(s.citation)}'
        + (f' <a href="{escape(s.url)}">{escape(s.url)}</a>' if s.url else "") + "</li>"
        for s in humans.sources.values())
    return f"""
<h2>Human experts (published reference: {PAPER_SETTING})</h2>
<p class=note>Facts from the paper and METR's released data (8-hour runs on the paper's H100
setup, the gpu setting), not runs of this report, all on the paper's normalized scale;
docs/human-reference.md in the rebench repository lists them with their sources. {totals}</p>
{_apart_note(apart)}
<table><tr><th class=l>human group (8 h)</th><th>runs</th><th>mean normalized</th></tr>{groups}
</table>
<table><tr><th class=l>environment</th><th>human runs</th><th>best score</th>
<th>one-week ceiling</th><th>mean raw 7-9 h</th><th>normalized (paper anchors)</th></tr>
{''.join(envs)}</table>
<p><b>Paper's headline comparisons</b></p><ul>{heads}</ul>
<p><b>Sources</b></p><ol class=note>{sources}</ol>"""


def _apart_note(apart: Sequence[str]) -> str:
    if not apart:
        return ""
    names = ", ".join(f"{p} profile" for p in apart)
    return (f"<p class=\"setting apart\">Not comparable with this page's {escape(names)} runs "
            "(a scaled-down setting: smaller models and data, a budget of minutes, other "
            "hardware), so they are listed here for context only and drawn on none of their "
            "charts.</p>")


def _totals_sentence(humans: HumanReference) -> str:
    def part(key: str, text: str) -> str:
        fact: Fact | None = humans.totals.get(key)
        return "" if fact is None else text.format(fact.value) + _cite(fact.source, humans)

    return " ".join(p for p in (
        part("runs", "{:.0f} eight-hour runs"), part("experts", "by {:.0f} experts;"),
        part("fraction_above_zero", "{:.0%} of runs scored above 0,"),
        part("fraction_at_least_one", "{:.0%} scored 1 or more."),
    ) if p)


def _figure(uri: str | None, alt: str, missing: str) -> str:
    return f'<img class=fig alt="{escape(alt)}" src="{uri}">' if uri else \
        f"<p class=note>(no figure: {escape(missing)})</p>"


def _trajectory_block(report: Report, figures: dict[str, Any], no_plot: str) -> str:
    """The trajectories figure, or a sentence saying why there is none."""
    if figures.get("trajectories"):
        return _figure(figures["trajectories"], "score over time", no_plot)
    if not report.table.runs or not figures:
        return _figure(None, "score over time", no_plot)
    return ("<p class=warn>No chart: every run here has a single score (its final one), so "
            "there is no score over working time to draw. Runs made with rebench log a score "
            "at the start, at each of the agent's scoring requests and at the end.</p>")


def cost_table(report: Report) -> str:
    """Per environment, agent and time limit: runs, and the median of each figure over the
    runs that recorded it; "not recorded" where none did (never 0)."""
    cols = columns(report.cost)
    head = "".join(f"<th>{escape(title)}</th>" for _, title in cols)
    rows = []
    for row in report.cost:
        cells = []
        for metric, _ in cols:
            value, note = cell_text(row, metric)
            lines = [note] if note else []
            if metric == "total_tokens":
                lines = [*token_detail(row), *lines]
            small = "".join(f"<br><small>{escape(line)}</small>" for line in lines)
            missing = " class=h" if row.medians[metric].value is None else ""
            cells.append(f"<td{missing}>{escape(value)}{small}</td>")
        usage = (f"{row.usage_recorded}" if row.usage_recorded == row.runs
                 else f"{row.usage_recorded} of {row.runs}")
        rows.append(f"<tr><td class=l>{_env_head(row.env_id)}</td><td class=l>"
                    f"{escape(row.agent)}</td><td>{escape(format_duration(row.time_limit_s))}"
                    f"</td><td>{row.runs}</td><td>{escape(usage)}</td>{''.join(cells)}</tr>")
    return (f"<div class=scroll><table class=cost><tr><th class=l>environment</th>"
            f"<th class=l>agent</th><th>time limit</th><th>runs</th><th>usage recorded</th>"
            f"{head}</tr>{''.join(rows)}</table></div>")


def cost_section(report: Report, figures: dict[str, Any], tag: str, no_plot: str) -> str:
    """The cost table and the score-versus-cost chart of one profile's runs."""
    if not report.cost:
        return ""
    table = report.table
    if all(r.cost is None for r in table.runs):
        return (f"<h2>Cost per run{tag}</h2><p class=note>Not recorded: these rows come from "
                "outside rebench (a CSV) and say nothing of what their runs used.</p>")
    older = sum(1 for r in table.runs if r.cost is None or not r.cost.usage_recorded)
    older_note = (f" {older} of {len(table.runs)} runs have no usage record (runs made "
                  f"before rebench recorded it, or external rows): their figures are "
                  f"\"{NOT_RECORDED}\", never 0, and they are not drawn." if older else "")
    token_note = ("" if has_tokens(report.cost) else " No run here recorded model tokens "
                  "(only Inspect agents' model calls are counted), so the table has no token "
                  "columns.")
    axis = cost_axis(table)
    figure = (_figure(figures["cost"], "score vs cost", no_plot) if figures.get("cost")
              else _figure(None, "score vs cost", "no run recorded the chart's cost"
                           if figures else no_plot))
    return f"""
<h2>Cost per run{tag}</h2>
<p class=note>What a run used, as its record says: the agent's CPU-seconds (its sandbox's
cgroup: every process it started, services run in it included; not counted under local
isolation), the official scorings' CPU-seconds and their number, the run's wall time (start to
last score) and, for Inspect agents, the model's tokens summed over its models and the dollars
at the user's price table. Each cell is the median over the row's runs that recorded it;
"k of n runs" under it where fewer did than the row's "usage recorded" count (CPU, scorings)
or its runs (wall time, tokens, dollars). GPU-seconds are not measured.{older_note}{token_note}</p>
{cost_table(report)}
<p class=note>Each run's final score against {escape(AXIS_LABELS[axis])}, one point per run,
one panel per environment{"" if axis == "agent_cpu_s" else
" (no run here recorded its agent's CPU-seconds, so wall time stands in)"}.</p>
{figure}"""


def _problems(problems: Iterable[str]) -> str:
    items = "".join(f"<li>{escape(p)}</li>" for p in problems)
    return f"<div class=warn><b>Left out:</b><ul>{items}</ul></div>" if items else ""


METHOD = """
<h2>Method</h2><ul class=note>
<li>A run's score at working time t is its best valid normalized score logged by t (the last valid
one for environments that count the last score, such as small_scaling_law); 0 when there is none.
Normalized: 0 = starting solution, 1 = reference solution, floored at 0.</li>
<li>score@k at a total budget T: the expected best of k = floor(T / tau) runs of time limit tau,
drawn with replacement from the agent's runs (closed form over sorted scores). Where the agent
cannot see its score (small_scaling_law) it cannot pick its best attempt, so the expected score is
the mean. Each agent gets the tau (among the limits it has runs for) with the highest mean over
environments; the allocation is printed as k x tau. * marks a mean over fewer environments
than the table holds.</li>
<li>Means weight environments equally. Intervals: percentile bootstrap, 95%, resampling runs within
each environment, allocation held fixed; seeded, so the page is reproducible.</li>
<li>Trajectories: each run's score so far, interpolated linearly in log working time between score
events, averaged over runs.</li></ul>"""


def setting_banner(report: Report) -> str:
    """Which profile and hardware the runs were taken on, and whether the paper's human
    experts may be read beside them (docs/report.md, "Profiles and the human baseline")."""
    setting = escape(report.setting())
    if not report.table.runs:
        return ""
    if not report.paper_comparable:
        return (f"<div class=\"setting apart\"><b>{setting}.</b> These runs are not "
                "comparable with the paper's human experts (8 hours, H100, gpu setting): the "
                f"{escape(report.profile)} profile is a scaled-down setting (smaller models and "
                "data, minutes of budget) whose 0 and 1 are its own starting and reference "
                "solutions, not the paper's. No human reference is drawn beside them.</div>")
    if report.profile == "":
        return (f"<div class=setting><b>{setting}.</b> The data does not say its profile; the "
                f"human marks are published numbers ({PAPER_SETTING}): compare only if these "
                "runs used that setting.</div>")
    return (f"<div class=setting><b>{setting}.</b> The paper's setting; the human marks are "
            f"published numbers ({PAPER_SETTING}), not runs of this report.</div>")


def _part(report: Report, figures: dict[str, Any], tag: str) -> str:
    """The charts and tables of one profile's runs."""
    table = report.table
    focus = format_duration(report.focus_budget_s)
    no_plot = ("no runs" if not table.runs else "no data" if figures
               else "matplotlib is not installed (pip install 'rebench[report]')")
    scale = table.scale
    if report.paper_comparable:
        star_note = f"The star is the paper's human mean at 8 h (published; {PAPER_SETTING})."
        bars_note = ("Black line: best human score (paper Table 5); diamond: METR's mean of "
                     f"7-9 h human runs normalized with the paper's anchors ({PAPER_SETTING}).")
    elif scale is ScoreScale.NORMALIZED:
        star_note = bars_note = (
            f"No human reference: the paper's experts ({PAPER_SETTING}) are not comparable "
            f"with runs on the {report.profile} profile.")
    else:
        star_note = bars_note = (
            f"These scores are {scale.label}, which cannot be converted to the paper's "
            "normalized score, so the paper's human reference (on the paper's scale) is not "
            "drawn here: see \"Human experts\" below.")
    return f"""{setting_banner(report)}{_cards(report)}
<h2>Score vs total time budget{tag}</h2>
<p class=note>Mean score over environments ({escape(scale.label)}) when an agent may spend a total
budget T on k independent runs of a time limit tau and keep the best. Bands: 95% bootstrap
intervals; hollow markers: not every environment covered. A line joins only points that average
the same environments. {star_note}</p>
{_figure(figures.get("budget"), "score vs budget", no_plot)}
{budget_table(report)}
<h2>Per environment at T = {escape(focus)}{tag}</h2>
<p class=note>Score@k ({escape(scale.label)}) at the agent's best allocation for
T = {escape(focus)}, with 95% intervals and the number of runs. Where that allocation has no runs
on an environment, the environment's own best allocation is shown ("own", hatched bars).
{bars_note}</p>
{_figure(figures.get("bars"), "per-environment scores", no_plot)}
{env_table(report)}
<h2>Score over working time{tag}</h2>
<p class=note>Mean score so far across runs of each agent and time limit.</p>
{_trajectory_block(report, figures, no_plot)}
{cost_section(report, figures, tag, no_plot)}"""


def render_html(reports: Report | Sequence[Report],
                figures: dict[str, Any] | Sequence[dict[str, Any]],
                integrity: str = "") -> str:
    """The whole page: one part per profile (build_reports), each with its own charts;
    `figures` are each part's (plots.all_figures); `integrity` is the runs' integrity
    section (HTML), if any."""
    parts = [reports] if isinstance(reports, Report) else list(reports)
    figs = [figures] if isinstance(figures, dict) else list(figures)
    first = parts[0]
    subtitle = f"<p>{escape(first.settings.title)}</p>" if first.settings.title else ""
    body = "".join(
        _part(r, f, f"<span class=prof>{escape(r.profile or 'profile not recorded')}"
                    f"{'' if r.profile == '' else ' profile'}</span>" if r.table.runs else "")
        for r, f in zip(parts, figs, strict=True))
    apart = [r.profile for r in parts if r.table.runs and not r.paper_comparable
             and r.table.scale is ScoreScale.NORMALIZED]
    return f"""<!doctype html><html lang=en><head><meta charset=utf-8>
<title>rebench report</title><style>{CSS}</style></head><body><main>
<h1>rebench report</h1>{subtitle}
<div class=meta>{escape(first.table.source)} · generated {escape(first.generated_at)} ·
bootstrap {first.settings.n_boot} resamples, seed {first.settings.seed}</div>
{_problems(first.table.problems)}
{body}
{humans_section(first.humans, apart)}
{integrity}
{METHOD}
</main></body></html>
"""
