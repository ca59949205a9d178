"""Bubblewrap sandbox: untrusted code sees a read-only system, its workdir and nothing of
the runs, the cache or the reference solutions.

A sandbox has its own mount, pid, ipc, uts, user and network namespaces. `exec` commands
share one persistent sandbox (a command server inside, see `inner.py`), so background jobs
outlive the command that started them; `destroy` kills bwrap, the pid namespace dies and
takes every process inside with it, detached ones included. `wrap` gives one-off sandboxes
of the same shape for scorers' children.

With `gpu`, the NVIDIA device nodes and the host's /dev/shm are bound in (CUDA IPC needs
the latter); the pid and ipc namespaces stay private, which CUDA IPC does not need.
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from rebench.sandbox.base import ExecResult, Isolation, SandboxConfig
from rebench.sandbox.holder import Holder, SandboxLostError, start_holder
from rebench.sandbox.local import child_env, safe_join

# Namespace and privilege flags, strongest first; the first set this machine accepts is used.
# `--unshare-user --disable-userns` stops code inside from building a user namespace of its
# own; `--cap-drop ALL` matters when the harness runs as root, where bwrap keeps every
# capability by default (CAP_SYS_ADMIN inside could unmount the tmpfs over hidden paths).
_PRIVILEGE_FLAGS: tuple[tuple[str, ...], ...] = (
    ("--unshare-user", "--disable-userns", "--cap-drop", "ALL"),
    ("--cap-drop", "ALL"),
    (),
)
_PROBE_TIMEOUT_S = 10.0


class SandboxUnavailableError(RuntimeError):
    """bwrap is missing or cannot create namespaces on this machine."""


@functools.cache
def _bwrap_setup() -> tuple[str, tuple[str, ...]] | None:
    """bwrap's path and the strongest flag set with which a trivial `bwrap ... true` works;
    None if bwrap is missing or no flag set works (e.g. user namespaces are disabled)."""
    exe = shutil.which("bwrap")
    if exe is None:
        return None
    for flags in _PRIVILEGE_FLAGS:
        argv = [exe, *flags, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
                "--unshare-pid", "--unshare-net", "--die-with-parent", "true"]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=_PROBE_TIMEOUT_S,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return exe, flags
    return None


def reset_probe() -> None:
    """Forget the cached probe (after installing bwrap)."""
    _bwrap_setup.cache_clear()


def bwrap_available() -> bool:
    """True when bwrap is on PATH and can start a sandbox here (cached per process)."""
    return _bwrap_setup() is not None


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _sensitive_paths() -> tuple[Path, ...]:
    """Paths no sandbox may ever see unless bound explicitly: the runs root, the asset
    cache, and the reference/expert solutions shipped inside the installed package."""
    from rebench.core.paths import cache_root, calibration_file, runs_root

    envs = Path(__file__).resolve().parent.parent / "environments"
    shipped = [Path(p) for p in glob.glob(str(envs / "*" / "reference"))]
    shipped += [Path(p) for p in glob.glob(str(envs / "*" / "expert"))]
    return (runs_root(), cache_root(), calibration_file(), *shipped)


def _hide_args(path: Path) -> list[str]:
    """Arguments that make an existing path look empty: a tmpfs over a directory, /dev/null
    over a file. Paths that do not exist need nothing (the system is read-only inside)."""
    if path.is_dir():
        return ["--tmpfs", str(path)]
    if path.exists():
        return ["--ro-bind", "/dev/null", str(path)]
    return []


# Folders every sandbox replaces with an empty tmpfs (see bwrap_argv and _run_dir_args).
_FRESH_DIRS = (Path("/tmp"), Path("/run"), Path("/dev/shm"))


def _runtime_paths() -> tuple[Path, ...]:
    """The interpreter, its virtualenv and the rebench package, where they lie in a folder
    the sandbox replaces with a fresh tmpfs (a checkout or venv under /tmp): re-bound
    read-only, so sandboxed `python -m rebench...` children still start."""
    import rebench

    candidates = {
        _real(Path(sys.prefix)), _real(Path(sys.base_prefix)),
        _real(Path(sys.executable)).parent, _real(Path(rebench.__file__)).parent.parent,
    }
    return tuple(sorted(
        p for p in candidates
        if p.exists() and any(p.is_relative_to(d) and p != d for d in _FRESH_DIRS)
    ))


def _mount_args(config: SandboxConfig) -> list[str]:
    """Hidden paths and binds, shallowest first so a deeper mount wins over a shallower one
    (a workdir inside a hidden runs root stays visible; a hidden folder inside the workdir
    stays hidden). At equal depth an explicit bind wins over hiding."""
    ops: list[tuple[int, int, list[str]]] = []
    hidden = {_real(p) for p in (*config.hidden, *_sensitive_paths())}
    hidden |= {Path(os.path.abspath(p)) for p in config.hidden}  # the link itself, too
    for path in hidden:
        ops.append((len(path.parts), 0, _hide_args(path)))
    for path in _runtime_paths():
        ops.append((len(path.parts), 1, ["--ro-bind", str(path), str(path)]))
    work = _real(config.workdir)
    ops.append((len(work.parts), 1, ["--bind" if config.writable else "--ro-bind",
                                     str(work), str(work)]))
    for path in map(_real, config.extra_ro):
        ops.append((len(path.parts), 1, ["--ro-bind", str(path), str(path)]))
    for path in map(_real, config.extra_rw):
        ops.append((len(path.parts), 1, ["--bind", str(path), str(path)]))
    ops.sort(key=lambda op: (op[0], op[1]))
    return [arg for _, _, args in ops for arg in args]


def _run_dir_args(network: bool) -> list[str]:
    """An empty /run: host daemons' sockets there (docker, dbus) would let code reach
    outside even without a network. With network, keep the resolver's files for DNS."""
    args = ["--tmpfs", "/run"]
    resolver = Path("/run/systemd/resolve")
    if network and resolver.is_dir():
        args += ["--ro-bind", str(resolver), str(resolver)]
    return args


