"""Resource limits and freezing for untrusted process trees.

Every sandbox's processes run in a control group of their own where the machine has one we
may create (cgroup v2, or v1's memory, pids and freezer hierarchies): memory and pids are
capped there for the whole tree, and the group can be frozen (official scores freeze the
agent's processes) and killed as a whole. Where no cgroup can be made, per-process rlimits
stand in for memory (address space, CPU-only sandboxes) and pids (non-root users only: the
kernel does not count root's processes), and freezing falls back to SIGSTOP of the tree.
File size and open files are always rlimits.

Processes join their group before bwrap starts, through a small stdlib launcher that puts
itself in the group, sets the rlimits and execs the real command (`launcher_argv`).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rebench.sandbox.proctree import stop_tree

_CGROUP_FS = Path("/sys/fs/cgroup")
# cpuacct only counts (the CPU-seconds a run used, issue 32); it limits nothing.
_V1_CONTROLLERS = ("memory", "pids", "freezer", "cpuacct")
_FREEZE_TIMEOUT_S = 5.0
_FREEZE_RETRY_S = 0.05
_counter = itertools.count()


@dataclass(frozen=True)
class Limits:
    """Caps for one untrusted process tree; None means no cap."""

    memory_bytes: int | None = None
    pids: int | None = None
    file_size_bytes: int | None = None
    open_files: int | None = 4096


def _own_path(controller: str | None) -> str:
    """This process's cgroup path in a v1 hierarchy (`controller`) or in v2 (None)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            hier, controllers, path = line.split(":", 2)
            if controller is None and hier == "0" and controllers == "":
                return path
            if controller is not None and controller in controllers.split(","):
                return path
    return "/"


def _v2_root() -> Path | None:
    if (_CGROUP_FS / "cgroup.controllers").is_file():
        return _CGROUP_FS
    return None


class ProcessGroup:
    """A control group (or its fallback) holding one sandbox's processes."""

    def __init__(self, dirs: dict[str, Path], v2: bool) -> None:
        # controller ("memory", "pids", "freezer", or "v2") -> the group's folder
        self.dirs = dirs
        self.v2 = v2
        self._stopped: list[int] = []

    @classmethod
    def create(cls, limits: Limits) -> ProcessGroup:
        """A new group with `limits` applied where cgroups allow; never raises (an empty
        group means rlimits and SIGSTOP only)."""
        name = f"rebench-{os.getpid()}-{next(_counter)}-{time.monotonic_ns() % 10**9}"
        root = _v2_root()
        dirs = _make_v2(root, name, limits) if root is not None else _make_v1(name, limits)
        return cls(dirs, v2=root is not None and bool(dirs))

    @property
    def can_limit_memory(self) -> bool:
        return "memory" in self.dirs or (self.v2 and _has_file(self.dirs, "memory.max"))

    @property
    def can_limit_pids(self) -> bool:
        return "pids" in self.dirs or (self.v2 and _has_file(self.dirs, "pids.max"))

    def oom_killed(self) -> bool:
        """Whether the kernel hit the group's memory cap (and killed or refused something)."""
        if "v2" in self.dirs:
            for line in _read(self.dirs["v2"] / "memory.events").splitlines():
                name, _, value = line.partition(" ")
                if name in ("oom_kill", "max") and value.strip() not in ("", "0"):
                    return True
            return False
        if "memory" in self.dirs:
            folder = self.dirs["memory"]
            for line in _read(folder / "memory.oom_control").splitlines():
                name, _, value = line.partition(" ")
                if name == "oom_kill" and value.strip() not in ("", "0"):
                    return True
            return _read(folder / "memory.failcnt") not in ("", "0")
        return False

    def cpu_seconds(self) -> float | None:
        """CPU-seconds used so far by every process that ran in the group (exited ones
        included); None where the group has no CPU accounting (the fallback, or a v1
        host without cpuacct)."""
        if "v2" in self.dirs:
            for line in _read(self.dirs["v2"] / "cpu.stat").splitlines():
                name, _, value = line.partition(" ")
                if name == "usage_usec" and value.strip().isdigit():
                    return int(value) / 1e6
            return None
        if "cpuacct" in self.dirs:
            usage = _read(self.dirs["cpuacct"] / "cpuacct.usage")
            return int(usage) / 1e9 if usage.isdigit() else None
        return None

    def procs_files(self) -> list[str]:
        """The files a process writes its pid to, to join the group."""
        return [str(d / "cgroup.procs") for d in self.dirs.values()]

    def pids(self) -> list[int]:
        """Every process in the group (empty for the fallback)."""
        found: set[int] = set()
        for folder in self.dirs.values():
            with contextlib.suppress(OSError, ValueError):
                found.update(int(x) for x in (folder / "cgroup.procs").read_text().split())
        return sorted(found)

    def freeze(self, tree_root: int | None = None) -> None:
        """Stop every process of the group (cgroup freezer), or of the tree under
        `tree_root` with SIGSTOP where there is no freezer."""
        if self.v2 and "v2" in self.dirs:
            _write(self.dirs["v2"] / "cgroup.freeze", "1")
            _wait_for(lambda: "frozen 1" in _read(self.dirs["v2"] / "cgroup.events"))
        elif "freezer" in self.dirs:
            state = self.dirs["freezer"] / "freezer.state"
            _write(state, "FROZEN")
            # A v1 group can stay FREEZING when a task forks or sleeps uninterruptibly at
            # the moment of the write; writing FROZEN again retries (the kernel's
            # freezer-subsystem documentation), so the wait re-writes while it waits.
            _wait_for(lambda: _read(state) == "FROZEN", retry=lambda: _write(state, "FROZEN"))
        elif tree_root is not None:
            self._stopped = stop_tree(tree_root)

    def thaw(self) -> None:
        """Undo `freeze`."""
        if self.v2 and "v2" in self.dirs:
            _write(self.dirs["v2"] / "cgroup.freeze", "0")
        elif "freezer" in self.dirs:
            _write(self.dirs["freezer"] / "freezer.state", "THAWED")
        for pid in self._stopped:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGCONT)
        self._stopped = []

    def kill(self) -> None:
        """SIGKILL every process of the group (frozen first, so none can fork away)."""
        if not self.dirs:
            return
        with contextlib.suppress(OSError, TimeoutError):
            self.freeze()
        for _ in range(5):
            pids = self.pids()
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                self.thaw()  # SIGKILL is delivered to frozen v1 tasks once thawed
            time.sleep(0.02)

    def remove(self) -> None:
        """Kill what is left and delete the group's folders."""
        self.kill()
        for folder in self.dirs.values():
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)  # exiting processes still counted
        self.dirs = {}


