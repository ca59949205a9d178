"""The driver of a Ray batch: one Ray task per try of an attempt, results into the runs root.

Ray does the scheduling (each task asks for the profile's CPUs, GPUs and memory, and a
`gpu_type:<T>` custom resource when the batch names a GPU type); rebench only counts tries.
Ray's own task retries are off: a try lost with its node or worker is resubmitted here, at
most `retries` times, preferring the node it ran on (where its run folder may survive and
is resumed). The batch's state lives in a BatchStore, so `--resume BATCH_ID` continues it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from rebench.core.calibration import load_entries
from rebench.core.paths import calibration_file
from rebench.harness import index
from rebench.harness.events import read_events
from rebench.harness.records import RunStatus
from rebench.harness.resume import verify_run
from rebench.harness.run_values import BatchLanding
from rebench.harness.score_log import master_key
from rebench.scale.attempt import (
    DEFAULT_WORKSPACE_CAP_BYTES,
    AttemptResult,
    AttemptSpec,
    ScaleError,
)
from rebench.scale.node import NODE_ENTRY, run_attempt
from rebench.scale.store import AttemptRow, AttemptState, BatchPlan, BatchStore, with_state
from rebench.scale.transfer import unpack_run

OnChange = Callable[[Sequence[AttemptRow]], None]


@dataclass(frozen=True)
class RayOptions:
    """How to reach the cluster. `address`: `auto`, `local` (start one here), host:port or
    ray://host:port. `node_entry` is the harness command a node runs (tests swap it)."""

    address: str = "auto"
    node_entry: tuple[str, ...] = NODE_ENTRY
    poll_s: float = 0.5


def task_options(plan: BatchPlan, key: int, prefer_node: str = "") -> dict[str, Any]:
    """The Ray resources one try of attempt `key` asks for."""
    job = plan.jobs[key]
    options: dict[str, Any] = {
        "num_cpus": plan.cpus, "num_gpus": job.gpus,
        "memory": int(job.memory_gb * 1024**3), "max_retries": 0, "retry_exceptions": False,
        "name": f"rebench:{plan.batch_id}:{key}",
    }
    if job.gpus and plan.gpu_type:
        options["resources"] = {f"gpu_type:{plan.gpu_type}": float(job.gpus)}
    if prefer_node:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(prefer_node, soft=True)
    return options


class _Tracker:
    """A small actor the tasks tell when they start, so the driver knows node and state."""

    def __init__(self) -> None:
        self._seen: list[tuple[int, int, str, str, float]] = []

    def started(self, key: int, try_no: int, node_id: str, node_ip: str, at: float) -> None:
        self._seen.append((key, try_no, node_id, node_ip, at))

    def drain(self) -> list[tuple[int, int, str, str, float]]:
        seen, self._seen = self._seen, []
        return seen


def connect(address: str) -> None:
    """Join the cluster at `address` unless this process already is in one."""
    import ray

    if ray.is_initialized():
        return
    try:
        ray.init(address=None if address == "local" else address,
                 log_to_driver=False, configure_logging=False)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise ScaleError(f"cannot reach a Ray cluster at {address!r}: {exc}") from None


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


