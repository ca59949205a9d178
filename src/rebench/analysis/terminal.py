"""The report as rich tables in the terminal, each fitted to the terminal's width: where the
full table does not fit, detail is dropped (intervals, then allocations) before anything is
squeezed."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich import box
from rich.console import Console
from rich.table import Table

from rebench.analysis.budget import EnvScore
from rebench.analysis.cost import NOT_RECORDED, cell_text, has_tokens
from rebench.analysis.report import PAPER_SETTING, Report
from rebench.analysis.table import ScoreScale
from rebench.analysis.units import format_duration

# Detail levels, fullest first: 2 = score, interval and allocation; 1 = score and
# allocation; 0 = score only.
LEVELS = (2, 1, 0)


def fit(build: Callable[[int], Table], width: int) -> Table:
    """The fullest table of `build(level)` whose natural width fits `width` columns."""
    measure = Console(width=10_000)
    for level in LEVELS:
        table = build(level)
        if measure.measure(table).maximum <= width:
            return table
    return build(LEVELS[-1])


def _new_table(title: str) -> Table:
    return Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))


def budget_rich_table(report: Report, level: int = 2) -> Table:
    """Agents x budgets: mean score@k with its 95% interval and allocation."""
    table = _new_table(f"Mean score@k by total budget T ({report.table.scale.label})")
    table.add_column("agent", style="bold", max_width=18)
    for budget in report.budgets:
        table.add_column(f"T={format_duration(budget)}", justify="right", no_wrap=True)
    index = {(s.agent, s.budget_s): s for s in report.curve}
    for agent in report.table.agents():
        cells = []
        for budget in report.budgets:
            s = index.get((agent, budget))
            if s is None:
                cells.append("-")
                continue
            lines = [f"[bold]{s.mean:.2f}{'' if s.complete else '*'}[/bold]"]
            if level >= 2:
                lines.append(f"{s.lo:.2f}-{s.hi:.2f}")
            if level >= 1:
                lines.append(f"[dim]{s.k}x{format_duration(s.tau_s)}[/dim]")
            cells.append("\n".join(lines))
        table.add_row(agent, *cells)
    return table


def short_env_names(env_ids: list[str]) -> dict[str, str]:
    """Column heads: each id's first word where that is unique, else the whole id."""
    firsts = [e.split("_")[0] for e in env_ids]
    return {e: f if firsts.count(f) == 1 else e for e, f in zip(env_ids, firsts, strict=True)}


def env_rich_table(report: Report, level: int = 2) -> Table:
    """Agents x environments at the focus budget; the published human rows on the paper's
    scale only."""
    envs = report.table.env_ids()
    names = short_env_names(envs) if level < 2 else {e: e.replace("_", " ") for e in envs}
    table = _new_table(f"Per environment at T={format_duration(report.focus_budget_s)} "
                       f"(score@k, {report.table.scale.label})")
    table.add_column("agent", style="bold", max_width=18)
    for env_id in envs:
        table.add_column(names[env_id], justify="right", max_width=12)
    for score in report.focus:
        fill = {e.env_id: e for e in report.focus_fill if e.agent == score.agent}
        by_env: dict[str, EnvScore] = {e.env_id: e for e in score.per_env}
        cells = []
        for env_id in envs:
            e = by_env.get(env_id) or fill.get(env_id)
            if e is None:
                cells.append("-")
                continue
            own = "" if env_id in by_env else "+"
            cells.append(f"[bold]{e.score:.2f}{own}[/bold]"
                         + (f"\n{e.lo:.2f}-{e.hi:.2f}" if level >= 2 else ""))
        label = score.agent + (f"\n[dim]{score.allocation}[/dim]" if level >= 1 else "")
        table.add_row(label, *cells)
    if report.paper_comparable:
        refs = [report.humans.environments.get(e) for e in envs]
        table.add_row("[dim]human best (paper)[/dim]",
                      *(f"{r.best.value:.2f}" if r and r.best else "-" for r in refs))
        table.add_row("[dim]human mean (METR)[/dim]",
                      *(f"{r.mean_normalized:.2f}" if r and r.mean_normalized is not None
                        else "-" for r in refs))
    return table


