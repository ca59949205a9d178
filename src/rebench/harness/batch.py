"""`rebench batch SPEC.yaml`: many attempts on one machine, a few at a time, GPUs exclusive.

    environments: [triton_cumsum]     # required
    agents: [start, reference]        # required (not `human`: a batch has no terminal)
    profiles: [cpu]                   # default [cpu]  (or `profile: cpu`)
    seeds: [0, 1]                     # default [0]
    budgets: [10m, 1h]                # default: each profile's own budget
    concurrency: 2                    # attempts at a time, default 1
    gpus: auto                        # auto (all visible), none, or a list of device ids
    # Only with `--ray` (scale-out on a cluster; docs/scale-out.md):
    gpu_type: H200                    # GPU attempts ask for the `gpu_type:H200` resource
    cpus: 1                           # CPUs each attempt asks for, default 1
    retries: 2                        # resubmissions of an attempt lost with its node
    in_flight: 1                      # attempts on the cluster at once, default: no cap

Every attempt is created (and indexed) up front, so a bad environment, profile, agent or
budget fails the whole batch before anything runs; each then runs in its own harness process
(`rebench resume RUN`) with CUDA_VISIBLE_DEVICES set to the GPUs it holds alone.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rebench.core.discovery import load_spec
from rebench.core.duration import parse_duration
from rebench.core.errors import RebenchError
from rebench.core.hardware import gpu_names
from rebench.harness.agent import AgentFactory
from rebench.harness.records import RunRecord, RunStatus
from rebench.harness.run import create_run
from rebench.sandbox import Isolation

_KEYS = {"environments", "agents", "profiles", "profile", "seeds", "budgets", "concurrency",
         "gpus", "gpu_type", "cpus", "retries", "in_flight"}


class BatchSpecError(RebenchError):
    """A batch file is missing, malformed or names something that does not exist."""


@dataclass(frozen=True)
class BatchJob:
    """One attempt of a batch."""

    env_id: str
    profile: str
    agent: str
    seed: int
    budget_s: float | None
    gpus: int = 0
    memory_gb: float = 4.0

    def label(self) -> str:
        return f"{self.env_id}/{self.profile} {self.agent} seed={self.seed}"


@dataclass(frozen=True)
class ClusterSettings:
    """The batch file's settings for a run on a Ray cluster (`--ray`)."""

    gpu_type: str | None = None
    cpus: float = 1.0
    retries: int = 2
    in_flight: int | None = None  # attempts submitted at once; None: as many as fit


@dataclass(frozen=True)
class BatchSpec:
    """A checked batch file."""

    jobs: tuple[BatchJob, ...]
    concurrency: int = 1
    gpu_ids: tuple[int, ...] = ()
    cluster: ClusterSettings = ClusterSettings()


@dataclass
class BatchOutcome:
    """How one attempt of a batch went."""

    job: BatchJob
    run_id: str = ""
    run_dir: Path | None = None
    state: str = "queued"  # queued, running, finished, failed
    returncode: int | None = None
    final_normalized: float | None = None
    gpus: tuple[int, ...] = field(default_factory=tuple)
    error: str = ""


def _str_list(data: Mapping[str, Any], key: str, default: list[Any] | None) -> list[Any]:
    value = data.get(key, default)
    if value is None:
        raise BatchSpecError(f"the batch file needs {key!r}")
    if not isinstance(value, list):
        value = [value]
    if not value:
        raise BatchSpecError(f"{key!r} is empty")
    return value


def _budgets(data: Mapping[str, Any]) -> list[float | None]:
    budgets: list[float | None] = []
    for item in _str_list(data, "budgets", [None]):
        if item is None:
            budgets.append(None)
            continue
        try:
            budgets.append(parse_duration(str(item)))
        except ValueError as exc:
            raise BatchSpecError(f"budgets: {exc}") from None
    return budgets


def _gpu_ids(value: Any) -> tuple[int, ...]:
    if value in (None, "none", 0, []):
        return ()
    if value == "auto":
        return tuple(range(len(gpu_names())))
    if isinstance(value, list) and all(isinstance(i, int) and i >= 0 for i in value):
        return tuple(dict.fromkeys(value))
    raise BatchSpecError(f"gpus must be auto, none or a list of device ids, got {value!r}")


def _check_agent(agent: str, make_agent: AgentFactory) -> None:
    if agent.split(":", 1)[0] == "human":
        raise BatchSpecError("the human agent needs a terminal; it cannot run in a batch")
    make_agent(agent)  # raises a RebenchError for unknown agents or bad replay files


def _cluster_settings(data: Mapping[str, Any], source: str) -> ClusterSettings:
    gpu_type = data.get("gpu_type")
    if gpu_type is not None and (not isinstance(gpu_type, str) or not gpu_type.strip()
                                 or any(c in gpu_type for c in " ,:{}")):
        raise BatchSpecError(f"{source}: gpu_type must be a name such as H200")
    cpus = data.get("cpus", 1)
    if isinstance(cpus, bool) or not isinstance(cpus, int | float) or not 0 < cpus < 1e4:
        raise BatchSpecError(f"{source}: cpus must be a positive number")
    retries = data.get("retries", 2)
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 100:
        raise BatchSpecError(f"{source}: retries must be an integer from 0 to 100")
    in_flight = data.get("in_flight")
    if in_flight is not None and (isinstance(in_flight, bool) or not isinstance(in_flight, int)
                                  or in_flight < 1):
        raise BatchSpecError(f"{source}: in_flight must be a positive integer")
    return ClusterSettings(gpu_type, float(cpus), retries, in_flight)


