"""One run lifecycle (harness/lifecycle.py) for every front end: the CLI driver and the
Inspect sandbox's start/finish drive the same RunLifecycle, so the same agent actions give
the same lifecycle events in the same order, and only the lifecycle module emits them."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from rebench.agents.base import make_agent
from rebench.core.pyparse import parse_python
from rebench.harness.driver import execute_run
from rebench.harness.events import read_events
from rebench.harness.records import RunStatus
from rebench.harness.resume import verify_run
from rebench.harness.run import Run, create_run
from rebench.sandbox import Isolation
from rebench.sandbox.bwrap import bwrap_available

pytestmark = pytest.mark.skipif(not bwrap_available(), reason="needs bubblewrap")

LIFECYCLE = ("run_start", "run_resume", "agent_start", "agent_end", "agent_error",
             "initial_score", "final_score", "run_end")
SRC = Path(__file__).resolve().parents[2] / "src" / "rebench"


def _sequence(run: Run) -> list[str]:
    events = read_events(run.run_dir / "events.jsonl")
    # initial_score runs beside the agent: where it lands among the agent's events is
    # timing, so the comparison is of the phases' order without it, and its presence.
    kinds = [e.type for e in events if e.type in LIFECYCLE]
    assert kinds.count("initial_score") == 1, kinds
    return [k for k in kinds if k != "initial_score"]


def test_cli_and_inspect_paths_give_the_same_lifecycle(toy_env: str, tmp_path: Path) -> None:
    pytest.importorskip("inspect_ai")
    from rebench.inspect_ext.lifecycle import RunConfig, finish_session, start_session

    actions = [{"action": "exec", "cmd": "true"},
               {"action": "write_file", "path": "answer.json", "content": "{\"x\": 15}"},
               {"action": "score"}]
    replay = tmp_path / "actions.jsonl"
    replay.write_text("".join(json.dumps(a) + "\n" for a in actions))
    cli = create_run(toy_env, "cpu", f"replay:{replay}", 120, Isolation.BWRAP,
                     root=tmp_path / "runs")
    execute_run(cli, make_agent(f"replay:{replay}"))

    life = start_session(RunConfig(env_id=toy_env, budget_s=120, isolation="bwrap"))
    session = life.session
    assert session is not None
    session.exec("true")
    session.write_file("answer.json", "{\"x\": 15}")
    session.score()
    summary = finish_session(session, life)
    inspect_run = life.run

    assert _sequence(cli) == _sequence(inspect_run) == [
        "run_start", "agent_start", "agent_end", "final_score", "run_end"]
    for run in (cli, inspect_run):
        assert run.record.status is RunStatus.FINISHED
        assert [e.kind for e in run.entries()] == ["initial", "agent", "final"]
        assert verify_run(run.run_dir).ok
    assert summary.normalized == inspect_run.record.final_normalized
    # finishing again changes nothing (the scorer and the cleanup may both finish)
    assert finish_session(session, life).score_log == summary.score_log


def test_only_the_lifecycle_emits_lifecycle_events() -> None:
    """Every `emit(...)` whose event type (any string in its first argument, conditional
    ones included) is a lifecycle phase lives in harness/lifecycle.py."""
    phases = {"run_start", "run_resume", "agent_start", "agent_end", "agent_error",
              "final_score", "run_end"}
    found: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(parse_python(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "emit" and node.args):
                continue
            for part in ast.walk(node.args[0]):
                if isinstance(part, ast.Constant) and part.value in phases:
                    found.setdefault(part.value, set()).add(path.relative_to(SRC).as_posix())
    assert set(found) == phases, found
    assert all(places == {"harness/lifecycle.py"} for places in found.values()), found
