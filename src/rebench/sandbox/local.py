"""No isolation: commands run as the current user on the host. Opt-in only."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from rebench.sandbox.base import ExecResult, Isolation, SandboxConfig
from rebench.sandbox.process import MAX_OUTPUT_BYTES, kill_group, run_process_group

MAX_OUTPUT_CHARS = MAX_OUTPUT_BYTES  # kept for callers of the old name

# Host variables a sandboxed process may inherit; everything else (tokens, keys, the
# harness's own settings such as REBENCH_*) stays outside.
_SAFE_ENV = ("PATH", "LANG", "LC_ALL", "TERM", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS",
             "NUMBA_CACHE_DIR", "TMPDIR", "VIRTUAL_ENV", "PYTHONPATH",
             # keep NVLink multicast off where the host says so (shared GPUs)
             "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS")


def child_env(config: SandboxConfig, extra: Mapping[str, str] | None) -> dict[str, str]:
    """A small environment for sandboxed processes: PATH, HOME, locale, and what is asked."""
    env = {k: os.environ[k] for k in _SAFE_ENV if k in os.environ}
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

    def create(self) -> None:
        """Make the workdir."""
        self.config.workdir.mkdir(parents=True, exist_ok=True)

    def destroy(self) -> None:
        """Nothing to tear down: each exec's process group is killed when it ends."""

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """`argv` unchanged: no isolation."""
        return list(argv)

    def exec(self, cmd: str, timeout: float, env: Mapping[str, str] | None = None) -> ExecResult:
        """Run `cmd` with bash in the workdir; on timeout kill its process group (a process
        that left the group with setsid survives: local isolation cannot contain it)."""
        return run_process_group(
            ["bash", "-c", cmd], self.config.workdir, child_env(self.config, env), timeout
        )

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