def _has_file(dirs: dict[str, Path], name: str) -> bool:
    return any((d / name).exists() for d in dirs.values())


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def _wait_for(done: Callable[[], bool], retry: Callable[[], None] | None = None) -> None:
    deadline = time.monotonic() + _FREEZE_TIMEOUT_S
    next_retry = time.monotonic() + _FREEZE_RETRY_S
    while not done():
        now = time.monotonic()
        if now > deadline:
            raise TimeoutError("the process group did not freeze in time")
        if retry is not None and now >= next_retry:
            with contextlib.suppress(OSError):
                retry()
            next_retry = now + _FREEZE_RETRY_S
        time.sleep(0.002)


def _make_v1(name: str, limits: Limits) -> dict[str, Path]:
    dirs: dict[str, Path] = {}
    for controller in _V1_CONTROLLERS:
        base = _CGROUP_FS / controller
        if not base.is_dir():
            continue
        parent = base / _own_path(controller).lstrip("/") / "rebench"
        folder = parent / name
        try:
            parent.mkdir(exist_ok=True)
            folder.mkdir()
            if controller == "memory" and limits.memory_bytes:
                _write(folder / "memory.limit_in_bytes", str(limits.memory_bytes))
                with contextlib.suppress(OSError):  # swap accounting may be off
                    _write(folder / "memory.memsw.limit_in_bytes", str(limits.memory_bytes))
            if controller == "pids" and limits.pids:
                _write(folder / "pids.max", str(limits.pids))
        except OSError:
            with contextlib.suppress(OSError):
                folder.rmdir()
            continue
        dirs[controller] = folder
    return dirs


def _make_v2(root: Path, name: str, limits: Limits) -> dict[str, Path]:
    """A v2 group beside ours (v2 forbids processes in inner nodes, so groups live in a
    `rebench` sibling folder we enable the controllers in); {} if that is not allowed."""
    own = root / _own_path(None).lstrip("/")
    parent = own / "rebench" if own == root else own.parent / "rebench"
    folder = parent / name
    try:
        parent.mkdir(exist_ok=True)
        with contextlib.suppress(OSError):
            _write(parent / "cgroup.subtree_control", "+memory +pids")
        folder.mkdir()
    except OSError:
        return {}
    with contextlib.suppress(OSError):
        if limits.memory_bytes:
            _write(folder / "memory.max", str(limits.memory_bytes))
            _write(folder / "memory.swap.max", "0")
    with contextlib.suppress(OSError):
        if limits.pids:
            _write(folder / "pids.max", str(limits.pids))
    return {"v2": folder}


# Runs as `python -I -S -c _LAUNCH JSON -- argv...`: joins the group, sets rlimits, execs.
_LAUNCH = """
import json, os, resource, sys
spec = json.loads(sys.argv[1])
for f in spec["procs"]:
    with open(f, "w") as h:
        h.write(str(os.getpid()))
for name, value in spec["rlimits"].items():
    lim = getattr(resource, name)
    soft, hard = resource.getrlimit(lim)
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(lim, (value, value))
os.execvp(sys.argv[3], sys.argv[3:])
"""


def rlimits_for(limits: Limits, group: ProcessGroup, gpu: bool) -> dict[str, int]:
    """The rlimits the launcher sets: file size and open files always; address space and
    process count only where the group cannot cap memory or pids (and not with a GPU,
    whose driver maps far more address space than it uses)."""
    out: dict[str, int] = {}
    if limits.file_size_bytes:
        out["RLIMIT_FSIZE"] = limits.file_size_bytes
    if limits.open_files:
        out["RLIMIT_NOFILE"] = limits.open_files
    if limits.memory_bytes and not group.can_limit_memory and not gpu:
        out["RLIMIT_AS"] = limits.memory_bytes
    if limits.pids and not group.can_limit_pids and os.getuid() != 0:
        out["RLIMIT_NPROC"] = limits.pids
    return out


def launcher_argv(group: ProcessGroup, rlimits: dict[str, int],
                  argv: Sequence[str]) -> list[str]:
    """`argv` prefixed with the launcher that joins `group` and applies `rlimits`. The
    launcher lowers each limit to the hard limit it finds (a caller may have set a lower one
    in the child before exec; raising a hard limit needs privileges)."""
    spec = json.dumps({"procs": group.procs_files(), "rlimits": rlimits})
    return [sys.executable, "-I", "-S", "-c", _LAUNCH, spec, "--", *argv]


__all__ = ["Limits", "ProcessGroup", "launcher_argv", "rlimits_for"]
