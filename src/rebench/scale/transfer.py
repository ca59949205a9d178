"""Run folders as archives: packed on a node (workspace within a size cap), unpacked on the
driver without letting the archive write outside its folder.

The archive is what a node says happened; the driver checks it is one run folder of the
attempt it asked for before it lands in the runs root.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

from rebench.harness.records import RunRecord
from rebench.scale.attempt import AttemptSpec, ScaleError

# Written into a run folder whose workspace stayed on the node (its size, in bytes).
WORKSPACE_OMITTED = "workspace.omitted"
# Node-side files that are no part of the run (the node's own index of its staging root).
_SKIP_TOP = {"harness.lock"}


def tree_bytes(root: Path) -> int:
    """Bytes of the regular files under `root` (links not followed)."""
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = Path(dirpath) / name
            if path.is_file() and not path.is_symlink():
                total += path.stat().st_size
    return total


def pack_run(run_dir: Path, workspace_cap_bytes: int) -> tuple[bytes, int]:
    """(gzipped tar of the run folder, bytes of workspace left out: 0 if it came along)."""
    workspace = run_dir / "workspace"
    size = tree_bytes(workspace) if workspace.is_dir() else 0
    omitted = size if size > workspace_cap_bytes else 0
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as tar:
        for child in sorted(run_dir.iterdir()):
            if child.name in _SKIP_TOP or (omitted and child.name == "workspace"):
                continue
            tar.add(child, arcname=child.name, filter=_regular_only)
        if omitted:
            note = f"{omitted}\n".encode()
            info = tarfile.TarInfo(WORKSPACE_OMITTED)
            info.size = len(note)
            tar.addfile(info, io.BytesIO(note))
    return buffer.getvalue(), omitted


def _regular_only(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """Files, folders and links only (a workspace may hold fifos or sockets)."""
    return info if info.isfile() or info.isdir() or info.issym() else None


def _safe_member(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """The `data` filter, but a member it refuses (an absolute or escaping link an agent
    left in its workspace) is dropped instead of failing the whole run."""
    try:
        return tarfile.data_filter(member, dest)
    except tarfile.FilterError:
        return None


@dataclass(frozen=True)
class Landed:
    """A run folder unpacked into the runs root."""

    run_dir: Path
    record: RunRecord
    already_there: bool


def unpack_run(archive: bytes, attempt: AttemptSpec, root: Path) -> Landed:
    """Unpack a node's archive as runs/<run_id>; ScaleError if it is not a run of `attempt`.

    Idempotent: a run folder that is already there (the driver died after unpacking it) is
    kept as it is, not overwritten."""
    staging = root / ".incoming" / f"{attempt.batch_id}-{attempt.key}-{attempt.try_no}"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            tar.extractall(staging, filter=_safe_member)
        record = _check_record(staging, attempt)
        target = root / record.run_id
        if target.exists():
            return Landed(target, RunRecord.load(target / "run.json"), already_there=True)
        staging.rename(target)
        return Landed(target, record, already_there=False)
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise ScaleError(f"attempt {attempt.key}: the node's archive cannot be unpacked: "
                         f"{exc}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _check_record(folder: Path, attempt: AttemptSpec) -> RunRecord:
    try:
        record = RunRecord.load(folder / "run.json")
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise ScaleError(f"attempt {attempt.key}: no readable run.json in the archive: "
                         f"{exc}") from None
    run_id = record.run_id
    if not run_id or "/" in run_id or run_id.startswith(".") or run_id != Path(run_id).name:
        raise ScaleError(f"attempt {attempt.key}: unsafe run id {run_id!r}")
    asked = (attempt.env_id, attempt.env_version, attempt.profile, attempt.agent, attempt.seed)
    got = (record.env_id, record.env_version, record.profile, record.agent, record.seed)
    if asked != got:
        raise ScaleError(f"attempt {attempt.key}: the node sent back a run of {got}, "
                         f"the attempt is {asked}")
    if attempt.budget_s is not None and abs(record.budget_s - attempt.budget_s) > 1e-6:
        raise ScaleError(f"attempt {attempt.key}: budget {record.budget_s} s, asked "
                         f"{attempt.budget_s} s")
    return record
