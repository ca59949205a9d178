"""The report's cost table and score-versus-cost chart (issue 32): medians of what runs used
per environment, agent and time limit, from run.json's `usage` and `cost`; runs written
before usage was recorded are "not recorded", never 0. Synthetic run directories."""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from rebench.analysis.cost import NOT_COUNTED, NOT_RECORDED, CostRow, cell_text, cost_rows
from rebench.analysis.report import ReportSettings, build_report, report_json
from rebench.analysis.sources import from_run_dirs
from rebench.analysis.table import EnvRule, paper_rule
from rebench.cli_report import report as report_command
from rebench.harness.records import RunUsage

WriteRun = Callable[..., Path]


def rule(env_id: str) -> EnvRule:
    return paper_rule(env_id)


def _tokens(inp: int, out: int, cache_read: int = 0) -> dict[str, object]:
    return {"input_tokens": inp, "output_tokens": out, "input_tokens_cache_read": cache_read,
            "input_tokens_cache_write": 0, "reasoning_tokens": 0,
            "total_tokens": inp + out + cache_read}


@pytest.fixture
def mixed_runs(make_run: WriteRun, runs_dir: Path) -> Path:
    """env_a: three runs of agent x with usage (CPU 10, 30, 20 s), one older run without;
    agent y (Inspect) with tokens of two models and dollars; env_b: a local-isolation run
    (usage but no agent CPU) and an older run."""
    usage = [RunUsage(10.0, 2.0, 4.0, 3), RunUsage(30.0, 4.0, 6.0, 5),
             RunUsage(20.0, 3.0, 5.0, 4)]
    for i, u in enumerate(usage):
        make_run(f"x{i}", "env_a", "x", 600, [(0, 0.0), (100 * (i + 1), 0.2 * (i + 1))],
                 usage=u)
    make_run("x_old", "env_a", "x", 600, [(0, 0.0), (500, 0.9)])
    cost = {"tokens": {"m/one": _tokens(1000, 200, 50), "m/two": _tokens(10, 5)},
            "dollars": 0.25, "unpriced": [], "prices_from": "prices.json", "error": ""}
    make_run("y0", "env_a", "y", 600, [(0, 0.0), (300, 0.5)],
             usage=RunUsage(40.0, 1.0, 2.0, 2), cost=cost)
    make_run("local", "env_b", "x", 600, [(0, 0.0), (60, 0.1)],
             usage=RunUsage(None, 1.5, 2.5, 2))
    make_run("b_old", "env_b", "x", 600, [(0, 0.0), (70, 0.3)])
    # env_c: two runs with usage, one of them under local isolation
    make_run("c_local", "env_c", "x", 600, [(0, 0.0), (60, 0.1)],
             usage=RunUsage(None, 1.0, 1.0, 2))
    make_run("c_bwrap", "env_c", "x", 600, [(0, 0.0), (60, 0.1)],
             usage=RunUsage(8.0, 1.0, 1.0, 2))
    return runs_dir


def _rows(root: Path) -> dict[tuple[str, str], CostRow]:
    table = from_run_dirs(root, rule_for=rule)
    return {(r.env_id, r.agent): r for r in cost_rows(table)}


def test_medians_over_the_runs_that_recorded_them(mixed_runs: Path) -> None:
    rows = _rows(mixed_runs)
    x = rows[("env_a", "x")]
    assert x.runs == 4 and x.usage_recorded == 3
    med = x.medians
    assert med["agent_cpu_s"].value == 20.0 and med["agent_cpu_s"].runs == 3
    assert med["scoring_cpu_s"].value == 3.0
    assert med["scorings"].value == 4.0
    # the wall clock is in every run's score log, the older one's too: 100, 200, 300, 500
    assert med["wall_s"].value == 250.0 and med["wall_s"].runs == 4
    assert med["total_tokens"].value is None and med["total_tokens"].runs == 0
    # the row's "usage recorded" (3 of 4) already says how many runs have usage figures
    assert cell_text(x, "agent_cpu_s") == ("20.0", "")
    c = _rows(mixed_runs)[("env_c", "x")]
    assert cell_text(c, "agent_cpu_s") == ("8.0", "1 of 2 runs")
    assert cell_text(x, "total_tokens") == (NOT_RECORDED, "")


def test_tokens_summed_over_models_and_dollars(mixed_runs: Path) -> None:
    y = _rows(mixed_runs)[("env_a", "y")]
    med = y.medians
    assert med["input_tokens"].value == 1010
    assert med["output_tokens"].value == 205
    assert med["cached_tokens"].value == 50
    assert med["total_tokens"].value == 1265
    assert med["dollars"].value == 0.25


def test_older_runs_are_not_recorded_never_zero(mixed_runs: Path) -> None:
    b = _rows(mixed_runs)[("env_b", "x")]
    # one run with usage but no CPU figure (local isolation), one older run
    assert cell_text(b, "agent_cpu_s") == (NOT_COUNTED, "")
    assert cell_text(b, "scoring_cpu_s") == ("1.5", "")
    assert b.usage_recorded == 1 and b.runs == 2
    data = report_json(build_report(from_run_dirs(mixed_runs, rule_for=rule),
                                    ReportSettings(n_boot=100)))
    runs = {r["run_id"]: r for r in data["runs"]}
    assert runs["x_old"]["usage"]["usage_recorded"] is False
    assert runs["x_old"]["usage"]["agent_cpu_s"] is None
    assert runs["x_old"]["usage"]["scoring_cpu_s"] is None
    assert runs["x0"]["usage"]["agent_cpu_s"] == 10.0
    cost = data["cost"]
    assert cost["runs_without_usage"] == 2
    assert cost["gpu_s"] == "not measured"
    row = next(r for r in cost["rows"] if (r["env"], r["agent"]) == ("env_b", "x"))
    assert row["agent_cpu_s"] == {"median": None, "runs": 0}
    assert row["usage_recorded"] == 1
    json.dumps(data, allow_nan=False)  # JSON-safe


