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
import shutil
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence

from rebench.sandbox.base import ExecResult, Isolation, SandboxConfig
from rebench.sandbox.holder import Holder, SandboxLostError, start_holder
from rebench.sandbox.limits import Limits, ProcessGroup, launcher_argv, rlimits_for
from rebench.sandbox.local import child_env, workdir_relative
from rebench.sandbox.mounts import (
    gpu_args,
    mount_args,
    os_args,
    real,
    run_dir_args,
    sandbox_env,
)
from rebench.sandbox.safefs import read_beneath, write_beneath

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
    args = [exe, *flags, *os_args(), "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp", *run_dir_args(config.network)]
    args += gpu_args(config.host_shm) if config.gpu else ["--tmpfs", "/dev/shm"]
    args += mount_args(config)
    if not config.network:
        args.append("--unshare-net")
    args += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname", "sandbox",
             "--unshare-cgroup-try",
             "--die-with-parent", "--new-session", "--chdir", str(real(config.workdir)),
             "--clearenv"]
    for key, value in sorted(sandbox_env(config, env).items()):
        args += ["--setenv", key, value]
    return [*args, "--", *argv]


# Lists "pid cmdline" of every process in the sandbox's pid namespace except the sandbox's
# own (pid 1: bwrap, pid 2: its command server), this shell and its children.
_LIST_PROCESSES = (
    'for p in /proc/[0-9]*; do n=${p#/proc/}; [ "$n" -le 2 ] && continue; '
    '[ "$n" = "$$" ] && continue; read -r _ _ _ pp _ < "$p/stat" 2>/dev/null || continue; '
    '[ "$pp" = "$$" ] && continue; c=$(tr "\\0" " " < "$p/cmdline" 2>/dev/null); '
    '[ -n "$c" ] && echo "$n $c"; done'
)
_MAX_LISTED = 50
_MAX_CMDLINE_CHARS = 200
_LIST_TIMEOUT_S = 5.0


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

    def live_processes(self) -> list[str] | None:
        """Every process in the sandbox's pid namespace but its own (see base.Sandbox)."""
        result = self.exec(_LIST_PROCESSES, timeout=_LIST_TIMEOUT_S)
        if result.returncode != 0 or result.timed_out:
            return None
        lines = [line.strip()[:_MAX_CMDLINE_CHARS] for line in result.stdout.splitlines()
                 if line.strip()]
        return lines[:_MAX_LISTED]

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
            result = holder.request(cmd, real(self.config.workdir), dict(env or {}), timeout)
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