def parse_batch_spec(data: Any, source: str = "batch file", *, make_agent: AgentFactory,
                     cluster: bool = False) -> BatchSpec:
    """Check a parsed batch file; BatchSpecError (or another RebenchError) on bad input.
    Every agent is made once with `make_agent` (agents.base.make_agent), so an unknown one
    or a bad replay file fails here. With `cluster` (a Ray batch) GPUs are the cluster's,
    not this machine's."""
    if not isinstance(data, dict):
        raise BatchSpecError(f"{source}: expected a mapping of settings")
    unknown = set(data) - _KEYS
    if unknown:
        raise BatchSpecError(f"{source}: unknown key(s) {sorted(unknown)}")
    envs = [str(e) for e in _str_list(data, "environments", None)]
    agents = [str(a) for a in _str_list(data, "agents", None)]
    profiles = [str(p) for p in _str_list(data, "profiles", [data.get("profile", "cpu")])]
    seeds = _str_list(data, "seeds", [0])
    if not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise BatchSpecError(f"{source}: seeds must be integers")
    concurrency = data.get("concurrency", 1)
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
        raise BatchSpecError(f"{source}: concurrency must be a positive integer")
    gpu_ids = () if cluster else _gpu_ids(data.get("gpus", "auto"))
    settings = _cluster_settings(data, source)
    budgets = _budgets(data)
    for agent in agents:
        _check_agent(agent, make_agent)
    jobs = []
    for env_id, profile in itertools.product(envs, profiles):
        prof = load_spec(env_id).profile(profile)  # raises for unknown env / profile
        needs = prof.gpus
        if not cluster and needs > len(gpu_ids):
            raise BatchSpecError(
                f"{env_id}/{profile} needs {needs} GPU(s), the batch has {len(gpu_ids)}"
            )
        for agent, seed, budget in itertools.product(agents, seeds, budgets):
            jobs.append(BatchJob(env_id, profile, agent, int(seed), budget, needs,
                                 prof.memory_gb))
    return BatchSpec(tuple(jobs), concurrency, gpu_ids, settings)


def yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML error in one line: where (1-based line and column) and what."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return f"{where}{problem}" + (f" ({context})" if context else "")


def load_batch_spec(path: Path, *, make_agent: AgentFactory,
                    cluster: bool = False) -> BatchSpec:
    """Read and check a batch YAML file (see parse_batch_spec)."""
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise BatchSpecError(f"cannot read {path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise BatchSpecError(f"{path} is not valid YAML: {yaml_problem(exc)}") from None
    return parse_batch_spec(data, str(path), make_agent=make_agent, cluster=cluster)


class GpuPool:
    """Device ids handed out exclusively; `acquire` blocks until enough are free."""

    def __init__(self, ids: Sequence[int]) -> None:
        self._free = list(ids)
        self._cond = threading.Condition()

    def acquire(self, n: int) -> tuple[int, ...]:
        if n == 0:
            return ()
        with self._cond:
            self._cond.wait_for(lambda: len(self._free) >= n)
            taken, self._free = self._free[:n], self._free[n:]
            return tuple(taken)

    def release(self, ids: Sequence[int]) -> None:
        with self._cond:
            self._free.extend(ids)
            self._free.sort()
            self._cond.notify_all()


def _execute(outcome: BatchOutcome, pool: GpuPool, root: Path,
             on_update: Callable[[BatchOutcome], None]) -> None:
    """Run one created attempt in its own harness process; never raises."""
    if outcome.run_dir is None:
        raise RuntimeError("a batch attempt was queued before its run was created")
    outcome.gpus = pool.acquire(outcome.job.gpus)
    try:
        outcome.state = "running"
        on_update(outcome)
        env = {**os.environ, "REBENCH_RUNS": str(root),
               "CUDA_VISIBLE_DEVICES": ",".join(map(str, outcome.gpus))}
        with (outcome.run_dir / "harness.log").open("ab") as log:
            proc = subprocess.run(
                [sys.executable, "-m", "rebench.cli", "resume", outcome.run_id],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                check=False,
            )
        outcome.returncode = proc.returncode
        record = RunRecord.load(outcome.run_dir / "run.json")
        outcome.final_normalized = record.final_normalized
        finished = proc.returncode == 0 and record.status is RunStatus.FINISHED
        outcome.state = "finished" if finished else "failed"
    except (OSError, ValueError) as exc:  # a vanished run dir, an unreadable run.json
        outcome.state = "failed"
        outcome.error = f"{type(exc).__name__}: {exc}"
    finally:
        pool.release(outcome.gpus)
    on_update(outcome)


def run_batch(spec: BatchSpec, isolation: Isolation, root: Path,
              on_update: Callable[[BatchOutcome], None] = lambda o: None) -> list[BatchOutcome]:
    """Create every attempt, then run them `spec.concurrency` at a time."""
    outcomes = []
    for job in spec.jobs:
        run = create_run(job.env_id, job.profile, job.agent, job.budget_s, isolation,
                         seed=job.seed, root=root)
        outcomes.append(BatchOutcome(job, run.record.run_id, run.run_dir))
        on_update(outcomes[-1])
    pool = GpuPool(spec.gpu_ids)
    with ThreadPoolExecutor(max_workers=spec.concurrency) as executor:
        futures = [executor.submit(_execute, o, pool, root, on_update) for o in outcomes]
        for future in futures:
            future.result()
    return outcomes
