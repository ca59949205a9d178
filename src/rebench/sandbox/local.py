"""No isolation: commands run as the current user on the host. Opt-in only."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from rebench.sandbox.base import ExecResult, Isolation, SandboxConfig
from rebench.sandbox.process import MAX_OUTPUT_BYTES, kill_group, run_process_group

MAX_OUTPUT_CHARS = MAX_OUTPUT_BYTES  # kept for callers of the old name

# Host variables a sandboxed process may inherit; everything else (tokens, keys, the
# harness's own settings such as REBENCH_*) stays outside.
_SAFE_ENV = ("PATH", "LANG", "LC_ALL", "TERM", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS",
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
    env.update(config.env)
    if extra:
        env.update(extra)
    return env


def safe_join(root: Path, path: str) -> Path:
    """`root / path` resolved; PermissionError if it leaves `root` (also through links)."""
    resolved = (root / path).resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise PermissionError(f"{path} is outside the workspace")
    return resolved


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

    def read_file(self, path: str) -> bytes:
        """Read a workdir file; paths escaping the workdir are refused."""
        return safe_join(self.config.workdir, path).read_bytes()

    def write_file(self, path: str, data: bytes) -> None:
        """Write a workdir file, creating folders as needed."""
        target = safe_join(self.config.workdir, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


__all__ = ["MAX_OUTPUT_CHARS", "LocalSandbox", "child_env", "kill_group", "run_process_group",
           "safe_join"]
