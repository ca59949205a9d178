"""The report's figures, drawn with matplotlib (the optional extra `rebench[report]`).

Figures are built with `matplotlib.figure.Figure` directly (no pyplot): no global state and no
GUI backend, so rendering works headless and in parallel.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rebench.analysis.budget import BudgetScore, EnvScore, env_set
from rebench.analysis.cost import AXIS_LABELS, cost_axis, cost_points
from rebench.analysis.report import PAPER_SETTING, Report
from rebench.analysis.units import format_duration
from rebench.core.errors import RebenchError

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

HUMAN = "#111111"
HUMAN_SHADES = (HUMAN, "#6b6b6b", "#a0a0a0")
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b",
           "#e377c2", "#7f7f7f", "#bcbd22")


class PlottingUnavailable(RebenchError):
    """matplotlib is not installed."""


def _figure(width: float, height: float) -> Figure:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise PlottingUnavailable(
            "the HTML report needs matplotlib: pip install 'rebench[report]'"
        ) from None
    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def to_svg_data_uri(fig: Figure) -> str:
    """The figure as an SVG data URI for an <img> (isolates SVG ids between figures)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg")
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode()


def _text(label: str) -> str:
    """A label matplotlib shows as written: an agent named with `$` is not mathtext."""
    return label.replace("$", r"\$")


def agent_colors(agents: list[str]) -> dict[str, str]:
    """Humans in black and greys (the first black), agents in the palette."""
    humans = [a for a in agents if a.lower().startswith("human")]
    others = [a for a in agents if a not in humans]
    colors = {a: HUMAN_SHADES[i % len(HUMAN_SHADES)] for i, a in enumerate(humans)}
    colors.update({a: PALETTE[i % len(PALETTE)] for i, a in enumerate(others)})
    return colors


def _duration_axis(ax: Axes, ticks: list[float]) -> None:
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: format_duration(x)))


def _anchor_lines(ax: Axes) -> None:
    ax.axhline(0.0, color="#999999", lw=0.8, ls=":")
    ax.axhline(1.0, color="#999999", lw=0.8, ls="--")


def curve_segments(points: list[BudgetScore]) -> list[list[BudgetScore]]:
    """Consecutive points that average the same environments; a line joins only those (a
    mean over 4 environments beside one over 7 is not a change over the budget)."""
    segments: list[list[BudgetScore]] = []
    for point in points:
        if segments and env_set(segments[-1][-1]) == env_set(point):
            segments[-1].append(point)
        else:
            segments.append([point])
    return segments


def budget_figure(report: Report) -> Figure:
    """Mean score vs total time budget (log axis), bands; the paper's human point only when
    the data is on the paper's scale."""
    fig = _figure(11.0, 5.0)
    ax = fig.add_subplot()
    colors = agent_colors(report.table.agents())
    for agent in report.table.agents():
        points = [s for s in report.curve if s.agent == agent]
        label: str | None = _text(agent)
        # Humans on top: their few points must not hide behind an agent's marker.
        zorder = 3.0 if agent.lower().startswith("human") else 2.0
        for segment in curve_segments(points):
            x = [s.budget_s for s in segment]
            if len(segment) == 1:  # a lone point has no band: an error bar instead
                ax.errorbar(x, [segment[0].mean], yerr=[[segment[0].mean - segment[0].lo],
                                                        [segment[0].hi - segment[0].mean]],
                            color=colors[agent], lw=1, capsize=3, zorder=zorder)
            ax.fill_between(x, [s.lo for s in segment], [s.hi for s in segment],
                            color=colors[agent], alpha=0.15, lw=0)
            ax.plot(x, [s.mean for s in segment], color=colors[agent], lw=1.8,
                    label=label, marker="o", ms=5, zorder=zorder,
                    mfc=colors[agent] if segment[0].complete else "white")
            label = None
    ticks = _budget_ticks(report.budgets)
    human = report.humans.overall_mean()
    if human is not None and report.paper_comparable:
        ax.plot(human.budget_s, human.mean.value, marker="*", ms=15, color=HUMAN, ls="none",
                label=f"human experts ({PAPER_SETTING}; {format_duration(human.budget_s)}, "
                      f"{human.runs} runs)")
        ticks.append(human.budget_s)
    _duration_axis(ax, sorted(set(ticks)))
    _anchor_lines(ax)
    ax.set_xlabel("total time budget T = k x time limit (best allocation per agent)")
    ax.set_ylabel(f"mean {report.table.scale.label}")
    ax.set_ylim(bottom=-0.05)
    ax.grid(alpha=0.25)
    _setting_title(fig, report)
    fig.legend(loc="outside right upper", fontsize=8, frameon=False)
    return fig


def setting_caption(report: Report) -> str:
    """What every chart says: on which profile and hardware its runs were taken, and
    whether the paper's human experts may be read beside them (docs/report.md)."""
    note = "" if report.paper_comparable else \
        " (not comparable with the paper's human experts: none drawn)"
    return report.setting() + note


