"""Cheat: read L* (the sweep table shipped in the package) or the held-out data from inside
the sandbox. A probe run: the package, its data files and the prepared protected/ folder
are not visible to the agent."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

import rebench.environments.small_scaling_law.sweep as sweep_module
from rebench.agents.base import make_agent
from rebench.harness.driver import execute_run
from rebench.harness.events import read_events
from rebench.harness.run import create_run
from rebench.sandbox import Isolation
from rebench.sandbox.bwrap import bwrap_available

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not bwrap_available(), reason="needs bubblewrap")]


def test_the_sandbox_cannot_see_the_sweep_or_the_held_out_data(
        ssl_assets: Path, replay_agent: Callable[[list[dict[str, object]]], str],
        tmp_path: Path) -> None:
    table = sweep_module.sweep_path("cpu")
    assert table.is_file()  # the trusted side has it
    probes = {
        "table": f"cat {table}",
        "import": "python -c 'import rebench.environments.small_scaling_law.sweep as s; "
                  "print(s.load_sweep(\"cpu\"))'",
        "find": "find / -xdev \\( -name 'sweep_*.json' -o -name 'heldout_rows.npy' \\) "
                "2>/dev/null | head",
        "protected": f"ls {ssl_assets / 'protected'}",
        "runtime": "ls -R /opt/rebench-runtime 2>/dev/null | grep -i sweep",
    }
    agent = replay_agent([{"action": "exec", "cmd": cmd} for cmd in probes.values()])
    run = create_run("small_scaling_law", "cpu", agent, 300, Isolation.BWRAP,
                     root=tmp_path / "runs")
    execute_run(run, make_agent(agent))
    execs = [e.data for e in read_events(run.run_dir / "events.jsonl") if e.type == "exec"]
    out = dict(zip(probes, execs, strict=True))
    loss = str(json.loads(table.read_text())["points"][0]["loss"])
    for name, data in out.items():
        assert loss not in data["stdout"], name
        assert "sweep_cpu.json" not in data["stdout"] and "heldout" not in data["stdout"], name
    assert out["table"]["returncode"] != 0 and out["import"]["returncode"] != 0
    assert out["protected"]["returncode"] != 0
