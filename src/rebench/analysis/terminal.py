"""The report as rich tables in the terminal."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from rebench.analysis.report import Report
from rebench.analysis.units import format_duration


def budget_rich_table(report: Report) -> Table:
    """Agents x budgets: mean score@k with its 95% interval and allocation."""
    table = Table(title="Mean normalized score@k by total time budget T\n"
                        "(mean, 95% interval, allocation k x time limit)")
    table.add_column("agent", style="bold", max_width=16)
    for budget in report.budgets:
        table.add_column(f"T={format_duration(budget)}", justify="right")
    index = {(s.agent, s.budget_s): s for s in report.curve}
    for agent in report.table.agents():
        cells = []
        for budget in report.budgets:
            s = index.get((agent, budget))
            cells.append("-" if s is None else
                         f"[bold]{s.mean:.2f}{'' if s.complete else '*'}[/bold]\n"
                         f"{s.lo:.2f}-{s.hi:.2f}\n[dim]{s.k}x{format_duration(s.tau_s)}[/dim]")
        table.add_row(agent, *cells)
    return table


def env_rich_table(report: Report) -> Table:
    """Environments x agents at the focus budget, with the human best and mean."""
    table = Table(title=f"Per environment at T={format_duration(report.focus_budget_s)} "
                        "(score@k, 95% interval; human: best and mean of 7-9 h runs)")
    table.add_column("environment", style="bold", no_wrap=True)
    for score in report.focus:
        table.add_column(f"{score.agent}\n[dim]{score.k}x{format_duration(score.tau_s)}[/dim]",
                         justify="right")
    table.add_column("human best\n[dim]paper[/dim]", justify="right")
    table.add_column("human mean\n[dim]METR 7-9h[/dim]", justify="right")
    for env_id in report.table.env_ids():
        cells = []
        for score in report.focus:
            e = next((x for x in score.per_env if x.env_id == env_id), None)
            cells.append("-" if e is None else f"[bold]{e.score:.2f}[/bold]\n{e.lo:.2f}-{e.hi:.2f}")
        ref = report.humans.environments.get(env_id)
        best = f"{ref.best.value:.2f}" if ref and ref.best else "-"
        mean = ref.mean_normalized if ref else None
        cells += [best, "-" if mean is None else f"{mean:.2f}"]
        table.add_row(env_id, *cells)
    return table


def print_report(report: Report, console: Console | None = None) -> None:
    """Both tables, the human headline point, and anything left out."""
    console = console or Console()
    console.print(f"[dim]{report.table.source}: {len(report.table.runs)} runs[/dim]")
    if not report.table.runs:
        console.print("[yellow]no runs found[/yellow]")
        return
    console.print(budget_rich_table(report))
    console.print(env_rich_table(report))
    human = report.humans.overall_mean()
    if human is not None:
        console.print(f"Human experts (paper): mean {human.mean.value:.2f} at "
                      f"{format_duration(human.budget_s)} over {human.runs} runs. "
                      "* = not every environment covered.")
    for problem in report.table.problems:
        console.print(f"[yellow]left out:[/yellow] {problem}")
