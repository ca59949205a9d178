"""Time from `rebench run` to the agent's first action, after prepare (target: <= 2 s).

    python benchmarks/runs_first_action.py [--env triton_cumsum] [--repeats 5]

Each repeat starts `rebench run ENV --agent replay:FILE` as a fresh process; the replay's
first action is a command in the sandbox that writes the wall clock into the workspace.
Reported: that instant minus the instant the process was started (Python start-up, run
creation, the t=0 snapshot, the sandbox start), and the same inside one process
(create_run + execute_run). The t=0 score runs in the background meanwhile.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

FIRST = '{"action": "exec", "cmd": "date +%s.%N > first_action.txt"}\n'


def one_cli_run(env_id: str, root: Path, actions: Path) -> float:
    env = {**os.environ, "REBENCH_RUNS": str(root)}
    before = set(root.iterdir()) if root.exists() else set()
    start = time.time()
    subprocess.run([sys.executable, "-m", "rebench.cli", "run", env_id, "--agent",
                    f"replay:{actions}", "--budget", "10m"], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    (run_dir,) = [p for p in set(root.iterdir()) - before if p.is_dir()]
    return float((run_dir / "workspace" / "first_action.txt").read_text()) - start


def one_in_process_run(env_id: str, root: Path, actions: Path) -> float:
    from rebench.agents.replay import ReplayAgent
    from rebench.harness.driver import execute_run
    from rebench.harness.run import create_run
    from rebench.sandbox import default_isolation

    start = time.time()
    agent = ReplayAgent(str(actions))
    run = create_run(env_id, "cpu", agent.name, 600, default_isolation(), root=root)
    execute_run(run, agent)
    return float((run.workspace / "first_action.txt").read_text()) - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="triton_cumsum")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from rebench.core.discovery import load_spec
    from rebench.harness.prepare import prepare_environment

    spec = load_spec(args.env)
    prepare_environment(spec, spec.profile("cpu"))
    with tempfile.TemporaryDirectory() as tmp:
        actions = Path(tmp) / "actions.jsonl"
        actions.write_text(FIRST)
        cli = [one_cli_run(args.env, Path(tmp) / "cli", actions) for _ in range(args.repeats)]
        inproc = [one_in_process_run(args.env, Path(tmp) / "inproc", actions)
                  for _ in range(args.repeats)]
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {args.env} cpu, {args.repeats} runs each\n")
    print("| from | to | median s | max s |")
    print("| --- | --- | --- | --- |")
    print(f"| `rebench run` process start | first action | {statistics.median(cli):.2f} | "
          f"{max(cli):.2f} |")
    print(f"| create_run (in process) | first action | {statistics.median(inproc):.2f} | "
          f"{max(inproc):.2f} |")


if __name__ == "__main__":
    main()
