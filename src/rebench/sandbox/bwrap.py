"""Bubblewrap sandbox: untrusted code sees an allow-list of mounts (docs/decisions/0006):
the OS read-only, the interpreter read-only, of its installed packages only the allow-listed
distributions' files (sitepackages.py, decision 0011: never rebench or a corpus source), the
toolchains, the child runtime, its workdir and what the caller adds. Nothing else of the
host exists inside: not the runs root, the asset cache, the calibration, the key file or
rebench's own code.

A sandbox has its own mount, pid, ipc, uts, user and network namespaces. `exec` commands
share one persistent sandbox (a command server inside, see `inner.py`), so background jobs
outlive the command that started them; `destroy` kills bwrap, the pid namespace dies and
takes every process inside with it, detached ones included. `wrap` gives one-off sandboxes
of the same shape for scorers' children.

With `gpu`, the NVIDIA device nodes are bound in, and the host's /dev/shm only for scoring
children (`host_shm`: CUDA IPC needs it); the pid and ipc namespaces stay private.
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

from rebench.sandbox import sitepackages
from rebench.sandbox.base import ExecResult, Isolation, SandboxConfig
from rebench.sandbox.holder import Holder, SandboxLostError, start_holder
from rebench.sandbox.limits import Limits, ProcessGroup, launcher_argv, rlimits_for
from rebench.sandbox.local import child_env, workdir_relative
from rebench.sandbox.runtime import RUNTIME_MOUNT, runtime_dir
from rebench.sandbox.safefs import read_beneath, write_beneath
from rebench.services.client import SERVICES_ENV, SERVICES_MOUNT

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


def _real(path: Path | str) -> Path:
    return Path(os.path.realpath(path))


def _sensitive_paths() -> tuple[Path, ...]:
    """Paths no sandbox may see even below a mounted folder: the runs root, the asset
    cache, the calibration file and the key file."""
    from rebench.core.paths import cache_root, calibration_file, key_file, runs_root

    return (runs_root(), cache_root(), calibration_file(), key_file())


def _hide_args(path: Path) -> list[str]:
    """Arguments that make an existing path look empty: a tmpfs over a directory, /dev/null
    over a file. Paths that do not exist need nothing."""
    if path.is_dir():
        return ["--tmpfs", str(path)]
    if path.exists():
        return ["--ro-bind", "/dev/null", str(path)]
    return []


# The operating system, read-only. Merged-/usr links are recreated as links.
_OS_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")
# Folders every sandbox gets fresh and empty (see bwrap_argv and _run_dir_args).
_FRESH_DIRS = (Path("/tmp"), Path("/run"), Path("/dev/shm"))


def _os_args() -> list[str]:
    args: list[str] = []
    for path in _OS_PATHS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def _python_paths() -> list[Path]:
    """Folders the interpreter needs: the base installation and the virtualenv (their
    site folders are covered and filled by allow-list, see _site_ops). PYTHONPATH entries
    are not mounted: inside, PYTHONPATH is the child runtime alone."""
    paths = {_real(sys.base_prefix), _real(sys.prefix), _real(sys.executable).parent.parent}
    return sorted(p for p in paths if not any(p.is_relative_to(d) for d in _OS_PATHS)
                  and p not in _FRESH_DIRS and p != Path("/"))


def _toolchain_paths() -> list[Path]:
    """rustup's toolchains and cargo's proxies (not the rest of cargo's home: credentials)."""
    home = Path.home()
    rustup = Path(os.environ.get("RUSTUP_HOME", home / ".rustup"))
    cargo = Path(os.environ.get("CARGO_HOME", home / ".cargo")) / "bin"
    return [_real(p) for p in (rustup, cargo) if p.is_dir()]


def _os_roots() -> list[Path]:
    return [_real(p) for p in _OS_PATHS if os.path.isdir(p) and not os.path.islink(p)]


def _site_ops(roots: Sequence[Path]) -> tuple[list[tuple[int, int, list[str]]], list[str]]:
    """Mount operations for installed packages (decision 0011): every site folder below a
    mounted root (and every one on sys.path) is covered with an empty tmpfs, the allowed
    distributions' files are bound back into it, and then it is made read-only; files other
    distributions put elsewhere (bin/, share/) and the stdlib's corpus folders are covered.
    Returns the ordered operations and the closing remounts."""
    ops: list[tuple[int, int, list[str]]] = []
    active = set(sitepackages.active_sites())
    sites = [s for s in sitepackages.site_folders([*roots, *(s.parent.parent.parent
                                                             for s in active)])
             if s in active or any(s.is_relative_to(r) for r in roots)]
    for site in sorted({*sites, *active}):
        ops.append((len(site.parts), 1, ["--tmpfs", str(site)]))
        if site not in active:
            continue
        view = sitepackages.site_view(site)
        for path in view.binds:
            ops.append((len(path.parts), 0, ["--ro-bind", str(path), str(path)]))
        for path in view.foreign:
            if any(path.is_relative_to(r) for r in roots):
                ops.append((len(path.parts), 1, _hide_args(path)))
    for path in sitepackages.stdlib_hidden(roots):
        ops.append((len(path.parts), 1, _hide_args(path)))
    remounts = [arg for site in sorted({*sites, *active}) for arg in ("--remount-ro", str(site))]
    return ops, remounts


def _mount_args(config: SandboxConfig) -> list[str]:
    """The allow-list: the OS, Python, toolchains, the child runtime, the workdir and the
    extra paths; nothing else of the host exists inside. Binds go shallowest first so a
    deeper one wins; paths to hide below a bound folder are hidden after their parent."""
    ops: list[tuple[int, int, list[str]]] = []
    python = _python_paths()
    for path in (*python, *_toolchain_paths()):
        ops.append((len(path.parts), 0, ["--ro-bind", str(path), str(path)]))
    work = _real(config.workdir)
    ops.append((len(work.parts), 0, ["--bind" if config.writable else "--ro-bind",
                                     str(work), str(work)]))
    for path in map(_real, config.extra_ro):
        ops.append((len(path.parts), 0, ["--ro-bind", str(path), str(path)]))
    for path in map(_real, config.extra_rw):
        ops.append((len(path.parts), 0, ["--bind", str(path), str(path)]))
    bound = [*(Path(op[2][1]) for op in ops), *_os_roots()]
    for path in {_real(p) for p in (*config.hidden, *_sensitive_paths())}:
        if any(path.is_relative_to(b) and path != b for b in bound):
            ops.append((len(path.parts), 1, _hide_args(path)))
    site_ops, remounts = _site_ops([*python, *_os_roots()])
    ops += site_ops
    ops.sort(key=lambda op: (op[0], op[1]))
    runtime = runtime_dir(tuple(config.runtime_modules))
    services = (["--ro-bind", str(config.services_dir), SERVICES_MOUNT]
                if config.services_dir is not None else [])
    return [*(arg for _, _, args in ops for arg in args), *remounts,
            "--ro-bind", str(runtime), RUNTIME_MOUNT, *services]


def _run_dir_args(network: bool) -> list[str]:
    """An empty /run: host daemons' sockets there (docker, dbus) would let code reach
    outside even without a network. With network, keep the resolver's files for DNS."""
    args = ["--tmpfs", "/run"]
    resolver = Path("/run/systemd/resolve")
    if network and resolver.is_dir():
        args += ["--ro-bind", str(resolver), str(resolver)]
    return args


def _gpu_args(host_shm: bool) -> list[str]:
    """Device nodes CUDA needs (and DRM nodes where present). `host_shm` binds the host's
    /dev/shm: CUDA IPC from a trusted parent to a sandboxed scoring child fails with a
    private one (decision 0003); the agent's own sandbox always gets a private one, so no
    host path is shared between the agent and a scoring child."""
    args = ["--bind", "/dev/shm", "/dev/shm"] if host_shm and os.path.isdir("/dev/shm") \
        else ["--tmpfs", "/dev/shm"]
    for dev in sorted(glob.glob("/dev/nvidia*")) + (["/dev/dri"] if os.path.exists("/dev/dri")
                                                     else []):
        args += ["--dev-bind", dev, dev]
    return args


def sandbox_env(config: SandboxConfig, env: Mapping[str, str]) -> dict[str, str]:
    """The environment inside: the child runtime first on PYTHONPATH, its commands
    (rebench-service) on PATH, the services' folder when the run has services."""
    out = dict(env)
    out["PYTHONPATH"] = RUNTIME_MOUNT
    out["PATH"] = f"{RUNTIME_MOUNT}/bin:{out.get('PATH', '/usr/bin:/bin')}"
    if config.services_dir is not None:
        out[SERVICES_ENV] = SERVICES_MOUNT
    return out


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
    args = [exe, *flags, *_os_args(), "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp", *_run_dir_args(config.network)]
    args += _gpu_args(config.host_shm) if config.gpu else ["--tmpfs", "/dev/shm"]
    args += _mount_args(config)
    if not config.network:
        args.append("--unshare-net")
    args += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname", "sandbox",
             "--unshare-cgroup-try",
             "--die-with-parent", "--new-session", "--chdir", str(_real(config.workdir)),
             "--clearenv"]
    for key, value in sorted(sandbox_env(config, env).items()):
        args += ["--setenv", key, value]
    return [*args, "--", *argv]


