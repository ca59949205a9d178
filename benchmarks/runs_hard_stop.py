"""How late the hard stop lands after the deadline, with a detached process running
(target: <= 1 s).

    python benchmarks/runs_hard_stop.py [--env triton_cumsum] [--repeats 3] [--budget 3]

Each repeat runs a replay agent that starts `setsid nohup sleep ... &` in the sandbox and
then waits past its budget. A watcher polls the host's process table every 5 ms; lateness is
the instant the detached process is gone minus the instant the working clock reached the
budget (taken from the run's `deadline` event; the harness's own `hard_stop.lateness_s` is
shown too).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path


def alive(tag: str) -> bool:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if tag in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode():
                    return True
            except OSError:
                pass
    return False


def one_run(env_id: str, root: Path, budget: float) -> tuple[float, float]:
    from rebench.agents.replay import ReplayAgent
    from rebench.harness.driver import execute_run
    from rebench.harness.events import read_events
    from rebench.harness.run import create_run
    from rebench.sandbox import default_isolation

    tag = f"{2000 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6:06d}"
    actions = root / f"{tag}.jsonl"
    root.mkdir(parents=True, exist_ok=True)
    actions.write_text(json.dumps({"action": "exec",
                                   "cmd": f"setsid nohup sleep {tag} >/dev/null 2>&1 &"})
                       + "\n" + json.dumps({"action": "sleep", "seconds": 3600}) + "\n")
    agent = ReplayAgent(str(actions))
    run = create_run(env_id, "cpu", agent.name, budget, default_isolation(), root=root)
    gone_at: list[float] = []

    def watch() -> None:
        while not alive(tag):
            time.sleep(0.005)
        while alive(tag):
            time.sleep(0.005)
        gone_at.append(time.time())

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    execute_run(run, agent)
    watcher.join(30)
    events = read_events(run.run_dir / "events.jsonl")
    deadline = next(e for e in events if e.type == "deadline")
    stop = next(e for e in events if e.type == "hard_stop")
    deadline_at = datetime.fromisoformat(deadline.time).timestamp()
    overshoot = deadline.working_s - budget  # the clock had passed the budget by this much
    return gone_at[0] - deadline_at + overshoot, float(stop.data["lateness_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="triton_cumsum")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--budget", type=float, default=3.0)
    args = parser.parse_args()
    from rebench.core.discovery import load_spec
    from rebench.harness.prepare import prepare_environment

    spec = load_spec(args.env)
    prepare_environment(spec, spec.profile("cpu"))
    with tempfile.TemporaryDirectory() as tmp:
        results = [one_run(args.env, Path(tmp) / "runs", args.budget)
                   for _ in range(args.repeats)]
    watched = [w for w, _ in results]
    reported = [r for _, r in results]
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {args.env} cpu, budget {args.budget} s, "
          f"{args.repeats} runs\n")
    print("| measure | median s | max s |")
    print("| --- | --- | --- |")
    print(f"| detached process gone after the deadline (watcher) | "
          f"{statistics.median(watched):.3f} | {max(watched):.3f} |")
    print(f"| hard_stop.lateness_s (harness) | {statistics.median(reported):.3f} | "
          f"{max(reported):.3f} |")


if __name__ == "__main__":
    main()
