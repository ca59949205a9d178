"""Run an environment's prepare step idempotently and record checksums of what it built.

Prepares of one (environment, profile) are serialized across processes by an flock on a
file beside the cache entry: a second process (another pytest-xdist worker, a second
`rebench prepare`) waits, then finds the finished assets and reuses them. The kernel drops
the lock when its holder dies, so a killed prepare never blocks the next one (which
rebuilds, since the killed one wrote no marker)."""

from __future__ import annotations

import fcntl
import importlib
import json
import os
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from rebench.core.errors import NotPreparedError, PrepareDisabledError
from rebench.core.hashing import file_sha256
from rebench.core.paths import PREPARED_MARKER, env_cache_dir
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.scoring.context import PrepareContext, ProgressFn, no_progress


def tree_checksums(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): file_sha256(p)
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != PREPARED_MARKER
    }


@contextmanager
def prepare_lock(assets: Path, progress: ProgressFn = no_progress) -> Iterator[None]:
    """Hold the cross-process lock of the cache entry `assets` (<cache>/<env>/<profile>):
    the file <cache>/<env>/.<profile>.prepare.lock, outside the entry so a rebuild's rmtree
    leaves it alone."""
    lock_path = assets.parent / f".{assets.name}.prepare.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress("waiting for another process preparing the same assets", None)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _prepare_disabled(spec: EnvironmentSpec, profile: Profile) -> PrepareDisabledError:
    # Where building is not wanted (a node that must use assets prepared elsewhere, the
    # fast test tier), say so instead of training for minutes.
    return PrepareDisabledError(
        f"{spec.id} ({profile.name}) is not prepared (or its assets changed) and "
        "REBENCH_PREPARE=never forbids preparing it here: run `rebench prepare "
        f"{spec.id} --profile {profile.name}` where preparing is allowed")


def prepare_environment(
    spec: EnvironmentSpec,
    profile: Profile,
    options: Mapping[str, str] | None = None,
    progress: ProgressFn = no_progress,
    force: bool = False,
) -> Path:
    """Build the assets of (spec, profile) unless an intact, same-version build exists.
    Concurrent calls for the same (spec, profile), in any process, build once: the others
    wait for the lock, then verify and reuse what the first built."""
    assets = env_cache_dir(spec.id, profile.name)
    marker = assets / PREPARED_MARKER
    options = dict(options or {})
    never = os.environ.get("REBENCH_PREPARE", "").strip().lower() == "never"
    if never and not marker.is_file():
        raise _prepare_disabled(spec, profile)  # nothing to verify; and no lock file made
    with prepare_lock(assets, progress):
        if not force and marker.is_file():
            recorded = json.loads(marker.read_text())
            if recorded.get("version") == spec.version and recorded.get("options") == options:
                progress("verifying cached assets", None)
                if tree_checksums(assets) == recorded.get("files"):
                    progress("assets already prepared", 1.0)
                    return assets
                progress("cached assets changed on disk: rebuilding", None)
        if never:
            raise _prepare_disabled(spec, profile)
        if assets.exists():
            shutil.rmtree(assets)
        (assets / "public").mkdir(parents=True)
        (assets / "protected").mkdir(parents=True)
        module = importlib.import_module(f"rebench.environments.{spec.id}.prepare")
        module.prepare(PrepareContext(spec, profile, assets, options, progress))
        record = {
            "env_id": spec.id,
            "version": spec.version,
            "profile": profile.name,
            "options": options,
            "prepared_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "files": tree_checksums(assets),
        }
        marker.write_text(json.dumps(record, indent=2))
        return assets


def verify_assets(spec: EnvironmentSpec, profile: Profile) -> None:
    """Raise NotPreparedError unless the assets exist and match their checksums."""
    assets = env_cache_dir(spec.id, profile.name)
    marker = assets / PREPARED_MARKER
    if not marker.is_file():
        raise NotPreparedError(f"{spec.id} ({profile.name}) is not prepared")
    if tree_checksums(assets) != json.loads(marker.read_text()).get("files"):
        raise NotPreparedError(f"{spec.id} ({profile.name}): assets changed since prepare")