class BwrapSandbox:
    """Runs commands under bubblewrap (see the module docstring for what is visible).

    `exec` runs in one persistent sandbox started by `create` (or the first `exec`):
    background jobs live on between commands, as in a container, until `destroy`, which
    kills every process inside. `wrap` gives one-off sandboxes for scorers' children and
    shells. Every process of the sandbox, persistent or wrapped, runs in one process group
    (limits.py) under `config.limits`: `freeze` stops them all, `destroy` kills them all.
    A `group` passed in is shared with other sandboxes and is not removed by `destroy`.
    """

    isolation = Isolation.BWRAP

    def __init__(self, config: SandboxConfig, group: ProcessGroup | None = None) -> None:
        self.config = config
        self._holder: Holder | None = None
        self._lock = threading.Lock()
        self._destroyed = False
        self._own_group = group is None
        self._group = group

    def group(self) -> ProcessGroup:
        """The process group every process of this sandbox joins (made on first use)."""
        with self._lock:
            if self._group is None:
                self._group = ProcessGroup.create(self.config.limits or _NO_LIMITS)
            return self._group

    def process_group(self) -> ProcessGroup | None:
        return self.group()

    def oom_killed(self) -> bool:
        return self.group().oom_killed()

    def cpu_seconds(self) -> float | None:
        # Never makes a group: reading a destroyed sandbox's usage must not leave a new one.
        with self._lock:
            group = self._group
        return group.cpu_seconds() if group is not None else None

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
            group = self._group if self._own_group else None
            if self._own_group:
                self._group = None
        if holder is not None:
            holder.close()
        if group is not None:
            group.remove()

    def _launch(self, argv: list[str], group: ProcessGroup) -> list[str]:
        """`argv` (a bwrap command line) behind the launcher that joins `group`."""
        limits = self.config.limits or _NO_LIMITS
        return launcher_argv(group, rlimits_for(limits, group, self.config.gpu), argv)

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """Run `argv` in a one-off sandbox of this config, in this sandbox's process group;
        inherited file descriptors (pass_fds) pass through; everything it starts dies with
        it."""
        return self._launch(bwrap_argv(self.config, argv, child_env(self.config, None)),
                            self.group())

    def freeze(self) -> None:
        """Stop every process of the sandbox (cgroup freezer, else SIGSTOP of the tree)."""
        with self._lock:
            holder = self._holder
        self.group().freeze(holder.proc.pid if holder is not None else None)

    def thaw(self) -> None:
        """Let the processes stopped by `freeze` run again."""
        self.group().thaw()

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
        group = self.group()
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
                self._holder = start_holder(
                    lambda inner: self._launch(bwrap_argv(self.config, inner, env), group))
            return self._holder, note

    def _discard(self, holder: Holder) -> None:
        with self._lock:
            if self._holder is holder:
                self._holder = None
        holder.close()

    def read_file(self, path: str) -> bytes:
        """Read a workdir file, race-free: no link is ever followed (safefs)."""
        return read_beneath(self.config.workdir, workdir_relative(self.config.workdir, path))

    def write_file(self, path: str, data: bytes) -> None:
        """Write a workdir file (refused when the sandbox is read-only), race-free."""
        if not self.config.writable:
            raise PermissionError("this sandbox's workdir is read-only")
        write_beneath(self.config.workdir, workdir_relative(self.config.workdir, path), data)


_NO_LIMITS = Limits(open_files=None)
