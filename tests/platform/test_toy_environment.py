"""A throwaway environment (tests/fixtures/environments/toy_probe) built only by following
docs/adding-an-environment.md: found through $REBENCH_ENVIRONMENTS_PATH, with a metered
run-scoped service, a hidden score, validity-only requested scores and LAST aggregation."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rebench.agents.base import make_agent
from rebench.core.discovery import load_spec, validate_environment
from rebench.harness.driver import execute_run
from rebench.harness.evaluate import evaluate_folder
from rebench.harness.events import read_events
from rebench.harness.resume import verify_run
from rebench.harness.run import create_run
from rebench.harness.workspace import materialize_solution
from rebench.sandbox import Isolation
from rebench.sandbox.bwrap import bwrap_available

pytestmark = pytest.mark.skipif(not bwrap_available(), reason="needs bubblewrap")


def test_the_page_is_enough_for_a_valid_environment(toy_env: str) -> None:
    assert validate_environment(toy_env) == []


def test_a_run_calls_the_service_and_never_sees_its_score(toy_env: str, tmp_path: Path) -> None:
    actions = tmp_path / "actions.jsonl"
    lines = [
        {"action": "exec", "cmd": "rebench-service probe '{\"x\": 0}'"},
        {"action": "service", "name": "probe", "request": {"x": 1}},
        {"action": "score"},
        {"action": "exec", "cmd": "for i in 1 2 3 4; do rebench-service probe '{\"x\": 2}'; "
                                  "done; true"},
        {"action": "write_file", "path": "answer.json", "content": "{\"x\": 15}"},
        {"action": "score"},
    ]
    actions.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    run = create_run(toy_env, "cpu", f"replay:{actions}", 120, Isolation.BWRAP,
                     root=tmp_path / "runs")
    execute_run(run, make_agent(f"replay:{actions}"))
    events = read_events(run.run_dir / "events.jsonl")
    calls = [e.data for e in events if e.type == "service_call"]
    assert [c["ok"] for c in calls] == [True] * 5 + [False]  # the sixth is over the cap
    scores = [e.data for e in events if e.type == "score"]
    execs = [e.data for e in events if e.type == "exec"]
    reply = json.loads(execs[0]["stdout"])  # from inside the sandbox, over the socket
    assert reply["ok"] is True and 100 <= reply["f"] < 400  # target in [10, 20)
    entries = run.entries()
    assert [e.kind for e in entries] == ["initial", "agent", "agent", "final"]
    assert all(not e.valid for e in entries[1:3])  # requested scores check validity only
    assert entries[1].message == {"valid": True}  # the check, rendered by the schema
    assert entries[-1].valid and math.isfinite(run.record.final_normalized or math.nan)
    # LAST aggregation: the final answer counts, whatever the start scored
    assert run.record.final_normalized == pytest.approx(entries[-1].normalized)
    assert len(scores) == 2 and verify_run(run.run_dir).ok


def test_the_reference_uses_the_service_and_scores_one(toy_env: str, tmp_path: Path) -> None:
    spec = load_spec(toy_env)
    profile = spec.profile("cpu")
    folder = materialize_solution(spec, profile, "reference", tmp_path / "ref", Isolation.BWRAP)
    evaluation = evaluate_folder(spec, profile, folder, Isolation.BWRAP)
    assert evaluation.result.valid, evaluation.result.message
    assert evaluation.normalized == pytest.approx(1.0, abs=1e-6)
