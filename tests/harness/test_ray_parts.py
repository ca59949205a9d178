"""The parts of `rebench batch --ray` that need no cluster: archives coming back from
nodes (and attacks on them), the batch store, task resources, batch-file settings, the
node-wide prepare lock, calibration merging."""

from __future__ import annotations

import io
import json
import tarfile
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from rebench.agents.base import make_agent
from rebench.core.errors import RebenchError
from rebench.core.normalize import Anchors, AnchorSource
from rebench.harness.batch import parse_batch_spec
from rebench.harness.records import RunRecord
from rebench.sandbox import Isolation
from rebench.scale.attempt import AttemptSpec, ScaleError
from rebench.scale.store import AttemptState, BatchPlan, BatchStore, with_state
from rebench.scale.transfer import WORKSPACE_OMITTED, pack_run, unpack_run

ATTEMPT = AttemptSpec(batch_id="batch-x", key=3, try_no=1, env_id="triton_cumsum",
                      env_version="1", profile="cpu", agent="start", seed=0, budget_s=60.0,
                      isolation="local")


def make_run(parent: Path, run_id: str = "run-1", **changes: object) -> Path:
    run_dir = parent / run_id
    (run_dir / "protected" / "snapshots" / "0000").mkdir(parents=True)
    (run_dir / "protected" / "score_log.jsonl").write_text("{}\n")
    (run_dir / "workspace").mkdir()
    (run_dir / "workspace" / "solution.py").write_text("x = 1\n")
    fields: dict[str, object] = dict(
        run_id=run_id, env_id="triton_cumsum", env_version="1", profile="cpu",
        agent="start", seed=0, budget_s=60.0, hardware="cpu:test",
        anchors=Anchors(1.0, 0.0, AnchorSource.PROFILE_DEFAULT, "cpu:test"),
        isolation=Isolation.LOCAL, created_at="2026-01-01T00:00:00")
    fields.update(changes)
    record = RunRecord(**fields)  # type: ignore[arg-type]
    (run_dir / "run.json").write_text(json.dumps(record.to_json()))
    return run_dir


def tar_of(members: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return buffer.getvalue()


def test_round_trip_lands_once(tmp_path: Path) -> None:
    archive, omitted = pack_run(make_run(tmp_path / "node"), workspace_cap_bytes=1 << 20)
    root = tmp_path / "runs"
    first = unpack_run(archive, ATTEMPT, root)
    assert omitted == 0 and not first.already_there
    assert (root / "run-1" / "workspace" / "solution.py").read_text() == "x = 1\n"
    (root / "run-1" / "marker").write_text("landed first")
    again = unpack_run(archive, ATTEMPT, root)  # the driver died after landing it
    assert again.already_there and (root / "run-1" / "marker").is_file()
    assert not any((root / ".incoming").iterdir())


def test_workspace_over_the_cap_stays_on_the_node(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "node")
    (run_dir / "workspace" / "big.bin").write_bytes(b"0" * 5000)
    archive, omitted = pack_run(run_dir, workspace_cap_bytes=1000)
    landed = unpack_run(archive, ATTEMPT, tmp_path / "runs")
    assert omitted > 5000 and not (landed.run_dir / "workspace").exists()
    assert int((landed.run_dir / WORKSPACE_OMITTED).read_text()) == omitted
    assert (landed.run_dir / "protected" / "score_log.jsonl").is_file()


def test_escaping_members_are_dropped(tmp_path: Path) -> None:
    record = make_run(tmp_path / "node") / "run.json"
    archive = tar_of({"run.json": record.read_bytes(), "../../escaped": b"pwned",
                      "/abs_escape": b"pwned", "workspace/ok.txt": b"ok"},
                     links={"workspace/passwd": "/etc/passwd", "workspace/up": "../../.."})
    landed = unpack_run(archive, ATTEMPT, tmp_path / "runs")
    assert (landed.run_dir / "workspace" / "ok.txt").read_bytes() == b"ok"
    assert not (landed.run_dir / "workspace" / "passwd").exists()
    assert not (landed.run_dir / "workspace" / "up").is_symlink()
    assert not any(p.name == "escaped" for p in tmp_path.rglob("*"))
    # An absolute name is made relative to the run folder (the data filter): inside it.
    assert all(p.parent == landed.run_dir for p in tmp_path.rglob("abs_escape"))


@pytest.mark.parametrize("changes, complaint", [
    ({"agent": "reference"}, "the attempt is"),
    ({"seed": 7}, "the attempt is"),
    ({"env_version": "0"}, "the attempt is"),
    ({"budget_s": 9999.0}, "budget"),
    ({"run_id": "../outside"}, "unsafe run id"),
    ({"run_id": ".hidden"}, "unsafe run id"),
])
def test_a_node_cannot_land_another_run(tmp_path: Path, changes: dict[str, object],
                                         complaint: str) -> None:
    record = make_run(tmp_path / "node", **changes) / "run.json"
    with pytest.raises(ScaleError, match=complaint):
        unpack_run(tar_of({"run.json": record.read_bytes()}), ATTEMPT, tmp_path / "runs")
    assert [p.name for p in (tmp_path / "runs").iterdir()] == [".incoming"]


def test_garbage_archive_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ScaleError, match="cannot be unpacked"):
        unpack_run(b"not a tar", ATTEMPT, tmp_path / "runs")
    with pytest.raises(ScaleError, match="no readable run"):
        unpack_run(tar_of({"workspace/x": b""}), ATTEMPT, tmp_path / "runs")


