"""`rebench report` on runs the real harness made with the start and reference agents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rebench.cli_report import report
from rebench.core.discovery import environment_ids, load_spec

ENV_ID = "triton_cumsum"  # its cpu profile scores in seconds


@pytest.mark.slow
@pytest.mark.skipif(ENV_ID not in environment_ids(), reason=f"{ENV_ID} is not installed")
def test_report_on_start_and_reference_runs(tmp_path: Path) -> None:
    from rebench.agents.base import make_agent
    from rebench.harness.driver import execute_run
    from rebench.harness.evaluate import calibrate
    from rebench.harness.prepare import prepare_environment
    from rebench.harness.run import create_run
    from rebench.sandbox import Isolation

    spec = load_spec(ENV_ID)
    prepare_environment(spec, spec.profile("cpu"))
    # Timing anchors are this machine's: calibrate, so the runs record measured anchors.
    calibrate(spec, spec.profile("cpu"), repeats=1, isolation=Isolation.LOCAL)
    root = tmp_path / "runs"
    for agent in ("start", "reference"):
        run = create_run(ENV_ID, "cpu", agent, 300.0, Isolation.LOCAL, root=root)
        execute_run(run, make_agent(agent))
    result = CliRunner().invoke(report, ["--runs-root", str(root), "--json",
                                         "--bootstrap", "100"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["n_runs"] == 2 and data["problems"] == []
    at = {s["agent"]: s for s in data["score_at_k"] if s["budget_s"] == 300.0}
    # Each run's score is its best of three timings (t=0, the agent's, the final one), so a
    # run of the start lands a little above 0 and the reference near 1 on a noisy CPU.
    assert at["start"]["mean"] == pytest.approx(0.0, abs=0.2)
    assert 0.6 < at["reference"]["mean"] < 1.5
    records = [json.loads(p.read_text()) for p in root.glob("*/run.json")]
    assert [r["anchors"]["source"] for r in records] == ["calibration"] * 2
    out = tmp_path / "report"
    result = CliRunner().invoke(report, ["--runs-root", str(root), "--out", str(out),
                                         "--bootstrap", "100"])
    assert result.exit_code == 0, result.output
    assert (out / "report.html").stat().st_size > 10_000