def _setting_title(fig: Figure, report: Report) -> None:
    """The caption above a chart whose legend is at its side."""
    fig.suptitle(_text(setting_caption(report)), fontsize=10, x=0.01, ha="left",
                 color="#1d1d1f" if report.paper_comparable else "#b45309")


def _legend_on_top(fig: Figure, report: Report, **kwargs: Any) -> None:
    """A legend above the chart, the setting caption as its title (a separate title
    would overlap it), wrapped to the figure's width."""
    import textwrap

    width = int(fig.get_figwidth() * 11)  # characters of 9 pt text per inch, roughly
    legend = fig.legend(loc="outside upper center", fontsize=8, frameon=False,
                        title=_text(textwrap.fill(setting_caption(report), width)),
                        title_fontproperties={"size": 9}, **kwargs)
    legend.get_title().set_color("#1d1d1f" if report.paper_comparable else "#b45309")


def _budget_ticks(budgets: tuple[float, ...]) -> list[float]:
    """Label the doubling grid from the shortest budget only: other budgets (other time
    limits) still get their points, but labels 8m and 10m side by side would collide."""
    if not budgets:
        return []
    ticks, tick = [], budgets[0]
    while tick <= budgets[-1] * (1 + 1e-9):
        ticks.append(tick)
        tick *= 2
    return ticks


def env_bars_figure(report: Report) -> Figure:
    """Per-environment score@k at the focus budget, with the human best and mean."""
    envs = report.table.env_ids()
    agents = [s.agent for s in report.focus]
    colors = agent_colors(report.table.agents())
    fig_width = max(7.0, 1.4 * len(envs) + 3)
    fig = _figure(fig_width, 4.6 + 0.1 * len(agents))
    ax = fig.add_subplot()
    bar_width = 0.8 / max(1, len(agents))
    for j, score in enumerate(report.focus):
        _env_bars(ax, score, envs, j, bar_width, colors[score.agent], report.focus_fill)
    if report.paper_comparable:
        _human_marks(ax, report, envs)
    ax.set_xticks(range(len(envs)), [e.replace("_", "_\u200b") for e in envs], fontsize=8)
    _anchor_lines(ax)
    ax.set_ylabel(f"{report.table.scale.label}\nat T = {format_duration(report.focus_budget_s)}")
    ax.set_ylim(bottom=0)
    ax.grid(axis="y", alpha=0.25)
    # About 2.3 inches per legend entry keeps long agent names inside the figure.
    _legend_on_top(fig, report, ncols=max(1, min(len(agents) + 2, int(fig_width / 2.3))))
    return fig


def _env_bars(ax: Axes, score: BudgetScore, envs: list[str], j: int, width: float,
              color: str, fill: tuple[EnvScore, ...]) -> None:
    """One agent's bars; hatched where the environment has its own allocation (fill)."""
    own = {e.env_id for e in fill if e.agent == score.agent}
    by_env = {e.env_id: e for e in (*score.per_env, *(f for f in fill if f.agent == score.agent))}
    label: str | None = _text(f"{score.agent} ({score.allocation})")
    for i, env_id in enumerate(envs):
        if env_id not in by_env:
            continue
        e = by_env[env_id]
        err = [[max(0.0, e.score - e.lo)], [max(0.0, e.hi - e.score)]]
        ax.bar([i - 0.4 + width * (j + 0.5)], [e.score], width * 0.92, yerr=err, color=color,
               alpha=0.85, capsize=2, error_kw={"lw": 0.8}, label=label,
               hatch="//" if env_id in own else None, edgecolor="white")
        label = None


def _human_marks(ax: Axes, report: Report, envs: list[str]) -> None:
    best_label = f"human best (paper Table 5; {PAPER_SETTING})"
    mean_label = f"human mean 7-9 h (METR data; {PAPER_SETTING})"
    for i, env_id in enumerate(envs):
        ref = report.humans.environments.get(env_id)
        if ref is None:
            continue
        if ref.best is not None:
            ax.plot([i - 0.42, i + 0.42], [ref.best.value] * 2, color=HUMAN, lw=2,
                    label=best_label)
            best_label = "_"
        if ref.mean_normalized is not None:
            ax.plot(i, ref.mean_normalized, marker="D", color="white", mec=HUMAN, ms=7,
                    ls="none", label=mean_label)
            mean_label = "_"


def trajectories_figure(report: Report, ncols: int = 3) -> Figure:
    """Mean score-so-far over working time, one panel per environment."""
    envs = sorted({t.env_id for t in report.trajectories})
    fig, panels = _panels(len(envs), ncols)
    colors = agent_colors(report.table.agents())
    styles = ("-", "--", ":", "-.")
    limits = report.table.time_limits()
    for ax, env_id in zip(panels, envs, strict=True):
        span = [t for t in report.trajectories if t.env_id == env_id]
        for traj in span:
            style = styles[limits.index(traj.tau_s) % len(styles)]
            label = f"{traj.agent}, {format_duration(traj.tau_s)} (n={traj.n_runs})"
            ax.plot(traj.times, traj.mean, style, color=colors[traj.agent], lw=1.5,
                    label=_text(label))
        _finish_panel(ax, env_id, (min(t.times[0] for t in span),
                                   max(t.times[-1] for t in span)))
    # one legend entry per agent and time limit, whatever each panel's run count
    _finish_panels(fig, report, "working time (log)",
                   f"mean {report.table.scale.label} so far",
                   legend_key=lambda label: label.split(" (n=")[0])
    return fig


