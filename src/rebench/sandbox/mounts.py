"""What a bubblewrap sandbox sees (docs/decisions/0006, 0011): the allow-list of mounts
(the OS and the interpreter read-only, of the installed packages only the allow-listed
distributions' files, the toolchains, the child runtime, the workdir and what the caller
adds), the paths hidden even below a mounted folder, and the environment inside.
`bwrap.bwrap_argv` assembles them into a command line."""

from __future__ import annotations

import glob
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from rebench.sandbox import sitepackages
from rebench.sandbox.base import SandboxConfig
from rebench.sandbox.runtime import RUNTIME_MOUNT, runtime_dir
from rebench.services.client import SERVICES_ENV, SERVICES_MOUNT


def real(path: Path | str) -> Path:
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
# Folders every sandbox gets fresh and empty (see bwrap_argv and run_dir_args).
_FRESH_DIRS = (Path("/tmp"), Path("/run"), Path("/dev/shm"))


def os_args() -> list[str]:
    args: list[str] = []
    for path in _OS_PATHS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def python_paths() -> list[Path]:
    """Folders the interpreter needs: the base installation and the virtualenv (their
    site folders are covered and filled by allow-list, see _site_ops). PYTHONPATH entries
    are not mounted: inside, PYTHONPATH is the child runtime alone."""
    paths = {real(sys.base_prefix), real(sys.prefix), real(sys.executable).parent.parent}
    return sorted(p for p in paths if not any(p.is_relative_to(d) for d in _OS_PATHS)
                  and p not in _FRESH_DIRS and p != Path("/"))


def _toolchain_paths() -> list[Path]:
    """rustup's toolchains and cargo's proxies (not the rest of cargo's home: credentials)."""
    home = Path.home()
    rustup = Path(os.environ.get("RUSTUP_HOME", home / ".rustup"))
    cargo = Path(os.environ.get("CARGO_HOME", home / ".cargo")) / "bin"
    return [real(p) for p in (rustup, cargo) if p.is_dir()]


def _os_roots() -> list[Path]:
    return [real(p) for p in _OS_PATHS if os.path.isdir(p) and not os.path.islink(p)]


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


def mount_args(config: SandboxConfig) -> list[str]:
    """The allow-list: the OS, Python, toolchains, the child runtime, the workdir and the
    extra paths; nothing else of the host exists inside. Binds go shallowest first so a
    deeper one wins; paths to hide below a bound folder are hidden after their parent."""
    ops: list[tuple[int, int, list[str]]] = []
    python = python_paths()
    for path in (*python, *_toolchain_paths()):
        ops.append((len(path.parts), 0, ["--ro-bind", str(path), str(path)]))
    work = real(config.workdir)
    ops.append((len(work.parts), 0, ["--bind" if config.writable else "--ro-bind",
                                     str(work), str(work)]))
    for path in map(real, config.extra_ro):
        ops.append((len(path.parts), 0, ["--ro-bind", str(path), str(path)]))
    for path in map(real, config.extra_rw):
        ops.append((len(path.parts), 0, ["--bind", str(path), str(path)]))
    bound = [*(Path(op[2][1]) for op in ops), *_os_roots()]
    for path in {real(p) for p in (*config.hidden, *_sensitive_paths())}:
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


def run_dir_args(network: bool) -> list[str]:
    """An empty /run: host daemons' sockets there (docker, dbus) would let code reach
    outside even without a network. With network, keep the resolver's files for DNS."""
    args = ["--tmpfs", "/run"]
    resolver = Path("/run/systemd/resolve")
    if network and resolver.is_dir():
        args += ["--ro-bind", str(resolver), str(resolver)]
    return args


def gpu_args(host_shm: bool) -> list[str]:
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
