"""Official scoring: snapshot the solution, score it in a fresh trusted process."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rebench.core.paths import env_cache_dir, runs_root
from rebench.core.score import ScoreResult
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.sandbox import Isolation
from rebench.sandbox.local import kill_group

# Seconds granted beyond the profile's scoring timeout for process start-up and teardown.
SCORER_GRACE_S = 30.0


def snapshot_solution(spec: EnvironmentSpec, workspace: Path, dest: Path) -> list[str]:
    """Copy the workspace files matching the spec's globs into `dest` (regular files only:
    symlinks are skipped so a link cannot smuggle in files from outside the workspace).

    Returns the copied relative paths. Raises ValueError if the snapshot would exceed the
    spec's size limit.
    """
    workspace = workspace.resolve()
    if not workspace.is_dir():
        raise FileNotFoundError(f"workspace {workspace} does not exist")
    files: dict[str, Path] = {}
    for pattern in spec.solution_globs:
        for path in workspace.glob(pattern):
            if path.is_symlink() or not path.is_file():
                continue
            rel = path.relative_to(workspace)
            if any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
                continue
            files[str(rel)] = path
    total = sum(p.stat().st_size for p in files.values())
    if total > spec.snapshot_max_bytes:
        raise ValueError(
            f"solution files total {total / 1e6:.1f} MB, over the limit of "
            f"{spec.snapshot_max_bytes / 1e6:.1f} MB for a snapshot"
        )
    dest.mkdir(parents=True, exist_ok=True)
    for rel_name, src in sorted(files.items()):
        target = dest / rel_name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
    return sorted(files)


def official_score(
    spec: EnvironmentSpec,
    profile: Profile,
    snapshot_dir: Path,
    isolation: Isolation,
    timeout_s: float | None = None,
) -> ScoreResult:
    """Score a snapshot in a fresh scorer process; never raises for a bad submission."""
    timeout = (timeout_s or profile.scoring_timeout_s) + SCORER_GRACE_S
    assets = env_cache_dir(spec.id, profile.name)
    with tempfile.TemporaryDirectory(prefix="rebench-score-") as tmp_name:
        tmp = Path(tmp_name)
        scratch = tmp / "scratch"
        scratch.mkdir()
        request = {
            "env_id": spec.id,
            "profile": profile.name,
            "solution_dir": str(snapshot_dir.resolve()),
            "assets_dir": str(assets),
            "scratch_dir": str(scratch),
            "isolation": isolation.value,
            "hidden": [str(runs_root())],
        }
        request_path, result_path = tmp / "request.json", tmp / "result.json"
        request_path.write_text(json.dumps(request))
        start = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-m", "rebench.harness.scorer_main", str(request_path),
             str(result_path)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True, env=_scorer_env(),
        )
        try:
            output, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc.pid)
            proc.communicate()
            return ScoreResult.invalid(
                f"scoring timed out after {timeout:.0f} s", elapsed_s=time.monotonic() - start
            )
        finally:
            kill_group(proc.pid)  # leftovers of the scorer's session, if any
        elapsed = time.monotonic() - start
        if not result_path.is_file():
            tail = output.decode(errors="replace")[-4000:]
            return ScoreResult.invalid(
                f"scorer process died (exit code {proc.returncode})", output=tail,
                elapsed_s=elapsed,
            )
        result = ScoreResult.from_json(json.loads(result_path.read_text()))
    details = {**result.details, "scoring_wall_s": round(elapsed, 3)}
    raw = result.raw if math.isfinite(result.raw) else math.nan
    return ScoreResult(raw=raw, message=result.message, details=details)


def _scorer_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env