class RayBatch:
    """Runs (or picks up) the attempts of one stored batch on the connected cluster."""

    def __init__(self, store: BatchStore, options: RayOptions,
                 on_change: OnChange = lambda rows: None) -> None:
        self.store = store
        self.plan = store.plan()
        self.options = options
        self.on_change = on_change
        self.rows = {row.key: row for row in store.rows()}
        self.pending: dict[Any, int] = {}  # ObjectRef -> attempt key
        self.waiting: list[int] = []  # attempt keys not yet submitted (the in_flight cap)
        self.calibration = json.dumps({k: e.__dict__ | {
            "starting_samples": list(e.starting_samples),
            "reference_samples": list(e.reference_samples)}
            for k, e in load_entries(calibration_file()).items()})
        self.score_log_key = master_key().hex()

    def run(self) -> list[AttemptRow]:
        """Submit every attempt that is not done, follow them to the end, return all rows."""
        import ray

        connect(self.options.address)
        self.tracker = self._start_tracker()
        self.waiting = [k for k in sorted(self.rows) if not self.rows[k].state.done]
        self._fill()
        self._changed()
        while self.pending:
            ready, _ = ray.wait(list(self.pending), num_returns=1, timeout=self.options.poll_s)
            self._note_starts()
            for ref in ready:
                self._collect(ref, self.pending.pop(ref))
            self._fill()
            self._changed()
        return [self.rows[k] for k in sorted(self.rows)]

    def _fill(self) -> None:
        """Submit waiting attempts while fewer than the plan's `in_flight` are out (all of
        them without a cap: Ray queues what the cluster cannot place yet)."""
        cap = self.plan.in_flight or len(self.rows)
        while self.waiting and len(self.pending) < cap:
            self._submit(self.rows[self.waiting.pop(0)])

    def _start_tracker(self) -> Any:
        """The tracker lives on the head node, which outlives the workers; if it is lost
        all the same, Ray restarts it (a few start notes are lost, never a result)."""
        import ray

        actor = ray.remote(num_cpus=0, max_restarts=-1)(_Tracker).options(
            resources={"node:__internal_head__": 0.001})
        return actor.remote()

    def _attempt(self, row: AttemptRow) -> AttemptSpec:
        job = self.plan.jobs[row.key]
        return AttemptSpec(
            batch_id=self.plan.batch_id, key=row.key, try_no=row.tries, env_id=job.env_id,
            env_version=job.env_version, profile=job.profile, agent=job.agent, seed=job.seed,
            budget_s=job.budget_s, isolation=self.plan.isolation, calibration=self.calibration,
            workspace_cap_bytes=self.plan.workspace_cap_bytes,
            score_log_key=self.score_log_key,
        )

    def _submit(self, row: AttemptRow) -> None:
        import ray

        row = with_state(row, AttemptState.QUEUED, tries=row.tries + 1, submitted_at=time.time())
        self._save(row)
        task = ray.remote(run_attempt).options(**task_options(self.plan, row.key, row.node_id))
        ref = task.remote(self._attempt(row), self.tracker, self.options.node_entry)
        self.pending[ref] = row.key

    def _note_starts(self) -> None:
        import ray
        from ray.exceptions import RayError

        try:
            seen = ray.get(self.tracker.drain.remote(), timeout=30)
        except (RayError, TimeoutError):  # the tracker is restarting: notes come later
            return
        for key, try_no, node_id, node_ip, at in seen:
            row = self.rows[key]
            if row.tries == try_no and not row.state.done:
                self._save(with_state(row, AttemptState.RUNNING, node=node_ip,
                                      node_id=node_id, task_started_at=at))

    def _collect(self, ref: Any, key: int) -> None:
        import ray
        from ray.exceptions import RayError, RayTaskError

        row = self.rows[key]
        try:
            result: AttemptResult = ray.get(ref)
        except RayTaskError as exc:  # the task itself raised: a harness bug, not a lost node
            self._save(with_state(row, AttemptState.FAILED, error=str(exc)[-2000:]))
            return
        except RayError as exc:  # node or worker died: the try is lost
            self._lost(row, f"try {row.tries} on {row.node or '?'} lost: "
                            f"{type(exc).__name__}")
            return
        try:
            self._land(row, result)
        except ScaleError as exc:
            self._save(with_state(row, AttemptState.FAILED, error=str(exc)))

    def _lost(self, row: AttemptRow, what: str) -> None:
        row = with_state(row, AttemptState.LOST, history=(*row.history, what))
        self._save(row)
        if len(row.history) > self.plan.retries:
            self._save(with_state(row, AttemptState.FAILED,
                                  error=f"lost {len(row.history)} times; no retries left"))
        else:
            self._submit(row)

    def _land(self, row: AttemptRow, result: AttemptResult) -> None:
        row = replace(row, node=result.node_ip, node_id=result.node_id, resumed=result.resumed,
                      task_started_at=result.task_started_at)
        if not result.archive:
            self._save(with_state(row, AttemptState.FAILED,
                                  error=f"no run was created on {result.hostname}: "
                                        f"{result.error}"))
            return
        landed = unpack_run(result.archive, self._attempt(row), self.store.root)
        record = landed.record
        record.extra.batch = BatchLanding(
            batch_id=self.plan.batch_id, attempt=row.key, tries=row.tries,
            lost_tries=row.history, resumed=result.resumed, node_ip=result.node_ip,
            node_id=result.node_id, hostname=result.hostname,
            workspace_omitted_bytes=result.workspace_omitted_bytes,
        )
        _save_record(landed.run_dir, record)
        report = verify_run(landed.run_dir)
        finished = record.status is RunStatus.FINISHED and report.ok
        events = read_events(landed.run_dir / "events.jsonl")
        first = next((_epoch(e.time) for e in events if e.type == "run_start"), None)
        problems = "; ".join(report.problems)
        self._save(with_state(
            row, AttemptState.FINISHED if finished else AttemptState.FAILED,
            run_id=record.run_id, final_normalized=record.final_normalized,
            first_event_at=first,
            error="" if finished else (problems or f"harness exit {result.returncode}"),
        ))

    def _save(self, row: AttemptRow) -> None:
        self.rows[row.key] = row
        self.store.save(row)

    def _changed(self) -> None:
        self.on_change([self.rows[k] for k in sorted(self.rows)])


def _save_record(run_dir: Path, record: Any) -> None:
    """Rewrite run.json (atomically) and index the run in the driver's index."""
    path = run_dir / "run.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record.to_json(), indent=2))
    tmp.replace(path)
    index.upsert_run(index.index_path(run_dir.parent), record, run_dir)


def make_plan(spec: Any, isolation: str, source: str = "",
              workspace_cap_bytes: int | None = None) -> BatchPlan:
    """A new batch's plan from a checked batch file (harness.batch.BatchSpec)."""
    from rebench.core.discovery import load_spec
    from rebench.scale.store import AttemptJob, new_batch_id

    jobs = tuple(
        AttemptJob(job.env_id, load_spec(job.env_id).version, job.profile, job.agent,
                   job.seed, job.budget_s, job.gpus, job.memory_gb)
        for job in spec.jobs
    )
    settings = spec.cluster
    return BatchPlan(
        batch_id=new_batch_id(), created_at=datetime.now().astimezone().isoformat(),
        isolation=isolation, retries=settings.retries, cpus=settings.cpus,
        gpu_type=settings.gpu_type, jobs=jobs, source=source, in_flight=settings.in_flight,
        workspace_cap_bytes=workspace_cap_bytes or DEFAULT_WORKSPACE_CAP_BYTES,
    )


def run_ray_batch(plan: BatchPlan, root: Path, options: RayOptions,
                  on_change: OnChange = lambda rows: None) -> list[AttemptRow]:
    """Store a new batch under `root` and run it on the cluster."""
    store = BatchStore.create(root, plan)
    return RayBatch(store, options, on_change).run()


def resume_ray_batch(batch_id: str, root: Path, options: RayOptions,
                     on_change: OnChange = lambda rows: None) -> list[AttemptRow]:
    """Pick up a stored batch after a driver restart: attempts not done are submitted again,
    preferring the node each last ran on (its run folder is resumed there)."""
    store = BatchStore(root, batch_id)
    store.plan()  # ScaleError if there is no such batch
    return RayBatch(store, options, on_change).run()
