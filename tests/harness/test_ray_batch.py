"""`rebench batch --ray` on a local multi-node Ray cluster (one machine, fake GPU resources).

A batch of cpu attempts spreads over two nodes; one node is killed mid-attempt; every attempt
is accounted for, lands in the driver's runs root and index, verifies, and scores what the
same attempts score locally. A driver killed mid-batch is picked up with `--resume`.
The scorer is the deterministic line counter of ray_support.py, so "equal" means equal.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import pytest

# Ray must not pick this machine's network address: the test cluster lives on loopback.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
ray = pytest.importorskip("ray")
cluster_utils = pytest.importorskip("ray.cluster_utils")

from ray_support import NODE_ENTRY, line_count_score  # noqa: E402

from rebench.agents.base import make_agent  # noqa: E402
from rebench.harness.batch import parse_batch_spec  # noqa: E402
from rebench.harness.driver import execute_run  # noqa: E402
from rebench.harness.index import index_path, list_runs  # noqa: E402
from rebench.harness.records import RunRecord, RunStatus  # noqa: E402
from rebench.harness.resume import verify_run  # noqa: E402
from rebench.harness.run import create_run  # noqa: E402
from rebench.sandbox import Isolation  # noqa: E402
from rebench.sandbox.bwrap import bwrap_available  # noqa: E402
from rebench.scale.driver import (  # noqa: E402
    RayOptions,
    make_plan,
    resume_ray_batch,
    run_ray_batch,
)
from rebench.scale.store import AttemptRow, AttemptState, BatchStore  # noqa: E402

pytestmark = pytest.mark.slow
T = TypeVar("T")
ISOLATION = "bwrap" if bwrap_available() else "local"
BATCH = {"environments": ["triton_cumsum"], "agents": ["start", "reference"],
         "seeds": [0, 1], "budgets": ["5m"], "retries": 2}
WAIT_S = 150.0  # generous: the machine running CI may be loaded


def _starting(start: Callable[[], T], tries: int = 3) -> T:
    """Ray gives a node 30 s to register, fixed; a loaded machine can miss that."""
    for attempt in range(tries):
        try:
            return start()
        except Exception as exc:
            if "timed out during startup" not in str(exc) or attempt == tries - 1:
                raise
    raise AssertionError("unreachable")


class LocalCluster:
    """A head without CPUs (the driver's) and worker nodes with caches of their own."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.cluster = _starting(lambda: cluster_utils.Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": 0, "include_dashboard": False},
        ))
        self.nodes: dict[str, object] = {}

    def add(self, name: str, **resources: object) -> None:
        cache = self.base / name
        env = {"REBENCH_CACHE": str(cache), "REBENCH_CALIBRATION": str(cache / "cal.json"),
               "REBENCH_TEST_SCORE_DELAY_S": "1.5", "OMP_NUM_THREADS": "1"}
        self.nodes[name] = _starting(
            lambda: self.cluster.add_node(num_cpus=1, env_vars=env, **resources))

    def node_id(self, name: str) -> str:
        return str(self.nodes[name].node_id)  # type: ignore[attr-defined]

    def kill(self, name: str) -> None:
        self.cluster.remove_node(self.nodes.pop(name), allow_graceful=False)

    def staged_runs(self, name: str) -> list[Path]:
        return sorted(p.parent for p in (self.base / name).glob("ray-staging/*/*/*/run.json"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    local = LocalCluster(tmp_path_factory.mktemp("ray-nodes"))
    local.add("node_a")
    local.add("node_b", num_gpus=1, resources={"gpu_type:H200": 1})  # fake GPU
    local.cluster.wait_for_nodes()
    ray.init(address=local.cluster.address, log_to_driver=False)
    try:
        yield local
    finally:
        ray.shutdown()
        local.cluster.shutdown()


def local_scores(monkeypatch: pytest.MonkeyPatch, root: Path) -> dict[tuple[str, int], float]:
    """The same attempts run here, in this process, with the same scorer."""
    monkeypatch.setattr("rebench.harness.run.official_score", line_count_score)
    scores = {}
    for job in parse_batch_spec(BATCH, make_agent=make_agent).jobs:
        run = create_run(job.env_id, job.profile, job.agent, job.budget_s,
                         Isolation(ISOLATION), seed=job.seed, root=root)
        scores[(job.agent, job.seed)] = execute_run(run, make_agent(job.agent))
    return scores


def check_landed(rows: Sequence[AttemptRow], root: Path) -> dict[tuple[str, int], float]:
    """Every attempt finished once, its folder is in the runs root and index, verifies."""
    assert [r.state for r in rows] == [AttemptState.FINISHED] * len(rows), rows
    indexed = {rec.run_id: rec for rec, _ in list_runs(index_path(root))}
    scores = {}
    for row in rows:
        record = RunRecord.load(root / row.run_id / "run.json")
        assert record.status is RunStatus.FINISHED and row.run_id in indexed
        assert verify_run(root / row.run_id).ok, verify_run(root / row.run_id).problems
        assert record.extra.batch is not None and record.extra.batch.tries == row.tries
        assert (root / row.run_id / "workspace" / "solution.py").is_file()
        scores[(record.agent, record.seed)] = record.final_normalized
    assert len({r.run_id for r in rows}) == len(rows)
    return scores


def test_node_lost_mid_batch(cluster: LocalCluster, tmp_path: Path, prepared_env: str,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "runs"
    plan = make_plan(parse_batch_spec(BATCH, cluster=True, make_agent=make_agent), ISOLATION)
    killed: list[str] = []

    def kill_node_a_mid_attempt(rows: Sequence[AttemptRow]) -> None:
        if not killed and cluster.staged_runs("node_a"):  # node_a's harness made a run
            killed.append(cluster.node_id("node_a"))
            cluster.kill("node_a")

    rows = run_ray_batch(plan, root, RayOptions(node_entry=NODE_ENTRY),
                         kill_node_a_mid_attempt)
    assert killed, "node_a never started an attempt"
    ran = check_landed(rows, root)
    lost = [r for r in rows if r.history]
    assert lost and all(r.tries == len(r.history) + 1 for r in lost)
    assert all(r.node_id == cluster.node_id("node_b") for r in lost)
    # The harness on the killed node died with it: nothing there finished afterwards.
    stranded = [RunRecord.load(p / "run.json") for p in cluster.staged_runs("node_a")]
    assert stranded and all(r.status is not RunStatus.FINISHED for r in stranded)
    assert ran == local_scores(monkeypatch, tmp_path / "local")


def test_driver_restart_resumes(cluster: LocalCluster, tmp_path: Path) -> None:
    """A driver SIGKILLed mid-batch: `--resume` finishes every attempt, none twice, and
    an attempt whose run folder survived on its node is resumed there."""
    if "node_a" not in cluster.nodes:
        cluster.add("node_a")  # back to two nodes after the first test
        cluster.cluster.wait_for_nodes()
    root = tmp_path / "runs"
    plan = make_plan(parse_batch_spec(BATCH, cluster=True, make_agent=make_agent), ISOLATION)
    BatchStore.create(root, plan)
    driver = subprocess.Popen(
        [sys.executable, "-c", _DRIVER, cluster.cluster.address, str(root), plan.batch_id],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    store = BatchStore(root, plan.batch_id)
    deadline = time.monotonic() + WAIT_S
    while not (caught := _running_with_a_run_folder(cluster, store)):
        assert time.monotonic() < deadline and driver.poll() is None, "driver never started"
        time.sleep(0.2)
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    rows = resume_ray_batch(plan.batch_id, root, RayOptions(node_entry=NODE_ENTRY))
    check_landed(rows, root)
    # The attempt caught mid-run went back to its node and continued its run folder there.
    assert all(rows[key].resumed and rows[key].tries == 2 for key in caught), rows
    # Picking up a finished batch from the command line runs nothing again.
    from click.testing import CliRunner

    from rebench.cli import main

    result = CliRunner().invoke(main, ["batch", "--resume", plan.batch_id, "--ray", "auto"],
                                env={"REBENCH_RUNS": str(root)})
    assert result.exit_code == 0, result.output
    assert BatchStore(root, plan.batch_id).rows() == rows


def _running_with_a_run_folder(cluster: LocalCluster, store: BatchStore) -> list[int]:
    """Attempts the driver saw running whose harness has made its run folder on the node."""
    keys = []
    for row in store.rows():
        if row.state is not AttemptState.RUNNING or not row.node_id:
            continue
        for name in cluster.nodes:
            if cluster.node_id(name) == row.node_id and any(
                    p.parent.name == str(row.key) and p.parent.parent.name == store.batch_id
                    for p in cluster.staged_runs(name)):
                keys.append(row.key)
    return keys


_DRIVER = """
import sys
import ray
from ray_support import NODE_ENTRY
from pathlib import Path
from rebench.scale.driver import RayOptions, resume_ray_batch
ray.init(address=sys.argv[1], log_to_driver=False)
resume_ray_batch(sys.argv[3], Path(sys.argv[2]), RayOptions(node_entry=NODE_ENTRY))
"""
