"""The node side of a Ray batch: the task body, and the harness process it starts.

A task (`run_attempt`) finds or makes the attempt's staging folder on its node, runs
`python -m rebench.scale.node ATTEMPT.json` there (prepare under a node-wide lock, create or
resume the run, the usual harness: sandbox, clock, hard stop, score log), then packs the run
folder and returns it. The harness is a child process that dies with the task's worker
(PR_SET_PDEATHSIG), so a lost worker leaves no harness running on.

Staging: <cache>/ray-staging/<batch_id>/<attempt key>/<run_id>/ on each node. A retry that
lands on the node where an earlier try died resumes that run; one that lands elsewhere
starts afresh.
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from rebench.core.paths import cache_root
from rebench.harness.records import RunRecord, RunStatus
from rebench.sandbox import Isolation
from rebench.scale.attempt import AttemptResult, AttemptSpec, ScaleError
from rebench.scale.transfer import pack_run

NODE_ENTRY: tuple[str, ...] = ("-m", "rebench.scale.node")
_PR_SET_PDEATHSIG = 1


def staging_dir(batch_id: str, key: int) -> Path:
    """Where this node keeps the runs of one attempt of one batch."""
    return cache_root() / "ray-staging" / batch_id / str(key)


def find_run(staging: Path) -> Path | None:
    """The run folder an earlier try left in `staging`, if any."""
    found = sorted(p.parent for p in staging.glob("*/run.json"))
    return found[-1] if found else None


@contextmanager
def node_lock(name: str) -> Iterator[None]:
    """A blocking lock shared by every process of this node (one prepare at a time)."""
    path = cache_root() / "locks" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_prepared(env_id: str, profile_name: str) -> Path:
    """Prepare (env, profile) on this node once; concurrent attempts wait for one prepare,
    later ones only verify the checksums."""
    from rebench.core.discovery import load_spec
    from rebench.harness.prepare import prepare_environment

    spec = load_spec(env_id)
    with node_lock(f"prepare-{env_id}-{profile_name}"):
        return prepare_environment(spec, spec.profile(profile_name))


def merged_calibration(driver_json: str, staging: Path) -> Path:
    """A calibration file for the attempt: the driver's entries, overlaid with this node's
    own (a node's measurement of its hardware wins). Anchors are then looked up by the
    fingerprint of this node, the one that scores."""
    from rebench.core.paths import calibration_file

    merged: dict[str, Any] = {}
    with suppress(json.JSONDecodeError):
        merged.update(json.loads(driver_json))
    local = calibration_file()
    if local.is_file():
        with suppress(OSError, json.JSONDecodeError):
            merged.update(json.loads(local.read_text()))
    path = staging / "calibration.json"
    path.write_text(json.dumps(merged, indent=2))
    return path


def driver_key_env(key_hex: str, staging: Path) -> dict[str, str]:
    """REBENCH_KEY_FILE pointing at the driver's score-log key, written 0600 beside the
    staged run (not inside it: only the workspace is mounted into sandboxes); {} without
    one (the node's own key is used, and the run verifies only there)."""
    if not key_hex:
        return {}
    path = staging / "score-log.key"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(bytes.fromhex(key_hex))
    return {"REBENCH_KEY_FILE": str(path)}


def _die_with_parent() -> None:
    """preexec_fn: the harness gets SIGKILL when the task's worker dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def run_attempt(attempt: AttemptSpec, tracker: Any = None,
                node_entry: Sequence[str] = NODE_ENTRY) -> AttemptResult:
    """The Ray task: run one try of an attempt on this node and return its run folder."""
    import ray

    started = time.time()
    context = ray.get_runtime_context()
    node_id = context.get_node_id()
    node_ip = ray.util.get_node_ip_address()  # type: ignore[no-untyped-call]
    if tracker is not None:
        # A lost tracker costs the live view this start note, never the attempt.
        with suppress(ray.exceptions.RayError):
            tracker.started.remote(attempt.key, attempt.try_no, node_id, node_ip, started)
    staging = staging_dir(attempt.batch_id, attempt.key)
    staging.mkdir(parents=True, exist_ok=True)
    earlier = find_run(staging)
    order = staging / f"attempt-{attempt.try_no}.json"
    fd = os.open(order, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # holds the key
    with os.fdopen(fd, "w") as handle:
        handle.write(attempt.to_json())
    env = {**os.environ, "REBENCH_RUNS": str(staging),
           "REBENCH_CALIBRATION": str(merged_calibration(attempt.calibration, staging)),
           **driver_key_env(attempt.score_log_key, staging)}
    with (staging / "harness.log").open("ab") as log:
        proc = subprocess.run([sys.executable, *node_entry, str(order)],
                              stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                              env=env, check=False, preexec_fn=_die_with_parent)
    run_dir = find_run(staging)
    archive, omitted, run_id = b"", 0, ""
    if run_dir is not None:
        run_id = run_dir.name
        # The harness's output of every try on this node travels with the run folder.
        shutil.copyfile(staging / "harness.log", run_dir / "harness.log")
        archive, omitted = pack_run(run_dir, attempt.workspace_cap_bytes)
    return AttemptResult(
        key=attempt.key, try_no=attempt.try_no, node_id=node_id, node_ip=node_ip,
        hostname=socket.gethostname(), run_id=run_id, archive=archive,
        returncode=proc.returncode, resumed=earlier is not None, task_started_at=started,
        workspace_omitted_bytes=omitted, error="" if run_dir else _log_tail(staging),
    )


def _log_tail(staging: Path, limit: int = 2000) -> str:
    try:
        return (staging / "harness.log").read_text(errors="replace")[-limit:]
    except OSError:
        return ""


def resolve_node_isolation(choice: str) -> Isolation:
    """The Isolation this node runs untrusted code under; ScaleError instead of a silent
    fall back to no sandbox."""
    from rebench.sandbox import resolve_isolation

    isolation = resolve_isolation(choice)
    if isolation is not None:
        return isolation
    raise ScaleError(f"node {socket.gethostname()}: bubblewrap is not available, so "
                     "untrusted code cannot be sandboxed here (rebench setup-sandbox)")


def harness_main(order_file: Path) -> int:
    """In the harness process: prepare, create or resume the run, execute it."""
    from rebench.agents.base import make_agent
    from rebench.core.discovery import load_spec
    from rebench.core.paths import runs_root
    from rebench.harness.driver import execute_run
    from rebench.harness.resume import reopen_for_resume
    from rebench.harness.run import create_run

    attempt = AttemptSpec.from_json(order_file.read_text())
    installed = load_spec(attempt.env_id).version
    if installed != attempt.env_version:
        raise ScaleError(f"node {socket.gethostname()} has {attempt.env_id} version "
                         f"{installed}, the batch wants {attempt.env_version}")
    ensure_prepared(attempt.env_id, attempt.profile)
    agent = make_agent(attempt.agent)
    staging = runs_root()
    earlier = find_run(staging)
    if earlier is not None:
        if RunRecord.load(earlier / "run.json").status is RunStatus.FINISHED:
            return 0  # finished before its result reached the driver: send it again
        run = reopen_for_resume(earlier)
    else:
        run = create_run(attempt.env_id, attempt.profile, attempt.agent, attempt.budget_s,
                         resolve_node_isolation(attempt.isolation), seed=attempt.seed,
                         root=staging)
    execute_run(run, agent)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m rebench.scale.node ATTEMPT.json", file=sys.stderr)
        return 2
    return harness_main(Path(args[0]))


if __name__ == "__main__":
    sys.exit(main())
