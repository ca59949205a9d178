"""Cheat: write a better answer.json after the deadline (a process left behind, or the last
action racing the clock). The final score uses the snapshot taken at the deadline."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from rebench.agents.base import make_agent
from rebench.harness.driver import execute_run
from rebench.harness.run import create_run
from rebench.sandbox import Isolation
from rebench.sandbox.bwrap import bwrap_available

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not bwrap_available(), reason="needs bubblewrap")]

BEFORE = {"loss_prediction": 7.0, "max_iters": 4, "n_embd": 16}
AFTER = {"loss_prediction": 6.0, "max_iters": 6, "n_embd": 32}


def test_the_final_score_uses_the_answer_at_the_deadline(
        ssl_assets: Path, replay_agent: Callable[[list[dict[str, object]]], str],
        tmp_path: Path) -> None:
    late = json.dumps(AFTER).replace('"', '\\"')
    agent = replay_agent([
        {"action": "write_file", "path": "answer.json", "content": json.dumps(BEFORE)},
        # A detached writer that fires after the deadline, and a last action that tries too.
        {"action": "exec", "cmd": f"(sleep 8; echo \"{late}\" > answer.json) "
                                  ">/dev/null 2>&1 &"},
        {"action": "sleep", "seconds": 30},
        {"action": "write_file", "path": "answer.json", "content": json.dumps(AFTER)},
    ])
    run = create_run("small_scaling_law", "cpu", agent, 5, Isolation.BWRAP,
                     root=tmp_path / "runs")
    execute_run(run, make_agent(agent))
    entries = run.entries()
    assert [e.kind for e in entries] == ["initial", "final"]
    final = entries[-1]
    assert final.valid, final.message
    assert final.details["n_embd"] == BEFORE["n_embd"]
    assert final.details["max_iters"] == BEFORE["max_iters"]
