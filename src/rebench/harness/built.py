"""Named solutions built once and kept: the output of a solution's build command (the
reference that trains a model, a starting script that fine-tunes one) is stored under
<cache>/built-solutions/<env>/<profile>/<name>/ and copied into later workspaces.

An entry holds what the build changed in its workspace (files written or modified, files
and folders removed, empty folders and links made) and the key it was built under:
everything that determines the build (the spec's version, the profile's resources and
params, the prepared assets' marker, every file of the environment's folder, the build
command, the isolation). An entry whose key differs is never used: it is rebuilt and
replaced. Entries are written into a temporary folder and renamed into place, so a killed
build leaves none; one lock per entry makes a second builder wait and then reuse.

The cache folder is never handed to a sandbox: its files are copied into the fresh
workspace (and checked against their recorded checksums first), and the cache root is
hidden from every sandbox (sandbox/mounts.py), so a submission cannot change an entry.
Not under the prepared assets' folder: prepare checksums every file there.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rebench.core.discovery import environment_dir
from rebench.core.errors import RunError
from rebench.core.hashing import file_sha256
from rebench.core.paths import PREPARED_MARKER, cache_root, env_cache_dir, rebuild_setting
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.sandbox import Isolation

BUILT_DIR = "built-solutions"  # not an identifier, so never an environment's folder
MANIFEST = "built.json"
FILES = "files"
FORMAT = 1  # bump when the entry layout or the key's meaning changes
REBUILD_ENV = "REBENCH_REBUILD"

StatusFn = Callable[[str], None]
# Builds the solution in the workspace (workspace.run_recipe); raises RunError on failure.
BuildFn = Callable[[], None]


def rebuild_requested(rebuild: bool | None) -> bool:
    """`rebuild` if given, else $REBENCH_REBUILD (1/true/yes: build again, replace the entry)."""
    if rebuild is not None:
        return rebuild
    value = rebuild_setting()
    if value in ("", "0", "false", "no"):
        return False
    if value in ("1", "true", "yes"):
        return True
    raise RunError(f"{REBUILD_ENV}={value!r}: use 1 to rebuild named solutions, 0 or unset "
                   "to reuse them")


def built_dir(env_id: str, profile: str, name: str) -> Path:
    """Where the built solution `name` of (env, profile) is kept."""
    return cache_root() / BUILT_DIR / env_id / profile / name


def _tree_digest(root: Path) -> str:
    """One sha256 over every file of `root` (relative path and contents), __pycache__
    left out as the workspace copy leaves it out."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if "__pycache__" in path.parts or not path.is_file():
            continue
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(file_sha256(path).encode() + b"\n")
    return digest.hexdigest()


def build_key(spec: EnvironmentSpec, profile: Profile, name: str,
              isolation: Isolation) -> dict[str, Any]:
    """Everything that determines what building solution `name` gives."""
    recipe = spec.solutions[name]
    marker = env_cache_dir(spec.id, profile.name) / PREPARED_MARKER
    prepared = file_sha256(marker) if marker.is_file() else None
    key = {
        "format": FORMAT,
        "env": spec.id,
        "version": spec.version,
        "profile": {
            "name": profile.name, "params": {k: profile.params[k] for k in sorted(profile.params)},
            "gpus": profile.gpus, "memory_gb": profile.memory_gb, "pids_max": profile.pids_max,
            "file_size_gb": profile.file_size_gb, "network": profile.network,
        },
        "prepared": prepared,  # the marker holds the checksum of every prepared file
        "environment_files": _tree_digest(environment_dir(spec.id)),
        "solution": name,
        "folder": recipe.folder,
        "command": list(recipe.run),
        "isolation": isolation.value,
    }
    return dict(json.loads(json.dumps(key)))  # as it reads back from the manifest


# ---- what a build changed -------------------------------------------------------------

# path -> ("file", size, mtime_ns, mode) | ("dir",) | ("link", target)
State = dict[str, tuple[Any, ...]]


