"""Durations in and out, and the page for an empty runs root."""

from __future__ import annotations

import pytest

from rebench.analysis.html import render_html
from rebench.analysis.report import build_report
from rebench.analysis.table import RunTable
from rebench.analysis.units import DurationError, format_duration, parse_duration


@pytest.mark.parametrize("text, seconds", [
    ("90", 90.0), ("90s", 90.0), ("30m", 1800.0), ("1h30m", 5400.0), ("2h", 7200.0),
    ("1.5h", 5400.0), (" 8H ", 28800.0), ("1d", 86400.0),
])
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "-5m", "0", "2 hours", "30min", "nan"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(DurationError):
        parse_duration(text)


@pytest.mark.parametrize("seconds, text", [
    (45.0, "45s"), (0.6, "0.6s"), (60.0, "1m"), (1800.0, "30m"), (5400.0, "1.5h"),
    (28800.0, "8h"), (115200.0, "32h"), (float("nan"), "-"),
])
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_empty_report_renders() -> None:
    report = build_report(RunTable((), (), "nothing"))
    page = render_html(report, {})
    assert "rebench report" in page and "no figure: no runs" in page
    assert "0.64" in page  # the human reference is shown even without runs
