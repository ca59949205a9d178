"""Golden tests (cpu profile, slow): the starting answer normalizes to about 0 and the
reference (experiments through the service, a fitted scaling law) to about 1; the score is
hidden from the agent in replay and in agent_view (what rebench-task and Inspect show);
LAST aggregation."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest

from rebench.agents.base import make_agent
from rebench.core.calibration import resolve_anchors
from rebench.core.normalize import AnchorSource, normalize
from rebench.core.score import ScoreResult
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.environments.small_scaling_law.assets import load_protected
from rebench.harness.driver import execute_run
from rebench.harness.events import read_events
from rebench.harness.run import create_run
from rebench.harness.session import agent_view
from rebench.harness.workspace import materialize_solution
from rebench.inspect_ext.tools import agent_score_log
from rebench.sandbox import Isolation
from rebench.sandbox.bwrap import bwrap_available
from rebench.scoring import ScoreKind

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not bwrap_available(), reason="needs bubblewrap")]
Scorer = Callable[[Path, ScoreKind], ScoreResult]


def normalized(spec: EnvironmentSpec, profile: Profile, result: ScoreResult) -> float:
    return normalize(result.raw, resolve_anchors(spec, profile), spec.direction)


def test_starting_normalizes_to_zero(ssl_spec: EnvironmentSpec, ssl_cpu: Profile,
                                     ssl_assets: Path, score_folder: Scorer) -> None:
    result = score_folder(ssl_assets / "public", ScoreKind.FINAL)
    assert result.valid, result.message
    # The anchors are this prepare's (its drawn budget): the official scoring of the start
    # must agree with the prepare's own measurement of it.
    assert resolve_anchors(ssl_spec, ssl_cpu).source is AnchorSource.PREPARE
    assert abs(normalized(ssl_spec, ssl_cpu, result)) <= 0.05, result.details


def test_reference_normalizes_to_one(ssl_spec: EnvironmentSpec, ssl_cpu: Profile,
                                     ssl_assets: Path, score_folder: Scorer,
                                     tmp_path: Path) -> None:
    folder = materialize_solution(ssl_spec, ssl_cpu, "reference", tmp_path / "ref",
                                  Isolation.BWRAP)
    result = score_folder(folder, ScoreKind.FINAL)
    assert result.valid, result.message
    assert 0.8 <= normalized(ssl_spec, ssl_cpu, result) <= 1.3, result.details


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