def _state(root: Path) -> State:
    state: State = {}
    for folder, dirs, files in os.walk(root):
        for entry in dirs + files:
            path = Path(folder) / entry
            rel = str(path.relative_to(root))
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                state[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                state[rel] = ("dir",)
            elif stat.S_ISREG(info.st_mode):
                state[rel] = ("file", info.st_size, info.st_mtime_ns,
                              stat.S_IMODE(info.st_mode))
            else:
                raise RunError(f"the build left {rel}, neither a file, a folder nor a link")
    return state


@dataclass(frozen=True)
class Changes:
    removed: list[str]  # paths gone or of another kind after the build
    dirs: list[str]  # folders the build made
    files: dict[str, int]  # files written or modified -> mode
    links: dict[str, str]  # links the build made -> target


def _changes(before: State, after: State) -> Changes:
    removed = sorted(p for p, kind in before.items()
                     if p not in after or after[p][0] != kind[0])
    changed = {p: kind for p, kind in after.items() if before.get(p) != kind}
    return Changes(
        removed=removed,
        dirs=sorted(p for p, kind in changed.items() if kind[0] == "dir"),
        files={p: int(kind[3]) for p, kind in sorted(changed.items()) if kind[0] == "file"},
        links={p: str(kind[1]) for p, kind in sorted(changed.items()) if kind[0] == "link"},
    )


# ---- the cache entry -------------------------------------------------------------------

@contextmanager
def _entry_lock(entry: Path, progress: StatusFn, what: str) -> Iterator[None]:
    """One process at a time builds or reads an entry; a second one says it waits."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    with (entry.parent / f".{entry.name}.lock").open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress(f"waiting for another process building {what} (lock {handle.name})")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _leftovers(entry: Path) -> list[Path]:
    """Temporary folders of builds that were killed (only seen while holding the lock)."""
    return sorted(entry.parent.glob(f".{entry.name}.tmp-*"))


@dataclass(frozen=True)
class Manifest:
    """An entry's record: the key it was built under, when and how long, what the build
    changed, and the checksum of every kept file."""

    key: dict[str, Any]
    built_at: str
    build_seconds: float
    changes: Changes
    checksums: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "built_at": self.built_at,
                "build_seconds": self.build_seconds, **dataclasses.asdict(self.changes),
                "checksums": self.checksums}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Manifest:
        changes = Changes(removed=list(data["removed"]), dirs=list(data["dirs"]),
                          files=dict(data["files"]), links=dict(data["links"]))
        return cls(dict(data["key"]), str(data["built_at"]), float(data["build_seconds"]),
                   changes, dict(data["checksums"]))


def _read_manifest(entry: Path) -> Manifest | None:
    """The entry's manifest; None when there is none or it cannot be read (then rebuilt)."""
    try:
        return Manifest.from_json(json.loads((entry / MANIFEST).read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _intact(entry: Path, manifest: Manifest) -> bool:
    """Whether every kept file still has the checksum it was stored with."""
    try:
        return set(manifest.checksums) == set(manifest.changes.files) and all(
            file_sha256(entry / FILES / rel) == digest
            for rel, digest in manifest.checksums.items())
    except OSError:
        return False


def _store(entry: Path, key: dict[str, Any], workspace: Path, changes: Changes,
           seconds: float) -> Manifest:
    """Write the entry in a temporary folder next to it, then rename it into place."""
    tmp = entry.parent / f".{entry.name}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    (tmp / FILES).mkdir(parents=True)
    checksums = {}
    for rel in changes.files:
        target = tmp / FILES / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(workspace / rel, target)
        checksums[rel] = file_sha256(target)
    manifest = Manifest(key, datetime.now(UTC).isoformat(timespec="seconds"),
                        round(seconds, 1), changes, checksums)
    (tmp / MANIFEST).write_text(json.dumps(manifest.to_json(), indent=2))
    old = entry.parent / f".{entry.name}.tmp-old-{os.getpid()}"
    if entry.exists():
        os.replace(entry, old)
    os.replace(tmp, entry)
    if old.exists():
        shutil.rmtree(old)
    return manifest


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def _apply(entry: Path, changes: Changes, workspace: Path) -> None:
    """Make a fresh (unbuilt) workspace what the build made of it: copies, never links
    into the cache."""
    for rel in sorted(changes.removed, key=lambda p: p.count("/"), reverse=True):
        _remove(workspace / rel)
    for rel in changes.dirs:
        (workspace / rel).mkdir(parents=True, exist_ok=True)
    for rel, mode in changes.files.items():
        target = workspace / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.exists():
            _remove(target)
        shutil.copyfile(entry / FILES / rel, target)
        os.chmod(target, mode)
    for rel, link in changes.links.items():
        target = workspace / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.exists():
            _remove(target)
        os.symlink(link, target)


def _why_build(entry: Path, manifest: Manifest | None, key: dict[str, Any],
               forced: bool) -> str | None:
    """Why the kept entry cannot be used (None: it can)."""
    if manifest is None:
        return "first time"
    since = f"the one built {manifest.built_at}"
    if forced:
        return f"rebuild asked; replaces {since}"
    if manifest.key != key:
        changed = sorted(k for k in key if key[k] != manifest.key.get(k)) or ["format"]
        return f"{', '.join(changed)} changed since {since}"
    if not _intact(entry, manifest):
        return f"the kept files of {since} were changed on disk"
    return None


def build_or_reuse(spec: EnvironmentSpec, profile: Profile, name: str, workspace: Path,
                   isolation: Isolation, build: BuildFn, command: str,
                   timeout_s: float, rebuild: bool | None = None,
                   progress: StatusFn = lambda _msg: None) -> Path:
    """Give the fresh workspace of solution `name` (starting files, public assets, the
    solution's files; not yet built) what its build makes: from the kept entry when its
    key matches (the build command is not run), else by running `build` and keeping the
    result. Returns the entry's folder."""
    entry = built_dir(spec.id, profile.name, name)
    key = build_key(spec, profile, name, isolation)
    forced = rebuild_requested(rebuild)
    with _entry_lock(entry, progress, f"the {name} solution of {spec.id} ({profile.name})"):
        for leftover in _leftovers(entry):
            shutil.rmtree(leftover, ignore_errors=True)
        manifest = _read_manifest(entry)
        why = _why_build(entry, manifest, key, forced)
        if manifest is not None and why is None:
            _apply(entry, manifest.changes, workspace)
            progress(f"reusing the built {name} from {entry} (built {manifest.built_at}, "
                     f"in {manifest.build_seconds} s; --rebuild or {REBUILD_ENV}=1 builds "
                     "it again)")
            return entry
        progress(f"building the {name} solution (`{command}`, at most {timeout_s:.0f} s; "
                 f"{why}; kept in {entry})")
        before = _state(workspace)
        started = time.monotonic()
        build()
        _store(entry, key, workspace, _changes(before, _state(workspace)),
               time.monotonic() - started)
        return entry
