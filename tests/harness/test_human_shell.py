"""The human agent: a shell in the sandbox with `rebench-task`, driven through a pipe."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from rebench.agents.human import HumanAgent
from rebench.harness.driver import execute_run
from rebench.harness.events import read_events
from rebench.harness.run import create_run
from rebench.sandbox import Isolation


def drive(agent_input: bytes, run_dir_holder: list[Path], env_id: str, isolation: Isolation,
          root: Path, budget: float = 60) -> str:
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    output: list[bytes] = []

    def collect() -> None:
        while chunk := os.read(out_r, 65536):
            output.append(chunk)

    reader = threading.Thread(target=collect, daemon=True)
    reader.start()
    os.write(in_w, agent_input)
    os.close(in_w)
    run = create_run(env_id, "cpu", "human", budget, isolation, root=root)
    run_dir_holder.append(run.run_dir)
    try:
        execute_run(run, HumanAgent("", in_fd=in_r, out_fd=out_w))
    finally:
        os.close(out_w)
        reader.join(10)
        os.close(in_r)
        os.close(out_r)
    return b"".join(output).decode(errors="replace")


@pytest.mark.usefixtures("fake_scorer")
def test_shell_with_rebench_task(prepared_env: str, isolation: Isolation,
                                 tmp_path: Path) -> None:
    script = (b"rebench-task time\n"
              b"echo '# edited by a human' >> solution.py\n"
              b"rebench-task score\n"
              b"rebench-task status\n"
              b"rebench-task bogus; echo exit=$?\n"
              b"cat ../protected/score_log.jsonl 2>&1 | head -c 200\n"
              b"exit\n")
    holder: list[Path] = []
    out = drive(script, holder, prepared_env, isolation, tmp_path / "runs")
    run_dir = holder[0]
    assert "working time used" in out
    assert "score #1: valid" in out
    assert "exit=2" in out
    assert '"prev_hash"' not in out  # the score log stayed out of reach
    entries = (run_dir / "protected" / "score_log.jsonl").read_text().splitlines()
    assert len(entries) == 3  # initial, the human's score, final
    assert "# edited by a human" in (run_dir / "workspace" / "solution.py").read_text()
    assert any(e.type == "score" for e in read_events(run_dir / "events.jsonl"))


@pytest.mark.usefixtures("fake_scorer")
def test_shell_is_killed_at_the_deadline(prepared_env: str, isolation: Isolation,
                                         tmp_path: Path) -> None:
    holder: list[Path] = []
    # never exits on its own: the input keeps a command running past the budget
    out = drive(b"sleep 600\n", holder, prepared_env, isolation, tmp_path / "runs",
                budget=2.0)
    events = read_events(holder[0] / "events.jsonl")
    stop = next(e for e in events if e.type == "hard_stop")
    assert stop.data["lateness_s"] < 1.0
    assert "time is up" in out
