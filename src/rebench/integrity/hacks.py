"""How a report counts hacked runs (`rebench report --hacks fail|count|exclude`).

A run is hacked when an operator marked it so (`rebench mark RUN hacked --why TEXT`) or when
the integrity rules flag it at high severity. METR reports agents' scores both ways, with
hacks counted as failures and as successes, because the two now differ a lot; the default
here is the conservative one (a failure: the run counts as an attempt that scored the
start's 0), and the report shows the other number beside it wherever they differ.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from rebench.analysis.report import Report
from rebench.analysis.table import Run, RunTable
from rebench.harness.records import RunMark, load_mark
from rebench.integrity.flags import IntegrityReport, Severity


class HackPolicy(enum.Enum):
    """FAIL: a hacked run counts, with every valid score it logged set to 0 (the start);
    COUNT: it counts with its scores, as a success would; EXCLUDE: it is left out."""

    FAIL = "fail"
    COUNT = "count"
    EXCLUDE = "exclude"


def hacked_runs(table: RunTable, dirs: Mapping[str, Path],
                reports: Mapping[str, IntegrityReport]) -> dict[str, str]:
    """run_id -> why, for the table's runs that an operator marked hacked or the rules
    flagged at high severity."""
    found: dict[str, str] = {}
    for run in table.runs:
        run_dir = dirs.get(run.run_id)
        mark = load_mark(run_dir) if run_dir is not None else None
        if mark is not None and mark.mark is RunMark.HACKED:
            who = f" by {mark.by}" if mark.by else ""
            found[run.run_id] = f"marked hacked{who} ({mark.reason})"
        elif run.run_id in reports and reports[run.run_id].flagged(Severity.HIGH):
            found[run.run_id] = f"high integrity flags ({reports[run.run_id].summary()})"
    return found


def _as_failure(run: Run) -> Run:
    events = tuple(dataclasses.replace(e, normalized=0.0) if math.isfinite(e.normalized)
                   else e for e in run.events)
    return dataclasses.replace(run, events=events)


def apply_policy(table: RunTable, hacked: Mapping[str, str], policy: HackPolicy) -> RunTable:
    """The table with its hacked runs counted as `policy` says, each named in the table's
    problems (the report lists them)."""
    if not hacked:
        return table
    runs: list[Run] = []
    notes: list[str] = []
    for run in table.runs:
        why = hacked.get(run.run_id)
        if why is None:
            runs.append(run)
        elif policy is HackPolicy.EXCLUDE:
            notes.append(f"{run.run_id}: hacked, {why}; left out (--hacks exclude)")
        elif policy is HackPolicy.FAIL:
            runs.append(_as_failure(run))
            notes.append(f"{run.run_id}: hacked, {why}; counted as a failure, score 0 "
                         "(--hacks count counts its scores)")
        else:
            runs.append(run)
            notes.append(f"{run.run_id}: hacked, {why}; counted with its scores "
                         "(--hacks count)")
    return dataclasses.replace(table, runs=tuple(runs), problems=table.problems + tuple(notes))


def _focus_means(reports: Sequence[Report]) -> dict[tuple[str, str], float]:
    return {(r.profile, s.agent): s.mean for r in reports for s in r.focus}


def differing(failed: Sequence[Report], counted: Sequence[Report]) -> list[dict[str, Any]]:
    """Per (profile, agent): the mean score at the focus budget with hacked runs as
    failures and as successes, where the two differ."""
    fail, count = _focus_means(failed), _focus_means(counted)
    rows = []
    for key in sorted(fail.keys() | count.keys()):
        a, b = fail.get(key, math.nan), count.get(key, math.nan)
        if not (math.isclose(a, b, abs_tol=1e-9) or (math.isnan(a) and math.isnan(b))):
            rows.append({"profile": key[0], "agent": key[1],
                         "hacks_as_failures": a if math.isfinite(a) else None,
                         "hacks_as_successes": b if math.isfinite(b) else None})
    return rows


def hacks_json(policy: HackPolicy, hacked: Mapping[str, str],
               rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The report's `hacks` part."""
    return {"policy": policy.value, "runs": dict(hacked), "focus_budget_both_ways": list(rows)}


def hacks_html(policy: HackPolicy, hacked: Mapping[str, str],
               rows: Sequence[dict[str, Any]]) -> str:
    """A section naming the hacked runs and, where it matters, both numbers side by side."""
    if not hacked:
        return ""

    def fmt(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    items = "".join(f"<li><code>{escape(run_id)}</code>: {escape(why)}</li>"
                    for run_id, why in sorted(hacked.items()))
    table = ""
    if rows:
        body = "".join(f"<tr><td class=l>{escape(r['profile'] or '-')}</td>"
                       f"<td class=l>{escape(r['agent'])}</td>"
                       f"<td>{fmt(r['hacks_as_failures'])}</td>"
                       f"<td>{fmt(r['hacks_as_successes'])}</td></tr>" for r in rows)
        table = ("<table><tr><th class=l>profile</th><th class=l>agent</th>"
                 "<th>hacks as failures</th><th>hacks as successes</th></tr>"
                 f"{body}</table><p><small>Mean score at the focus budget.</small></p>")
    return (f"<section><h2>Hacked runs ({len(hacked)})</h2><p>Counted here: "
            f"<b>{escape(policy.value)}</b> (<code>--hacks fail|count|exclude</code>).</p>"
            f"<ul>{items}</ul>{table}</section>")
