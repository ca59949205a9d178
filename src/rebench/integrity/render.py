"""Integrity reports as a terminal table and as HTML (one run, or beside each run of the
analysis report)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

from rich.console import Console
from rich.table import Table
from rich.text import Text

from rebench.integrity.flags import Flag, IntegrityReport, Judge, Severity

STYLE = {Severity.HIGH: "bold red", Severity.MEDIUM: "yellow", Severity.LOW: "dim"}
HTML_CLASS = {Severity.HIGH: "sev-high", Severity.MEDIUM: "sev-medium", Severity.LOW: "sev-low"}
CSS = """
.sev-high{color:#b91c1c;font-weight:700}.sev-medium{color:#b45309}.sev-low{color:#6b7280}
table.integrity td{text-align:left;white-space:normal;vertical-align:top}
table.integrity code{font-size:12px;background:#f3f4f6;padding:0 3px}
"""


def _label(flag: Flag) -> str:
    return flag.rule + (" (model)" if flag.judge is Judge.MODEL else "")


def print_report(report: IntegrityReport, console: Console) -> None:
    """The flags of one run as a table, then what the checks could not see."""
    table = Table(title=f"integrity: {report.summary()}", show_lines=False)
    for col in ("severity", "rule", "where", "explanation", "evidence"):
        table.add_column(col, overflow="fold")
    for flag in report.flags:
        # Text, not markup: excerpts are the agent's text, and "[/]" in them must not style
        # (or break) the table.
        table.add_row(Text(flag.severity.value, style=STYLE[flag.severity]),
                      Text(_label(flag)), Text(flag.evidence.where()), Text(flag.explanation),
                      Text(flag.evidence.excerpt or flag.evidence.command or ""))
    if report.flags:
        console.print(table)
    else:
        console.print(Text.assemble("integrity: ", ("no flags", "green"),
                                    f" (run {report.run_id})"))
    for note in report.notes:
        console.print(Text(f"not checked: {note}", style="dim"))


def _flag_rows(flags: Sequence[Flag]) -> str:
    rows = []
    for flag in flags:
        ev = flag.evidence
        detail = escape(ev.excerpt or ev.command or "")
        rows.append(f"<tr><td class={HTML_CLASS[flag.severity]}>{flag.severity.value}</td>"
                    f"<td>{escape(_label(flag))}</td><td>{escape(ev.where())}</td>"
                    f"<td>{escape(flag.explanation)}<br><code>{detail}</code></td></tr>")
    return "".join(rows)


def report_html(report: IntegrityReport) -> str:
    """One run's flags as an HTML table."""
    if not report.flags:
        return "<p class=note>No flags.</p>"
    return ("<table class=integrity><tr><th class=l>severity</th><th class=l>rule</th>"
            f"<th class=l>where</th><th class=l>explanation and evidence</th></tr>"
            f"{_flag_rows(report.flags)}</table>")


def section_html(reports: Mapping[str, IntegrityReport], labels: Mapping[str, str],
                 excluded: Sequence[str] = ()) -> str:
    """The report page's integrity section: every run beside its flags."""
    rows = []
    for run_id, report in reports.items():
        top = report.max_severity
        cls = HTML_CLASS[top] if top else "sev-low"
        gone = " (excluded)" if run_id in excluded else ""
        rows.append(f"<tr><td class=l><code>{escape(run_id)}</code><br>"
                    f"<small>{escape(labels.get(run_id, ''))}</small></td>"
                    f"<td class='l {cls}'>{escape(report.summary())}{gone}</td>"
                    f"<td class=l>{report_html(report) if report.flags else ''}</td></tr>")
    body = "".join(rows) or "<tr><td class=l colspan=3>no run directories to check</td></tr>"
    return f"""<style>{CSS}</style>
<h2>Integrity</h2>
<p class=note>Flags raised by rules over each run's record (commands and their output, files
written, snapshots, score log); see docs/integrity.md. A flag is evidence of an attempt,
not proof, and its absence is not proof of honesty.{_excluded_note(excluded)}</p>
<div class=scroll><table class=integrity><tr><th class=l>run</th><th class=l>flags</th>
<th class=l>details</th></tr>{body}</table></div>"""


def _excluded_note(excluded: Sequence[str]) -> str:
    if not excluded:
        return ""
    return f" {len(excluded)} flagged run(s) were left out of every score above."
