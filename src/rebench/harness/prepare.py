"""Run an environment's prepare step idempotently and record checksums of what it built."""

from __future__ import annotations

import importlib
import json
import os
import shutil
from collections.abc import Mapping
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


def prepare_environment(
    spec: EnvironmentSpec,
    profile: Profile,
    options: Mapping[str, str] | None = None,
    progress: ProgressFn = no_progress,
    force: bool = False,
) -> Path:
    """Build the assets of (spec, profile) unless an intact, same-version build exists."""
    assets = env_cache_dir(spec.id, profile.name)
    marker = assets / PREPARED_MARKER
    options = dict(options or {})
    if not force and marker.is_file():
        recorded = json.loads(marker.read_text())
        if recorded.get("version") == spec.version and recorded.get("options") == options:
            progress("verifying cached assets", None)
            if tree_checksums(assets) == recorded.get("files"):
                progress("assets already prepared", 1.0)
                return assets
            progress("cached assets changed on disk: rebuilding", None)
    if os.environ.get("REBENCH_PREPARE", "").strip().lower() == "never":
        # Where building is not wanted (a node that must use assets prepared elsewhere,
        # the fast test tier), say so instead of training for minutes.
        raise PrepareDisabledError(
            f"{spec.id} ({profile.name}) is not prepared (or its assets changed) and "
            "REBENCH_PREPARE=never forbids preparing it here: run `rebench prepare "
            f"{spec.id} --profile {profile.name}` where preparing is allowed")
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
