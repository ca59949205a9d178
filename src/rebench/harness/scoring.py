"""Official scoring: snapshot the solution, score it in a fresh trusted process."""

from __future__ import annotations

import hashlib
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from rebench.core.errors import ScoringHarnessError
from rebench.core.paths import env_cache_dir, runs_root
from rebench.core.score import ScoreResult
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.harness.scorer_process import watch_scorer
from rebench.harness.scorer_schema import ScoreReply, ScoreRequest, read_reply, write_json
from rebench.sandbox import Isolation
from rebench.sandbox.local import kill_group
from rebench.sandbox.safefs import CopyLimits, copy_tree_beneath
from rebench.scoring.contract import ScoreKind

# Seconds granted beyond the profile's scoring timeout for process start-up and teardown.
SCORER_GRACE_S = 30.0


def snapshot_solution(spec: EnvironmentSpec, workspace: Path, dest: Path) -> list[str]:
    """Copy the workspace files matching the spec's globs into `dest`: regular files only,
    walked from directory descriptors without ever following a link (safefs), so a link or
    a folder swapped for one mid-copy cannot bring in anything from outside the workspace.
    Callers freeze the agent's processes first so the copy is also consistent.

    Returns the copied relative paths. Raises ValueError if the snapshot would exceed the
    spec's size limit, FileNotFoundError if the workspace is gone.
    """
    if not workspace.is_dir():
        raise FileNotFoundError(f"workspace {workspace} does not exist")
    return copy_tree_beneath(workspace, dest, spec.solution_globs,
                             CopyLimits(max_bytes=spec.snapshot_max_bytes))


def snapshot_digest(snapshot: Path) -> str:
    """sha256 over a snapshot's relative paths and contents (the snapshot is trusted)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in snapshot.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(snapshot)).encode() + b"\0")
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
        digest.update(b"\0")
    return digest.hexdigest()


def official_score(
    spec: EnvironmentSpec,
    profile: Profile,
    snapshot_dir: Path,
    isolation: Isolation,
    timeout_s: float | None = None,
    kind: ScoreKind = ScoreKind.FINAL,
) -> ScoreResult:
    """Score a snapshot in a fresh scorer process; never raises for a bad submission.

    ScoringHarnessError when the scorer itself failed (an exception in trusted code, its
    process died without a result, or it passed its memory bound or its load-stretched
    deadline: harness/scorer_process.py; or a request or reply off the schema of
    harness/scorer_schema.py): that is the harness's fault, not a NaN score.
    The details record what the scoring cost and how busy the machine was."""
    timeout = (timeout_s or profile.scoring_timeout_s) + SCORER_GRACE_S
    assets = env_cache_dir(spec.id, profile.name)
    with tempfile.TemporaryDirectory(prefix="rebench-score-") as tmp_name:
        tmp = Path(tmp_name)
        scratch = tmp / "scratch"
        scratch.mkdir()
        request = ScoreRequest(
            env_id=spec.id, profile=profile.name, solution_dir=snapshot_dir.resolve(),
            assets_dir=assets, scratch_dir=scratch, isolation=isolation,
            hidden=(runs_root(),), kind=kind)
        request_path, result_path = tmp / "request.json", tmp / "result.json"
        write_json(request_path, request)
        with (tmp / "scorer.log").open("w+b") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "rebench.harness.scorer_main", str(request_path),
                 str(result_path)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, env=_scorer_env(),
            )
            try:
                usage = watch_scorer(proc, timeout_s=timeout,
                                     memory_mb=profile.memory_gb * 1024)
            finally:
                kill_group(proc.pid)  # leftovers of the scorer's session, if any
            log.seek(max(0, log.seek(0, os.SEEK_END) - 4000))
            tail = log.read().decode(errors="replace")
        if not result_path.is_file():
            raise ScoringHarnessError(
                f"the scorer process of {spec.id} died (exit code {proc.returncode}):\n{tail}")
        result = _scored(spec, read_reply(result_path))
    details = {**result.details, **usage.to_details()}
    raw = result.raw if math.isfinite(result.raw) else math.nan
    return agent_visible(spec, ScoreResult(raw=raw, message=result.message, details=details))


def _scored(spec: EnvironmentSpec, reply: ScoreReply) -> ScoreResult:
    """The reply's result; ScoringHarnessError when the trusted side failed."""
    if reply.result is None:
        raise ScoringHarnessError(
            f"the scorer of {spec.id} failed: {reply.harness_error}\n{reply.traceback}")
    return reply.result


def agent_visible(spec: EnvironmentSpec, result: ScoreResult) -> ScoreResult:
    """`result` with its message rendered through the environment's feedback schema
    (core/feedback.py): what the scorer said in full moves to the private details, so
    nothing that code run on held-out data chose reaches the agent. A check-only result
    (a hidden score's requested check: NaN with `details["check_only"]`) shows the
    check's `is_valid` as `valid`."""
    valid = result.valid
    if result.details.get("check_only") is True:  # a hidden score's validity check
        valid = result.message.get("is_valid") is True
    message = spec.feedback.render(result.message, valid=valid)
    details = dict(result.details)
    if dict(result.message) != message:
        details["scorer_message"] = result.message
    return ScoreResult(raw=result.raw, message=message, details=details)


def _scorer_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env
