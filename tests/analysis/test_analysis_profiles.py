"""Runs of different profiles are different experiments: the report keeps them apart, says
on which profile and hardware each part was taken, and puts the paper's human experts (8 h,
H100, gpu setting) only beside gpu-profile runs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rebench.analysis.report import ReportSettings, build_reports
from rebench.analysis.sources import from_run_dirs
from rebench.cli_report import report

WriteRun = Callable[..., Path]


def _runs(make_run: WriteRun) -> None:
    for i in range(2):
        make_run(f"cpu-ref-{i}", "triton_cumsum", "reference", 600.0,
                 [(0.0, 0.0), (600.0, 0.93)], hardware="cpu: 2 cores (test VM)")
        make_run(f"gpu-ref-{i}", "triton_cumsum", "reference", 8 * 3600.0,
                 [(0.0, 0.0), (8 * 3600.0, 1.0)], profile="gpu", hardware="gpu: 1x H100")


def _labels(fig: object) -> list[str]:
    return [str(line.get_label()) for ax in fig.axes for line in ax.get_lines()]  # type: ignore[attr-defined]


def _caption(fig: Any) -> str:
    """The chart's setting caption: its title, or its legend's title."""
    texts = [fig._suptitle.get_text()] if fig._suptitle else []
    texts += [legend.get_title().get_text() for legend in fig.legends]
    return " ".join(" ".join(texts).split())


def test_profiles_are_reported_apart_with_their_hardware(runs_dir: Path,
                                                         make_run: WriteRun) -> None:
    _runs(make_run)
    gpu, cpu = build_reports(from_run_dirs(runs_dir), ReportSettings(n_boot=100))
    assert (gpu.profile, cpu.profile) == ("gpu", "cpu")  # the paper's setting first
    assert len(gpu.table.runs) == len(cpu.table.runs) == 2  # never averaged together
    assert cpu.setting() == "cpu profile, on cpu: 2 cores (test VM)"
    assert gpu.paper_comparable and not cpu.paper_comparable
    result = CliRunner().invoke(report, ["--runs-root", str(runs_dir), "--json",
                                         "--bootstrap", "100"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["n_runs"] == 4
    assert [(p["profile"], p["paper_comparable"], p["hardware"]) for p in data["profiles"]] \
        == [("gpu", True, ["gpu: 1x H100"]), ("cpu", False, ["cpu: 2 cores (test VM)"])]


def test_cpu_charts_say_cpu_profile_and_draw_no_human_expert(runs_dir: Path,
                                                              make_run: WriteRun) -> None:
    pytest.importorskip("matplotlib")
    from rebench.analysis.html import render_html
    from rebench.analysis.plots import budget_figure, env_bars_figure

    _runs(make_run)
    gpu, cpu = build_reports(from_run_dirs(runs_dir), ReportSettings(n_boot=100))
    for fig in (budget_figure(cpu), env_bars_figure(cpu)):
        assert "cpu profile, on cpu: 2 cores (test VM) (not comparable" in _caption(fig)
        assert not any("human" in label for label in _labels(fig))
    assert any("human experts (paper, H100, gpu setting" in label
               for label in _labels(budget_figure(gpu)))
    page = render_html([gpu, cpu], [{}, {}])
    cpu_part = page[page.index("<b>cpu profile"):page.index("Human experts (published")]
    assert "not comparable with the paper's human experts" in cpu_part
    # why, without implying the runs' own anchors came from other hardware (issue 30, 11)
    assert "its own starting and reference solutions, not the paper's" in cpu_part
    assert "human best, published" not in cpu_part  # no human rows in the cpu table
    assert "human best, published" in page[:page.index("<b>cpu profile")]  # the gpu part's
    assert "Not comparable with this page's cpu profile runs" in page