def plan_for(prepared_env: str, **settings: object) -> BatchPlan:
    from rebench.scale.driver import make_plan

    data = {"environments": [prepared_env], "agents": ["start", "reference"], **settings}
    return make_plan(parse_batch_spec(data, cluster=True, make_agent=make_agent), "local")


def test_store_round_trip(prepared_env: str, tmp_path: Path) -> None:
    plan = plan_for(prepared_env)
    store = BatchStore.create(tmp_path, plan)
    rows = store.rows()
    assert [r.state for r in rows] == [AttemptState.QUEUED] * 2 and store.plan() == plan
    store.save(with_state(rows[1], AttemptState.LOST, tries=1, history=("try 1 lost",)))
    again = BatchStore(tmp_path, plan.batch_id).rows()
    assert again[1].history == ("try 1 lost",) and again[1].state is AttemptState.LOST
    with pytest.raises(ScaleError, match="no batch"):
        BatchStore(tmp_path, "batch-missing").plan()
    with pytest.raises(ScaleError, match="bad batch id"):
        BatchStore(tmp_path, "../elsewhere")
    with pytest.raises(FileExistsError):
        BatchStore.create(tmp_path, plan)  # one batch id, one batch


def test_task_resources(prepared_env: str) -> None:
    pytest.importorskip("ray")
    from rebench.scale.driver import task_options

    plan = plan_for(prepared_env, profiles=["cpu", "gpu"], gpu_type="H200", cpus=4)
    by_profile = {job.profile: key for key, job in enumerate(plan.jobs)}
    gpu = task_options(plan, by_profile["gpu"])
    cpu = task_options(plan, by_profile["cpu"], prefer_node="ab" * 28)
    assert gpu["num_gpus"] == 1 and gpu["resources"] == {"gpu_type:H200": 1.0}
    assert cpu["num_gpus"] == 0 and "resources" not in cpu and cpu["num_cpus"] == 4.0
    assert cpu["memory"] == int(plan.jobs[by_profile["cpu"]].memory_gb * 1024**3)
    assert gpu["max_retries"] == 0  # retries are counted by rebench, not Ray
    assert cpu["scheduling_strategy"].soft


@pytest.mark.parametrize("settings, complaint", [
    ({"gpu_type": "H 200"}, "gpu_type"), ({"gpu_type": 3}, "gpu_type"),
    ({"cpus": 0}, "cpus"), ({"cpus": True}, "cpus"),
    ({"retries": -1}, "retries"), ({"retries": 1.5}, "retries"),
    ({"in_flight": 0}, "in_flight"), ({"in_flight": True}, "in_flight"),
])
def test_bad_cluster_settings(prepared_env: str, settings: dict[str, object],
                              complaint: str) -> None:
    with pytest.raises(RebenchError, match=complaint):
        parse_batch_spec({"environments": [prepared_env], "agents": ["start"], **settings},
                         make_agent=make_agent)


def test_in_flight_caps_the_attempts_submitted_at_once(prepared_env: str,
                                                      tmp_path: Path) -> None:
    """With `in_flight: 1` the driver holds back every attempt but one until it is done
    (a like-for-like comparison with a local batch that runs one at a time)."""
    from rebench.scale.driver import RayBatch, RayOptions

    plan = plan_for(prepared_env, in_flight=1, seeds=[0, 1])
    assert plan.in_flight == 1 and len(plan.jobs) == 4
    batch = RayBatch(BatchStore.create(tmp_path, plan), RayOptions())
    submitted: list[int] = []

    def submit(row: object) -> None:
        submitted.append(row.key)  # type: ignore[attr-defined]
        batch.pending[object()] = row.key  # type: ignore[attr-defined]

    batch._submit = submit  # type: ignore[method-assign]
    batch.waiting = [0, 1, 2, 3]
    batch._fill()
    assert submitted == [0] and batch.waiting == [1, 2, 3]
    batch._fill()
    assert submitted == [0]  # still one out
    batch.pending.clear()  # it finished
    batch._fill()
    assert submitted == [0, 1]
    uncapped = RayBatch(BatchStore.create(tmp_path / "u", plan_for(prepared_env)), RayOptions())
    uncapped._submit = submit  # type: ignore[method-assign]
    batch.pending.clear()
    uncapped.pending = batch.pending
    uncapped.waiting = [0, 1]
    uncapped._fill()
    assert submitted == [0, 1, 0, 1]