def _panels(n: int, ncols: int) -> tuple[Figure, list[Axes]]:
    """A figure of `n` panels, `ncols` (at most n) to a row, the grid's unused cells hidden."""
    ncols = max(1, min(ncols, n))
    nrows = max(1, math.ceil(n / ncols))
    fig = _figure(max(6.0, 4.0 * ncols), (3.4 if ncols == 1 else 2.9) * nrows + 0.6)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for idx in range(n, nrows * ncols):
        axes[idx // ncols][idx % ncols].set_visible(False)
    return fig, [axes[idx // ncols][idx % ncols] for idx in range(n)]


def _finish_panel(ax: Axes, title: str, durations: tuple[float, float] | None) -> None:
    """A panel's title, log x axis (ticked at round durations within `durations`, if
    given), anchor lines at 0 and 1, grid and small tick labels."""
    ax.set_title(title, fontsize=9)
    if durations is None:
        ax.set_xscale("log")
    else:
        _duration_axis(ax, nice_duration_ticks(*durations))
    _anchor_lines(ax)
    ax.grid(alpha=0.25)
    ax.tick_params(labelsize=7)


def _finish_panels(fig: Figure, report: Report, xlabel: str, ylabel: str,
                   legend_key: Callable[[str], str] = lambda label: label) -> None:
    """One legend on top for all panels (an entry per `legend_key` of the labels, the
    first panel's handle) and the figure's axis labels."""
    handles: dict[str, Any] = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(legend_key(label), handle)
    _legend_on_top(fig, report, handles=list(handles.values()), labels=list(handles),
                   ncols=max(1, min(4, len(handles))))
    fig.supxlabel(xlabel, fontsize=9)
    fig.supylabel(ylabel, fontsize=9)


NICE_DURATIONS = (1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 4 * 3600, 8 * 3600,
                  16 * 3600, 32 * 3600, 64 * 3600, 128 * 3600)


def nice_duration_ticks(lo: float, hi: float, most: int = 5) -> list[float]:
    """Round durations (1s, 10s, 1m, 5m, 1h, 8h, ...) within [lo, hi], thinned to `most`."""
    ticks = [float(t) for t in NICE_DURATIONS if lo <= t <= hi]
    while len(ticks) > most:
        ticks = ticks[::2] if len(ticks) % 2 else ticks[1::2]
    return ticks


def cost_figure(report: Report, ncols: int = 3) -> Figure | None:
    """Score against cost, one point per run and one panel per environment (the shape of
    the RE-Bench paper's Figure 8): the run's final score against its agent's CPU-seconds,
    or its wall time where no run recorded CPU (cost.cost_axis). Runs that did not record
    the figure are not drawn; each panel's title says how many. None: no run has it."""
    axis = cost_axis(report.table)
    points = cost_points(report.table, axis)
    if not any(p.cost is not None for p in points):
        return None
    envs = sorted({p.env_id for p in points})
    fig, panels = _panels(len(envs), ncols)
    colors = agent_colors(report.table.agents())
    markers = ("o", "s", "^", "D", "v")
    limits = report.table.time_limits()
    for ax, env_id in zip(panels, envs, strict=True):
        here = [p for p in points if p.env_id == env_id]
        drawn = [p for p in here if p.cost is not None]
        for agent in sorted({p.agent for p in drawn}):
            for limit in limits:
                mine = [p for p in drawn if p.agent == agent and p.time_limit_s == limit]
                if mine:
                    # a log axis has no 0: a run that used no CPU is drawn at 1 ms
                    ax.scatter([max(p.cost or 0.0, 1e-3) for p in mine],
                               [p.score for p in mine], s=22, alpha=0.8,
                               color=colors[agent], marker=markers[limits.index(limit)
                                                                   % len(markers)],
                               label=_text(f"{agent}, {format_duration(limit)}"))
        missing = len(here) - len(drawn)
        costs = [p.cost or 0.0 for p in drawn]
        _finish_panel(ax, env_id + (f" ({missing} of {len(here)} runs not recorded)"
                                    if missing else ""),
                      (min(costs), max(costs)) if axis == "wall_s" and costs else None)
    _finish_panels(fig, report, AXIS_LABELS[axis], f"final {report.table.scale.label}")
    return fig


def all_figures(report: Report) -> dict[str, Any]:
    """The figures as SVG data URIs, keyed by name; empty data gives no figure."""
    if not report.table.runs:
        return {}
    return {
        "budget": to_svg_data_uri(budget_figure(report)),
        "bars": to_svg_data_uri(env_bars_figure(report)) if report.focus else None,
        "trajectories": to_svg_data_uri(trajectories_figure(report))
        if report.trajectories else None,
        "cost": _uri(cost_figure(report)),
    }


def _uri(fig: Figure | None) -> str | None:
    return None if fig is None else to_svg_data_uri(fig)