def test_a_table_of_older_runs_only(make_run: WriteRun, runs_dir: Path) -> None:
    make_run("old1", "env_a", "x", 600, [(0, 0.0), (50, 0.4)])
    make_run("old2", "env_a", "x", 600, [(0, 0.0), (80, 0.6)])
    report = build_report(from_run_dirs(runs_dir, rule_for=rule), ReportSettings(n_boot=100))
    (row,) = report.cost
    for metric in ("agent_cpu_s", "scoring_cpu_s", "scorings", "total_tokens"):
        assert cell_text(row, metric) == (NOT_RECORDED, ""), metric
    # the chart falls back to wall time, which every run has
    chart = report_json(report)["cost"]["chart"]
    assert chart["axis"] == "wall_s"
    assert sorted(p["cost"] for p in chart["points"]) == [50, 80]


def test_chart_points_are_final_scores_against_agent_cpu(mixed_runs: Path) -> None:
    chart = report_json(build_report(from_run_dirs(mixed_runs, rule_for=rule),
                                     ReportSettings(n_boot=100)))["cost"]["chart"]
    assert chart["axis"] == "agent_cpu_s"
    points = {p["run_id"]: p for p in chart["points"]}
    assert len(points) == 9  # one per run
    assert points["x2"]["cost"] == 20.0 and math.isclose(points["x2"]["score"], 0.6)
    assert points["x_old"]["cost"] is None  # not recorded: not drawn
    assert points["local"]["cost"] is None


def test_html_has_the_cost_section_and_chart(mixed_runs: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "out"
    result = CliRunner().invoke(report_command, ["--runs-root", str(mixed_runs), "--out",
                                                 str(out), "--bootstrap", "100"])
    assert result.exit_code == 0, result.output
    html = (out / "report.html").read_text()
    section = html[html.index("<h2>Cost per run"):]
    assert "not recorded" in section and NOT_COUNTED in section
    assert "2 of 9 runs have no usage record" in section
    assert "1,265" in section and "$0.25" in section  # y's tokens and dollars
    assert "<small>in 1,010</small><br><small>out 205</small><br><small>cached 50" in section
    assert 'alt="score vs cost"' in section
    uri = section.split('alt="score vs cost" src="', 1)[1].split('"', 1)[0]
    svg = base64.b64decode(uri.split(",", 1)[1]).decode()
    assert "env_a" in svg and "env_b (2 of 2 runs not recorded)" in svg
    data = json.loads((out / "report.json").read_text())
    assert len(data["cost"]["rows"]) == 4
    # the terminal table says it too
    assert "Cost per run" in result.output


def test_no_token_columns_without_tokens(make_run: WriteRun, runs_dir: Path) -> None:
    from rebench.analysis.html import cost_section

    make_run("r1", "env_a", "x", 600, [(0, 0.0), (50, 0.4)], usage=RunUsage(5.0, 1.0, 1.0, 2))
    report = build_report(from_run_dirs(runs_dir, rule_for=rule), ReportSettings(n_boot=100))
    section = cost_section(report, {}, "", "no figures")
    assert "tokens</th>" not in section
    assert "No run here recorded model tokens" in section
    assert "<td>5.0</td>" in section


def test_a_real_sandboxed_run_reaches_the_cost_table(toy_env: str, tmp_path: Path) -> None:
    """End to end: a toy_probe reference run in bubblewrap records its sandbox's CPU and
    its scorings, and the report's cost table and chart carry them as numbers."""
    from rebench.agents.base import make_agent
    from rebench.harness.driver import execute_run
    from rebench.harness.run import create_run
    from rebench.sandbox import Isolation
    from rebench.sandbox.bwrap import bwrap_available

    if not bwrap_available():
        pytest.skip("needs bubblewrap")
    root = tmp_path / "runs"
    run = create_run(toy_env, "cpu", "reference", 300.0, Isolation.BWRAP, root=root)
    execute_run(run, make_agent("reference"))
    usage = run.record.usage
    if usage is None or usage.agent_cpu_s is None:
        pytest.skip("no cgroup with CPU accounting on this machine")
    data = report_json(build_report(from_run_dirs(root), ReportSettings(n_boot=100)))
    (row,) = data["cost"]["rows"]
    assert row["usage_recorded"] == 1
    assert row["agent_cpu_s"] == {"median": pytest.approx(usage.agent_cpu_s, abs=1e-3),
                                  "runs": 1}
    assert row["scorings"]["median"] == usage.scorings >= 2  # t=0 and the final score
    assert row["scoring_cpu_s"]["median"] > 0
    assert data["cost"]["chart"]["axis"] == "agent_cpu_s"
    assert data["runs"][0]["usage"]["agent_cpu_s"] == pytest.approx(usage.agent_cpu_s,
                                                                    abs=1e-3)


def test_external_rows_say_cost_not_recorded(make_csv: Callable[..., Path]) -> None:
    from rebench.analysis.html import cost_section
    from rebench.analysis.sources import from_csv

    path = make_csv([{"env": "e", "agent": "a", "run_id": "r1", "time_limit_s": 600,
                      "working_s": 600, "normalized": 0.5}])
    report = build_report(from_csv(path, rule_for=rule), ReportSettings(n_boot=100))
    section = cost_section(report, {}, "", "no figures")
    assert "Not recorded" in section and "<table" not in section
    data = report_json(report)
    assert data["runs"][0]["usage"] is None
    assert data["cost"]["runs_without_usage"] == 1
    assert data["cost"]["chart"]["points"][0]["cost"] is None
