"""Where rebench keeps things on disk. Every location can be overridden by an env variable."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """Prepared assets: ~/.cache/rebench, or $REBENCH_CACHE."""
    override = os.environ.get("REBENCH_CACHE")
    if override:
        return Path(override).expanduser().resolve()
    return Path.home() / ".cache" / "rebench"


def env_cache_dir(env_id: str, profile: str) -> Path:
    """Assets of one environment and profile: public/ (copied into workspaces) and
    protected/ (held-out data; only the trusted scorer reads it)."""
    return cache_root() / env_id / profile


def calibration_file() -> Path:
    """Measured anchors per hardware: $REBENCH_CALIBRATION or <cache>/calibration.json."""
    override = os.environ.get("REBENCH_CALIBRATION")
    if override:
        return Path(override).expanduser().resolve()
    return cache_root() / "calibration.json"


def runs_root() -> Path:
    """Run directories and the run index: $REBENCH_RUNS or ./runs."""
    return Path(os.environ.get("REBENCH_RUNS", "runs")).expanduser().resolve()


def key_file() -> Path:
    """The secret that keys every run's score log (HMAC): $REBENCH_KEY_FILE or
    $XDG_DATA_HOME/rebench/score-log.key (~/.local/share). No sandbox mounts it."""
    override = os.environ.get("REBENCH_KEY_FILE")
    if override:
        return Path(override).expanduser().resolve()
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home).expanduser().resolve() / "rebench" / "score-log.key"


def extra_environment_dirs() -> list[Path]:
    """Folders of environments kept outside the package: $REBENCH_ENVIRONMENTS_PATH
    (os.pathsep-separated), each holding <env_id>/environment.py folders."""
    value = os.environ.get("REBENCH_ENVIRONMENTS_PATH", "")
    return [Path(p).expanduser().resolve() for p in value.split(os.pathsep) if p]
