"""The sandbox interface: where untrusted code (agents' commands, solutions) runs."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from rebench.sandbox.limits import Limits, ProcessGroup


class Isolation(enum.Enum):
    """`bwrap`: bubblewrap namespaces. `local`: no isolation (explicit opt-in only)."""

    BWRAP = "bwrap"
    LOCAL = "local"


@dataclass(frozen=True)
class SandboxConfig:
    """What a sandbox shows the code inside it.

    `workdir` is the working directory, mounted read-write when `writable`, else read-only.
    `extra_ro` are further read-only paths (e.g. a snapshot, a public asset folder).
    `hidden` are paths that must be invisible inside (the runs root, the asset cache);
    with bwrap only what is listed is mounted at all, so hiding matters only for paths
    below a mounted one.
    `limits` caps the sandbox's process tree (memory, pids, file size); `runtime_modules`
    are rebench modules copied into the sandbox's child runtime (see runtime.py);
    `host_shm` binds the host's /dev/shm (CUDA IPC with a trusted parent) instead of a
    private one. `services_dir` (the run's service sockets) is bound read-only at
    /run/rebench-services.
    """

    workdir: Path
    writable: bool = True
    network: bool = False
    gpu: bool = False
    extra_ro: tuple[Path, ...] = ()
    extra_rw: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    limits: Limits | None = None
    runtime_modules: tuple[str, ...] = ()
    host_shm: bool = False
    services_dir: Path | None = None


@dataclass(frozen=True)
class ExecResult:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float


class Sandbox(Protocol):
    """A narrow interface: lifecycle, exec, read_file, write_file, and argv wrapping for
    long-lived children (scorers' untrusted processes) that need their own pipes."""

    isolation: Isolation
    config: SandboxConfig

    def create(self) -> None: ...

    def destroy(self) -> None: ...

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """The argv that runs `argv` inside this sandbox."""
        ...

    def exec(
        self, cmd: str, timeout: float, env: Mapping[str, str] | None = None
    ) -> ExecResult: ...

    def read_file(self, path: str) -> bytes: ...

    def write_file(self, path: str, data: bytes) -> None: ...

    def freeze(self) -> None:
        """Stop every process of the sandbox (for an official score)."""
        ...

    def thaw(self) -> None:
        """Let the processes stopped by `freeze` run again."""
        ...

    def process_group(self) -> ProcessGroup | None:
        """The group (cgroup with the profile's limits) every process of this sandbox
        joins, for another sandbox of the same run to join too; None where the sandbox
        keeps none (local isolation)."""
        ...

    def oom_killed(self) -> bool:
        """Whether the kernel's out-of-memory killer ended a process of this sandbox (False
        where that cannot be known)."""
        ...

    def cpu_seconds(self) -> float | None:
        """CPU-seconds used so far by every process that ran in this sandbox (exited ones
        included); None where nothing counts them (local isolation, no cgroup accounting,
        or no process ever started)."""
        ...

    def live_processes(self) -> list[str] | None:
        """"pid cmdline" of each process started in this sandbox that is alive now (at most
        50, each cut to 200 characters), or None where they cannot be told apart from the
        host's (local isolation) or cannot be listed (a lost sandbox)."""
        ...
