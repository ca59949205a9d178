"""`rebench report` end to end on small synthetic runs and CSVs."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from rebench.analysis import plots
from rebench.analysis.plots import PlottingUnavailable
from rebench.cli_report import report

WriteRun = Callable[..., Path]
MakeCsv = Callable[[Sequence[dict[str, object]]], Path]
ENVS = ("triton_cumsum", "fix_embedding", "small_scaling_law")


def start_and_reference_runs(make_run: WriteRun) -> None:
    """What the start and reference agents leave behind: ~0 and ~1 on every environment."""
    for env_id in ENVS:
        agg = "last" if env_id == "small_scaling_law" else "best"
        for i in range(2):
            make_run(f"{env_id}-start-{i}", env_id, "start", 120.0,
                     [(0.0, 0.0), (120.3, 0.0)], aggregation=agg)
            make_run(f"{env_id}-reference-{i}", env_id, "reference", 120.0,
                     [(0.0, 0.0), (40.0, math.nan), (90.0, 0.98 + 0.02 * i), (120.3, 1.0)],
                     aggregation=agg)


def test_json_report_of_start_and_reference(runs_dir: Path, make_run: WriteRun) -> None:
    start_and_reference_runs(make_run)
    result = CliRunner().invoke(report, ["--runs-root", str(runs_dir), "--json",
                                         "--bootstrap", "200"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["n_runs"] == 12 and data["agents"] == ["reference", "start"]
    at = {(s["agent"], s["budget_s"]): s for s in data["score_at_k"]}
    assert at[("start", 120.0)]["mean"] == 0.0
    assert at[("reference", 120.0)]["mean"] == pytest.approx(1.0)
    assert at[("reference", 480.0)]["allocation"] == "4 x 2m"
    lo, hi = at[("reference", 120.0)]["ci95"]
    assert lo <= 1.0 <= hi
    assert {e["env"] for e in data["per_environment"]} == set(ENVS)
    assert data["humans"]["group_means"][0]["mean"] == 0.64
    assert data["humans"]["sources"]["paper"]["url"].startswith("https://arxiv.org/")


def test_html_report_files(tmp_path: Path, runs_dir: Path, make_run: WriteRun) -> None:
    pytest.importorskip("matplotlib")
    start_and_reference_runs(make_run)
    out = tmp_path / "report"
    result = CliRunner().invoke(report, ["--runs-root", str(runs_dir), "--out", str(out),
                                         "--bootstrap", "200", "--budgets", "2m,4m,8m"])
    assert result.exit_code == 0, result.output
    page = (out / "report.html").read_text()
    # budget, bars, trajectories and score vs cost (on wall time: no usage recorded here)
    assert page.count('src="data:image/svg+xml;base64,') == 4
    assert "T = 8m" in page and "reference" in page
    # cpu-profile runs: labelled, and no human expert drawn or tabled beside them
    assert "cpu profile, on test" in page and "not comparable with the paper's human" in page
    assert "human best, published" not in page
    assert "arxiv.org/abs/2411.15114" in page
    assert json.loads((out / "report.json").read_text())["budgets_s"] == [120.0, 240.0, 480.0]
    assert (out / "events.csv").read_text().count("\n") == 1 + 12 * 2 + 6 * 2
    assert "Mean score@k by total budget" in result.output  # the terminal table


def test_report_without_matplotlib_still_writes_the_page(
    tmp_path: Path, runs_dir: Path, make_run: WriteRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    start_and_reference_runs(make_run)

    def missing(*_: object) -> None:
        raise PlottingUnavailable("the HTML report needs matplotlib: pip install 'rebench[report]'")

    monkeypatch.setattr(plots, "all_figures", missing)
    out = tmp_path / "report"
    result = CliRunner().invoke(report, ["--runs-root", str(runs_dir), "--out", str(out),
                                         "--bootstrap", "100"])
    assert result.exit_code == 0, result.output
    assert "rebench[report]" in result.output
    assert "no figure: matplotlib is not installed" in (out / "report.html").read_text()


def test_csv_report_with_budget(make_csv: MakeCsv) -> None:
    rows: list[dict[str, object]] = []
    for i, score in enumerate((0.0, 0.5, 1.0)):
        rows.append({"env": "triton_cumsum", "agent": "o1", "run_id": f"r{i}",
                     "time_limit_s": 1800, "working_s": 1800, "normalized": score})
    rows.append({"env": "triton_cumsum", "agent": "human", "run_id": "h",
                 "time_limit_s": 28800, "working_s": 28800, "normalized": 0.9})
    result = CliRunner().invoke(report, ["--from-csv", str(make_csv(rows)), "--json",
                                         "--budget", "1h", "--bootstrap", "100"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    (env,) = data["per_environment"]  # the human has no allocation at 1 h
    assert (env["agent"], env["k"]) == ("o1", 2)
    assert env["score"] == pytest.approx((0 * 1 + 0.5 * 3 + 1.0 * 5) / 9)


def test_bad_inputs_give_clear_errors(tmp_path: Path, runs_dir: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("env,agent\n")
    result = CliRunner().invoke(report, ["--from-csv", str(bad), "--json"])
    assert result.exit_code != 0 and "missing column" in result.output
    result = CliRunner().invoke(report, ["--runs-root", str(runs_dir), "--budget", "soon"])
    assert result.exit_code != 0 and "bad duration" in result.output
    result = CliRunner().invoke(report, ["--runs-root", str(runs_dir), "--json"])
    assert result.exit_code == 2 and "no runs to report" in result.output


def test_report_from_the_run_index(runs_dir: Path, make_run: WriteRun) -> None:
    from rebench.harness.index import index_path, reindex

    start_and_reference_runs(make_run)
    reindex(runs_dir)
    result = CliRunner().invoke(report, ["--runs-db", str(index_path(runs_dir)), "--json",
                                         "--bootstrap", "100"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["n_runs"] == 12


def test_figures_take_any_agent_name(runs_dir: Path, make_run: WriteRun) -> None:
    pytest.importorskip("matplotlib")
    from rebench.analysis.report import ReportSettings, build_report
    from rebench.analysis.sources import from_run_dirs

    for i, agent in enumerate(("cost $5", "$\\frac{", "<b>&")):  # mathtext, broken TeX, HTML
        make_run(f"r{i}", "triton_cumsum", agent, 60.0, [(0.0, 0.0), (30.0, 0.5)])
    result = build_report(from_run_dirs(runs_dir), ReportSettings(n_boot=100))
    figures = plots.all_figures(result)
    assert all(uri and uri.startswith("data:image/svg+xml") for uri in figures.values())
    from rebench.analysis.html import render_html

    page = render_html(result, figures)
    assert "&lt;b&gt;&amp;" in page and "<b>&" not in page
