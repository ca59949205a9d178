"""No isolation: commands run as the current user on the host. Opt-in only."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from rebench.sandbox.base import ExecResult, Isolation, SandboxConfig
from rebench.sandbox.limits import ProcessGroup
from rebench.sandbox.process import MAX_OUTPUT_BYTES, kill_group, run_process_group
from rebench.sandbox.safefs import UnsafePathError, read_beneath, write_beneath
from rebench.services.client import SERVICES_ENV

MAX_OUTPUT_CHARS = MAX_OUTPUT_BYTES  # kept for callers of the old name

# Host variables a sandboxed process may inherit; everything else (tokens, keys, the
# harness's own settings such as REBENCH_*) stays outside.
_SAFE_ENV = ("PATH", "LANG", "LC_ALL", "TERM", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS",
             "OMP_WAIT_POLICY",  # PASSIVE unless the operator set it (rebench/__init__.py)
             "NUMBA_CACHE_DIR", "TMPDIR", "VIRTUAL_ENV", "PYTHONPATH", "RUSTUP_HOME",
             "CARGO_HOME",
             # keep NVLink multicast off where the host says so (shared GPUs)
             "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS")


def child_env(config: SandboxConfig, extra: Mapping[str, str] | None) -> dict[str, str]:
    """A small environment for sandboxed processes: PATH, HOME, locale, and what is asked."""
    env = {k: os.environ[k] for k in _SAFE_ENV if k in os.environ}
    # The harness's own interpreter comes first on PATH, so `python` in recipes and agents'
    # commands is the one rebench runs with (its packages), activated or not.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    # rustup's proxies (rustc, cargo) look in $HOME/.rustup, and HOME moves to the workdir.
    rustup = Path.home() / ".rustup"
    if "RUSTUP_HOME" not in env and rustup.is_dir():
        env["RUSTUP_HOME"] = str(rustup)
    env["HOME"] = str(config.workdir)
    if config.services_dir is not None:
        env[SERVICES_ENV] = str(config.services_dir)
    env.update(config.env)
    if extra:
        env.update(extra)
    return env


class LocalSandbox:
    """Runs everything directly on the host, in `config.workdir`."""

    isolation = Isolation.LOCAL

    def __init__(self, config: SandboxConfig) -> None:
        self.config = config
        self._groups: set[int] = set()
        self._lock = threading.Lock()

    def create(self) -> None:
        """Make the workdir."""
        self.config.workdir.mkdir(parents=True, exist_ok=True)

    def destroy(self) -> None:
        """Kill the process groups of commands still running (a process that left its group
        with setsid survives: local isolation cannot contain it)."""
        with self._lock:
            groups, self._groups = self._groups, set()
        for pgid in groups:
            kill_group(pgid)

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """`argv` unchanged: no isolation."""
        return list(argv)

    def exec(self, cmd: str, timeout: float, env: Mapping[str, str] | None = None) -> ExecResult:
        """Run `cmd` with bash in the workdir; on timeout kill its process group (a process
        that left the group with setsid survives: local isolation cannot contain it)."""
        pgids: list[int] = []

        def started(pid: int) -> None:
            pgids.append(pid)
            with self._lock:
                self._groups.add(pid)

        try:
            return run_process_group(["bash", "-c", cmd], self.config.workdir,
                                     child_env(self.config, env), timeout, started)
        finally:
            with self._lock:
                self._groups.difference_update(pgids)

    def freeze(self) -> None:
        """Nothing: local isolation cannot stop the agent's processes reliably (documented
        in the README's security section)."""

    def thaw(self) -> None:
        """Nothing (see `freeze`)."""

    def process_group(self) -> ProcessGroup | None:
        """None: local processes join no group of the run."""
        return None

    def oom_killed(self) -> bool:
        """False: without a group, an out-of-memory kill cannot be told from a crash."""
        return False

    def cpu_seconds(self) -> float | None:
        """None: local processes are counted by no group of the run."""
        return None

    def live_processes(self) -> list[str] | None:
        """None: local processes share the host's process table."""
        return None

    def read_file(self, path: str) -> bytes:
        """Read a workdir file; absolute paths, `..` and links anywhere on the way are
        refused, race-free (safefs)."""
        return read_beneath(self.config.workdir, workdir_relative(self.config.workdir, path))

    def write_file(self, path: str, data: bytes) -> None:
        """Write a workdir file, creating folders as needed; never through a link."""
        write_beneath(self.config.workdir, workdir_relative(self.config.workdir, path), data)


def workdir_relative(workdir: Path, path: str) -> str:
    """`path` relative to the workdir: agents may name files by their absolute path in
    the sandbox (the workdir's own path); anything else absolute is refused."""
    if path.startswith("/"):
        for base in {str(workdir), os.path.realpath(workdir)}:
            if path == base or path.startswith(base.rstrip("/") + "/"):
                return path[len(base):].lstrip("/") or "."
        raise UnsafePathError(f"{path} is outside the workspace")
    return path


__all__ = ["MAX_OUTPUT_CHARS", "LocalSandbox", "child_env", "kill_group", "run_process_group",
           "workdir_relative"]
