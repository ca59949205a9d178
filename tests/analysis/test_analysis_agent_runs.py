"""`rebench report` on runs the real harness made with the start and reference agents, on
toy_probe (deterministic: its scorings take no time and have no noise)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rebench.cli_report import report
from rebench.core.discovery import load_spec
from rebench.sandbox.bwrap import bwrap_available


# toy_probe's reference calls its service from inside the sandbox.
@pytest.mark.skipif(not bwrap_available(), reason="needs bubblewrap")
def test_report_on_start_and_reference_runs(toy_env: str, tmp_path: Path) -> None:
    from rebench.agents.base import make_agent
    from rebench.harness.driver import execute_run
    from rebench.harness.evaluate import calibrate
    from rebench.harness.run import create_run
    from rebench.sandbox import Isolation

    spec = load_spec(toy_env)
    # Calibrate, so that the runs record measured anchors.
    isolation = Isolation.BWRAP
    calibrate(spec, spec.profile("cpu"), repeats=1, isolation=isolation)
    root = tmp_path / "runs"
    for agent in ("start", "reference"):
        run = create_run(toy_env, "cpu", agent, 300.0, isolation, root=root)
        execute_run(run, make_agent(agent))
    result = CliRunner().invoke(report, ["--runs-root", str(root), "--json",
                                         "--bootstrap", "100"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["n_runs"] == 2 and data["problems"] == []
    at = {s["agent"]: s for s in data["score_at_k"] if s["budget_s"] == 300.0}
    assert at["start"]["mean"] == pytest.approx(0.0, abs=1e-9)
    assert at["reference"]["mean"] == pytest.approx(1.0, abs=1e-6)
    records = [json.loads(p.read_text()) for p in root.glob("*/run.json")]
    assert [r["anchors"]["source"] for r in records] == ["calibration"] * 2
    out = tmp_path / "report"
    result = CliRunner().invoke(report, ["--runs-root", str(root), "--out", str(out),
                                         "--bootstrap", "100"])
    assert result.exit_code == 0, result.output
    assert (out / "report.html").stat().st_size > 10_000
