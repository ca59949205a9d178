"""The score is hidden from the agent in replay and in agent_view (what rebench-task and
Inspect show); LAST aggregation. The golden bands (the starting answer about 0, the
reference, experiments through the service and a fitted scaling law, about 1) are declared
in degenerate.py (GOLDEN) and checked by the generic test,
tests/environments/test_golden_all_environments.py."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest

from rebench.agents.base import make_agent
from rebench.core.score import ScoreResult
from rebench.core.spec import EnvironmentSpec
from rebench.environments.small_scaling_law.assets import load_protected
from rebench.harness.driver import execute_run
from rebench.harness.events import read_events
from rebench.harness.run import create_run
from rebench.harness.session import agent_view
from rebench.inspect_ext.tools import agent_score_log
from rebench.sandbox import Isolation
from rebench.sandbox.bwrap import bwrap_available
from rebench.scoring import ScoreKind

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not bwrap_available(), reason="needs bubblewrap")]
Scorer = Callable[[Path, ScoreKind], ScoreResult]


def test_the_agent_never_sees_its_score_and_the_last_counts(
        ssl_spec: EnvironmentSpec, ssl_assets: Path,
        replay_agent: Callable[[list[dict[str, object]]], str], tmp_path: Path) -> None:
    first = {"loss_prediction": 7.0, "max_iters": 4, "n_embd": 16}
    last = {"loss_prediction": 7.5, "max_iters": 2, "n_embd": 16}
    agent = replay_agent([
        {"action": "write_file", "path": "answer.json", "content": json.dumps(first)},
        {"action": "score"},
        {"action": "score"},
        {"action": "service", "name": "experiments", "request": {"n_embd": 64,
                                                                 "max_iters": 10_000}},
        {"action": "write_file", "path": "answer.json", "content": json.dumps(last)},
    ])
    run = create_run("small_scaling_law", "cpu", agent, 600, Isolation.BWRAP,
                     root=tmp_path / "runs")
    execute_run(run, make_agent(agent))
    events = read_events(run.run_dir / "events.jsonl")
    shown = [e.data for e in events if e.type == "score"]  # what the replay agent got
    frac = round(16 * 16 * 4 * 72 * 64 * 8 * 4 / load_protected(ssl_assets).target_flops, 4)
    assert [s["message"] for s in shown] == [{"valid": True, "frac_flops_used": frac}] * 2
    calls = [e.data for e in events if e.type == "service_call"]
    assert [c["ok"] for c in calls] == [False]  # over the cap: refused, still logged
    # rebench-task (the session) and Inspect's tools show entries through agent_view
    for entry in run.entries():
        assert set(agent_view(entry, ssl_spec.score_visible_to_agent)) == {"index", "message"}
    for row in agent_score_log(run.entries(), ssl_spec.score_visible_to_agent):
        assert set(row) == {"index", "message", "kind", "working_s"}
    entries = run.entries()
    assert [e.kind for e in entries] == ["initial", "agent", "agent", "final"]
    assert all(not e.valid for e in entries[1:3])  # requested scores check validity only
    assert entries[-1].valid and entries[-1].details["max_iters"] == 2
    assert run.record.final_normalized == pytest.approx(entries[-1].normalized)
    assert math.isfinite(entries[0].raw)