# The cost table's columns by detail level (fullest first): (metric, heading).
_COST_COLUMNS = {
    2: (("agent_cpu_s", "agent cpu s"), ("scoring_cpu_s", "scoring cpu s"), ("wall_s", "wall"),
        ("scorings", "scores"), ("total_tokens", "tokens"), ("input_tokens", "input"),
        ("output_tokens", "output"), ("cached_tokens", "cached"), ("dollars", "$")),
    1: (("agent_cpu_s", "agent cpu s"), ("scoring_cpu_s", "scoring cpu s"), ("wall_s", "wall"),
        ("scorings", "scores"), ("total_tokens", "tokens"), ("dollars", "$")),
    0: (("agent_cpu_s", "agent cpu s"), ("wall_s", "wall"), ("total_tokens", "tokens")),
}


def cost_rich_table(report: Report, level: int = 2) -> Table:
    """Per environment, agent and time limit: the medians of what the runs used ("k/n"
    where not every run recorded a figure; "n/r", not recorded, where none did; never 0).
    Less detail at lower levels; token columns only where some run has tokens."""
    table = _new_table("Cost per run: medians over the runs that recorded each figure "
                       "(n/r = not recorded; k/n: only k of the n runs did)")
    envs = report.table.env_ids()
    names = short_env_names(envs) if level < 2 else {e: e for e in envs}
    table.add_column("environment", max_width=22)
    table.add_column("agent", max_width=22)
    table.add_column("limit", justify="right")
    table.add_column("runs", justify="right")
    table.add_column("usage", justify="right")  # runs with a usage record
    tokens = has_tokens(report.cost)
    cols = [(m, title) for m, title in _COST_COLUMNS[level]
            if tokens or not (m.endswith("_tokens") or m == "dollars")]
    for _, title in cols:
        table.add_column(title, justify="right")
    for row in report.cost:
        cells = []
        for metric, _ in cols:
            value, note = cell_text(row, metric)
            if row.medians[metric].value is None:
                value = "n/r" if value == NOT_RECORDED else "n/c"
            short = note.replace(" of ", "/").replace(" runs", "")
            cells.append(value + (f" [dim]{short}[/dim]" if note and level >= 2 else ""))
        usage = (str(row.usage_recorded) if row.usage_recorded == row.runs
                 else f"{row.usage_recorded}/{row.runs}")
        table.add_row(names[row.env_id], row.agent, format_duration(row.time_limit_s),
                      str(row.runs), usage, *cells)
    return table


def print_report(reports: Report | Sequence[Report], console: Console | None = None) -> None:
    """For each profile's part: its setting, both tables and the human headline point where
    comparable; then anything left out."""
    console = console or Console()
    parts = [reports] if isinstance(reports, Report) else list(reports)
    total = sum(len(r.table.runs) for r in parts)
    console.print(f"[dim]{parts[0].table.source}: {total} runs[/dim]", highlight=False)
    if not total:
        console.print("[yellow]no runs found[/yellow]")
    for report in parts:
        if report.table.runs:
            _print_part(report, console)
    for problem in parts[0].table.problems:
        console.print(f"[yellow]left out:[/yellow] {problem}", highlight=False, markup=True)


def _print_part(report: Report, console: Console) -> None:
    console.print(f"[bold]{report.setting()}[/bold]", highlight=False, soft_wrap=True)
    console.print(fit(lambda level: budget_rich_table(report, level), console.width))
    console.print(fit(lambda level: env_rich_table(report, level), console.width))
    if report.cost and any(r.cost is not None for r in report.table.runs):
        console.print(fit(lambda level: cost_rich_table(report, level), console.width))
        if any(r.medians["agent_cpu_s"].value is None and r.usage_recorded
               for r in report.cost):
            console.print("n/c = not counted: local isolation keeps no process group with "
                          "CPU accounting.", highlight=False)
    human = report.humans.overall_mean()
    notes = ["* = not every environment covered; + = the environment's own allocation."]
    if human is not None and report.paper_comparable:
        notes.insert(0, f"Human experts ({PAPER_SETTING}): mean {human.mean.value:.2f} at "
                        f"{format_duration(human.budget_s)} over {human.runs} runs.")
    elif human is not None and report.table.scale is ScoreScale.NORMALIZED:
        notes.insert(0, f"The {report.profile} profile is a scaled-down setting: these runs "
                        f"are not comparable with the paper's human experts ({PAPER_SETTING}), "
                        "so none are shown beside them.")
    elif human is not None:
        notes.insert(0, f"Scores are {report.table.scale.label}: the paper's human "
                        "reference is on another scale and is not shown beside them.")
    console.print(" ".join(notes), highlight=False)
