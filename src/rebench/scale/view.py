"""The live view of a Ray batch: attempts per state, and per node, redrawn as they change."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.progress_bar import ProgressBar
from rich.table import Table

from rebench.scale.store import AttemptRow, AttemptState

_STATES = tuple(AttemptState)


def _node_name(row: AttemptRow) -> str:
    if not row.node:
        return "(not started)"
    return f"{row.node} {row.node_id[:8]}" if row.node_id else row.node


def render(batch_id: str, rows: Sequence[AttemptRow]) -> RenderableType:
    """A bar of attempts done, a table of states per node, and the totals."""
    done = sum(r.state.done for r in rows)
    table = Table(title=f"{batch_id}: {done}/{len(rows)} attempts done", title_justify="left")
    table.add_column("node", no_wrap=True)
    for state in _STATES:
        table.add_column(state.value, justify="right")
    table.add_column("retried", justify="right")
    per_node: dict[str, Counter[AttemptState]] = {}
    retried: Counter[str] = Counter()
    for row in rows:
        name = _node_name(row)
        per_node.setdefault(name, Counter())[row.state] += 1
        retried[name] += len(row.history)
    for name in sorted(per_node):
        counts = per_node[name]
        table.add_row(name, *(str(counts[s] or "") for s in _STATES), str(retried[name] or ""))
    totals: Counter[AttemptState] = Counter(r.state for r in rows)
    table.add_row("[bold]all[/]", *(f"[bold]{totals[s]}[/]" for s in _STATES),
                  f"[bold]{sum(retried.values())}[/]")
    return Group(ProgressBar(total=max(len(rows), 1), completed=done), table)


def summary(rows: Sequence[AttemptRow]) -> Table:
    """The end-of-batch table: one line per attempt."""
    table = Table(title="batch")
    for col in ("attempt", "run id", "node", "tries", "state", "score", "note"):
        table.add_column(col, no_wrap=col == "run id", overflow="fold")
    for row in rows:
        score = row.final_normalized
        table.add_row(row.label, row.run_id or "-", row.node or "-", str(row.tries),
                      row.state.value,
                      "-" if score is None or not math.isfinite(score) else f"{score:.3f}",
                      (row.error or "; ".join(row.history))[:120])
    return table