def test_cluster_batches_do_not_need_local_gpus(prepared_env: str) -> None:
    data = {"environments": [prepared_env], "agents": ["start"], "profiles": ["gpu"],
            "gpus": "none"}
    with pytest.raises(RebenchError, match="needs 1 GPU"):
        parse_batch_spec(data, make_agent=make_agent)
    assert parse_batch_spec(data, cluster=True, make_agent=make_agent).jobs[0].gpus == 1


def test_concurrent_attempts_on_a_node_wait_for_one_prepare(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import rebench.environments.triton_cumsum.prepare as env_prepare
    from rebench.scale.node import ensure_prepared

    monkeypatch.setenv("REBENCH_CACHE", str(tmp_path / "node-cache"))
    monkeypatch.delenv("REBENCH_PREPARE", raising=False)  # this test is about preparing
    calls: list[float] = []
    real = env_prepare.prepare

    def slow_prepare(ctx: object) -> None:
        calls.append(time.monotonic())
        time.sleep(0.5)  # a second prepare would start inside this window without the lock
        real(ctx)  # type: ignore[arg-type]

    monkeypatch.setattr(env_prepare, "prepare", slow_prepare)
    paths: list[Path] = []
    threads = [threading.Thread(target=lambda: paths.append(
        ensure_prepared("triton_cumsum", "cpu"))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(calls) == 1 and len(paths) == 3 and len(set(paths)) == 1


def test_node_calibration_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rebench.scale.node import merged_calibration

    mine = tmp_path / "node-cal.json"
    mine.write_text(json.dumps({"k|1|cpu|cpu:node": {"starting_raw": 2.0}}))
    monkeypatch.setenv("REBENCH_CALIBRATION", str(mine))
    driver = {"k|1|cpu|cpu:node": {"starting_raw": 1.0}, "k|1|cpu|cpu:other": {"x": 1}}
    merged = json.loads(merged_calibration(json.dumps(driver), tmp_path).read_text())
    assert merged["k|1|cpu|cpu:node"] == {"starting_raw": 2.0}
    assert "k|1|cpu|cpu:other" in merged


def test_resume_needs_ray() -> None:
    from rebench.cli import main

    result = CliRunner().invoke(main, ["batch", "--resume", "batch-x"])
    assert result.exit_code == 2 and "needs --ray" in result.output


def test_live_view_counts_states_per_node() -> None:
    from rich.console import Console

    from rebench.scale.store import AttemptRow
    from rebench.scale.view import render, summary

    rows = [AttemptRow(0, "a", AttemptState.RUNNING, 1, "10.0.0.1", "n1" * 28),
            AttemptRow(1, "b", AttemptState.FINISHED, 2, "10.0.0.1", "n1" * 28,
                       run_id="run-b", final_normalized=0.5, history=("try 1 lost",)),
            AttemptRow(2, "c")]
    console = Console(record=True, width=150)
    console.print(render("batch-x", rows))
    console.print(summary(rows))
    text = console.export_text()
    assert "batch-x: 1/3 attempts done" in text and "(not started)" in text
    node_line = next(line for line in text.splitlines() if "10.0.0.1" in line)
    cells = [c.strip() for c in node_line.split("│")][2:8]
    assert cells == ["", "1", "", "1", "", "1"]  # queued running lost finished failed retried
    assert "run-b" in text and "0.500" in text


def test_nodes_key_the_log_with_the_drivers_key(tmp_path: Path) -> None:
    """A run scored on a node must verify on the driver: the node's harness gets the
    driver's key (0600, beside the staged run, never inside its workspace)."""
    import os
    import stat

    from rebench.harness.score_log import master_key
    from rebench.scale.node import driver_key_env

    key = master_key()
    env = driver_key_env(key.hex(), tmp_path)
    path = Path(env["REBENCH_KEY_FILE"])
    assert path.read_bytes() == key
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert driver_key_env("", tmp_path) == {}