def _gpu_args() -> list[str]:
    """Device nodes CUDA needs (and DRM nodes where present), and the host's /dev/shm:
    CUDA IPC from a trusted parent to a sandboxed child fails with a private /dev/shm
    (cudaErrorMapBufferObjectFailed), while it works with the pid and ipc namespaces
    unshared (measured on an H200 with torch 2.11, 2026-11-29; docs/benchmarks/sandbox.md)."""
    args = ["--bind", "/dev/shm", "/dev/shm"] if os.path.isdir("/dev/shm") else []
    for dev in sorted(glob.glob("/dev/nvidia*")) + (["/dev/dri"] if os.path.exists("/dev/dri")
                                                     else []):
        args += ["--dev-bind", dev, dev]
    return args


def bwrap_argv(config: SandboxConfig, argv: Sequence[str],
               env: Mapping[str, str]) -> list[str]:
    """The full bwrap command line running `argv` under `config` with exactly `env`."""
    setup = _bwrap_setup()
    if setup is None:
        raise SandboxUnavailableError(
            "bubblewrap (bwrap) is not installed or cannot create namespaces here; "
            "install it or choose the local isolation explicitly"
        )
    exe, flags = setup
    args = [exe, *flags, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp", *_run_dir_args(config.network)]
    if config.gpu:
        args += _gpu_args()
    else:
        args += ["--tmpfs", "/dev/shm"]
    args += _mount_args(config)
    if not config.network:
        args.append("--unshare-net")
    args += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname", "sandbox",
             "--unshare-cgroup-try",
             "--die-with-parent", "--new-session", "--chdir", str(_real(config.workdir)),
             "--clearenv"]
    for key, value in sorted(env.items()):
        args += ["--setenv", key, value]
    return [*args, "--", *argv]


class BwrapSandbox:
    """Runs commands under bubblewrap (see the module docstring for what is visible).

    `exec` runs in one persistent sandbox started by `create` (or the first `exec`):
    background jobs live on between commands, as in a container, until `destroy`, which
    kills every process inside. `wrap` gives one-off sandboxes for scorers' children.
    """

    isolation = Isolation.BWRAP

    def __init__(self, config: SandboxConfig) -> None:
        self.config = config
        self._holder: Holder | None = None
        self._lock = threading.Lock()
        self._destroyed = False

    def create(self) -> None:
        """Make the workdir and start the sandbox; SandboxUnavailableError if bwrap cannot
        run here."""
        if not bwrap_available():
            raise SandboxUnavailableError(
                "bubblewrap (bwrap) is not installed or cannot create namespaces here"
            )
        self.config.workdir.mkdir(parents=True, exist_ok=True)
        with self._lock:
            self._destroyed = False
        self._running_holder()

    def destroy(self) -> None:
        """Kill the sandbox and every process in it, detached ones included."""
        with self._lock:
            holder, self._holder = self._holder, None
            self._destroyed = True  # no exec may start a new one behind the harness's back
        if holder is not None:
            holder.close()

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """Run `argv` in a one-off sandbox of this config; inherited file descriptors
        (pass_fds) pass through; everything it starts dies with it."""
        return bwrap_argv(self.config, argv, child_env(self.config, None))

    def exec(self, cmd: str, timeout: float, env: Mapping[str, str] | None = None) -> ExecResult:
        """Run `cmd` with bash in the workdir. On timeout its session (the command and its
        `&` jobs) is killed; jobs that called setsid live on until `destroy`."""
        start = time.monotonic()
        try:
            holder, note = self._running_holder()
        except SandboxLostError as exc:
            return ExecResult(returncode=-9, stdout="", stderr=f"[sandbox: {exc}]",
                              timed_out=False, duration_s=time.monotonic() - start)
        try:
            result = holder.request(cmd, _real(self.config.workdir), dict(env or {}), timeout)
        except SandboxLostError as exc:
            self._discard(holder)
            detail = holder.setup_error()
            elapsed = time.monotonic() - start
            return ExecResult(
                returncode=-9, stdout="",
                stderr=f"[sandbox: {exc}; every process in it was stopped]"
                + (f"\n{detail}" if detail else ""),
                timed_out=elapsed >= timeout, duration_s=elapsed,
            )
        return dataclasses.replace(result, stderr=note + result.stderr) if note else result

    def _running_holder(self) -> tuple[Holder, str]:
        """The live sandbox (started if needed) and a note for the agent if an earlier one
        died since the last command."""
        with self._lock:
            if self._destroyed:
                raise SandboxLostError("the sandbox was destroyed (the run's time is up?)")
            note = ""
            if self._holder is not None and not self._holder.alive:
                self._holder.close()
                self._holder = None
                note = "[sandbox restarted: processes left by earlier commands were stopped]\n"
            if self._holder is None:
                env = child_env(self.config, None)
                self._holder = start_holder(lambda inner: bwrap_argv(self.config, inner, env))
            return self._holder, note

    def _discard(self, holder: Holder) -> None:
        with self._lock:
            if self._holder is holder:
                self._holder = None
        holder.close()

    def read_file(self, path: str) -> bytes:
        """Read a workdir file; paths escaping the workdir (also through links) are refused."""
        return safe_join(self.config.workdir, path).read_bytes()

    def write_file(self, path: str, data: bytes) -> None:
        """Write a workdir file (refused when the sandbox is read-only)."""
        if not self.config.writable:
            raise PermissionError("this sandbox's workdir is read-only")
        target = safe_join(self.config.workdir, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
