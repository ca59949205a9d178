"""Where rebench keeps things on disk, and the endpoints a user configured: the one module
that reads REBENCH_* variables (every location can be overridden by one). Everything else
gets these values passed in; code inside sandboxes reads only what the harness sets for it
(REBENCH_PROFILE, REBENCH_SERVICES, REBENCH_TASK_SOCKET)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
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


PREPARED_MARKER = "prepared.json"  # written last by prepare: version, options, checksums
PREPARED_ANCHORS = "protected/anchors.json"  # anchors an environment measures at prepare


def calibration_file() -> Path:
    """Measured anchors per hardware: $REBENCH_CALIBRATION or <cache>/calibration.json."""
    override = os.environ.get("REBENCH_CALIBRATION")
    if override:
        return Path(override).expanduser().resolve()
    return cache_root() / "calibration.json"


def prices_file() -> Path:
    """Per-model token prices the user keeps (harness/costs.py): $REBENCH_PRICES or
    <cache>/prices.json. The project ships no prices."""
    override = os.environ.get("REBENCH_PRICES")
    if override:
        return Path(override).expanduser().resolve()
    return cache_root() / "prices.json"


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


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible endpoint for an environment's trusted side (a model the scorer
    proxies, a judge): base URL (ending in /v1), model name and API key."""

    base_url: str
    model: str
    api_key: str


def endpoint(name: str, default_model: str,
             environ: Mapping[str, str] | None = None) -> Endpoint | None:
    """The endpoint $REBENCH_<name>_BASE_URL names, None when it is unset or blank; the model
    is $REBENCH_<name>_MODEL (default `default_model`), the key $REBENCH_<name>_API_KEY, else
    $OPENAI_API_KEY, else "none". `environ` (default os.environ) is for tests."""
    env = os.environ if environ is None else environ
    base = env.get(f"REBENCH_{name}_BASE_URL", "").strip()
    if not base:
        return None
    key = env.get(f"REBENCH_{name}_API_KEY") or env.get("OPENAI_API_KEY") or "none"
    return Endpoint(base, env.get(f"REBENCH_{name}_MODEL", default_model), key)


def rebuild_setting() -> str:
    """$REBENCH_REBUILD as set ("" when unset): 1 builds named solutions again instead of
    reusing the kept builds (harness/built.py checks the value)."""
    return os.environ.get("REBENCH_REBUILD", "").strip().lower()
