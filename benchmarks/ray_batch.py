"""`rebench batch --ray` on a local 2-node Ray cluster (one machine): overhead and scores.

    python benchmarks/ray_batch.py overhead [--repeats 5]   # submit -> first action
    python benchmarks/ray_batch.py scores                   # Ray batch vs local batch

overhead: one attempt at a time on an idle node (its worker warm, its assets prepared by a
first attempt that is not counted); the replay agent's first action writes the wall clock
into the workspace. Reported per attempt: submit -> the task starts on the node (Ray), ->
the harness's run_start event (harness process, prepare check, run creation), -> the first
action. Attempts are scored by the line-count scorer of tests/harness/ray_support.py, so the
machine is not busy with timing runs meanwhile (the first action does not wait for scores).

scores: the `start` and `reference` agents (seeds 0 and 1) on triton_cumsum cpu with the
real scorer, as a Ray batch over 2 nodes, then as a local batch; normalized scores side by
side. Both batches run one attempt at a time (Ray: `in_flight: 1`), so the timed calls of
one attempt never share the machine's cores with another attempt.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # loopback only

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[1]
FIRST = '{"action": "exec", "cmd": "date +%s.%N > first_action.txt"}\n'


def retry_start(start: Callable[[], T], tries: int = 3) -> T:
    """Ray gives a node 30 s to register, fixed; a loaded machine can miss that."""
    for attempt in range(tries):
        try:
            return start()
        except Exception as exc:
            if "timed out during startup" not in str(exc) or attempt == tries - 1:
                raise
    raise AssertionError("unreachable")


def start_cluster(base: Path) -> object:
    import ray
    from ray.cluster_utils import Cluster

    cluster = retry_start(lambda: Cluster(
        initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False}))
    for name in ("node_a", "node_b"):
        cache = base / name
        env = {"REBENCH_CACHE": str(cache), "REBENCH_CALIBRATION": str(cache / "cal.json"),
               "OMP_NUM_THREADS": "1"}
        retry_start(lambda env=env: cluster.add_node(num_cpus=1, env_vars=env))
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    return cluster


def plan(data: dict[str, object], isolation: str) -> object:
    from rebench.agents.base import make_agent
    from rebench.harness.batch import parse_batch_spec
    from rebench.scale.driver import make_plan

    return make_plan(parse_batch_spec(data, cluster=True, make_agent=make_agent), isolation)


def overhead(repeats: int, isolation: str, base: Path) -> None:
    from rebench.scale.driver import RayOptions, run_ray_batch

    sys.path.insert(0, str(REPO / "tests" / "harness"))
    from ray_support import NODE_ENTRY

    actions = base / "first.jsonl"
    actions.write_text(FIRST)
    options = RayOptions(node_entry=NODE_ENTRY, poll_s=0.05)
    batch = {"environments": ["triton_cumsum"], "agents": [f"replay:{actions}"],
             "seeds": [0, 1], "budgets": ["2m"]}  # 2 attempts: one per node, warms both
    run_ray_batch(plan(batch, isolation), base / "runs", options)  # type: ignore[arg-type]
    rows_all = []
    for _ in range(repeats):
        one = {**batch, "seeds": [0]}
        (row,) = run_ray_batch(plan(one, isolation), base / "runs", options)  # type: ignore[arg-type]
        first = float((base / "runs" / row.run_id / "workspace" / "first_action.txt")
                      .read_text())
        rows_all.append((row, first))
    table = {
        "submit -> task starts on the node": [r.task_started_at - r.submitted_at
                                              for r, _ in rows_all],
        "task start -> run_start event": [r.first_event_at - r.task_started_at
                                          for r, _ in rows_all],
        "run_start event -> first action": [f - r.first_event_at for r, f in rows_all],
        "submit -> first action (total)": [f - r.submitted_at for r, f in rows_all],
    }
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {repeats} attempts, {isolation}, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    print("| from -> to | median s | max s |\n| --- | --- | --- |")
    for name, values in table.items():
        print(f"| {name} | {statistics.median(values):.2f} | {max(values):.2f} |")


def scores(isolation: str, base: Path) -> None:
    from rebench.agents.base import make_agent
    from rebench.harness.batch import parse_batch_spec, run_batch
    from rebench.sandbox import Isolation
    from rebench.scale.driver import RayOptions, run_ray_batch

    batch = {"environments": ["triton_cumsum"], "agents": ["start", "reference"],
             "seeds": [0, 1], "budgets": ["10m"]}
    rows = run_ray_batch(plan({**batch, "in_flight": 1}, isolation),  # type: ignore[arg-type]
                         base / "ray-runs", RayOptions())
    local = run_batch(parse_batch_spec({**batch, "gpus": "none"}, make_agent=make_agent),
                      Isolation(isolation),
                      base / "local-runs")
    by_key = {(o.job.agent, o.job.seed): o.final_normalized for o in local}
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load average {os.getloadavg()[0]:.1f}\n")
    print("| attempt | node | Ray batch | local batch |\n| --- | --- | --- | --- |")
    for row in rows:
        agent, seed = row.label.split()[1], int(row.label.split("seed=")[1])
        print(f"| {row.label} | {row.node_id[:8]} | {row.final_normalized:.3f} | "
              f"{by_key[(agent, seed)]:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["overhead", "scores"])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from rebench.core.discovery import load_spec
    from rebench.harness.prepare import prepare_environment
    from rebench.sandbox.bwrap import bwrap_available

    isolation = "bwrap" if bwrap_available() else "local"
    spec = load_spec("triton_cumsum")
    prepare_environment(spec, spec.profile("cpu"))  # the driver's own (local batch)
    with tempfile.TemporaryDirectory() as tmp:
        cluster = start_cluster(Path(tmp))
        try:
            if args.what == "overhead":
                overhead(args.repeats, isolation, Path(tmp))
            else:
                scores(isolation, Path(tmp))
        finally:
            import ray

            ray.shutdown()
            cluster.shutdown()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
