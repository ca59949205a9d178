"""Making bubblewrap work on this machine: check, install (Debian/Ubuntu, as root), explain."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rebench.sandbox import bwrap

Runner = Callable[[list[str]], int]
_SYSCTL_HINTS = (
    (Path("/proc/sys/kernel/unprivileged_userns_clone"), "0",
     "sudo sysctl -w kernel.unprivileged_userns_clone=1"),
    (Path("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"), "1",
     "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (or an AppArmor profile "
     "for bwrap)"),
    (Path("/proc/sys/user/max_user_namespaces"), "0",
     "sudo sysctl -w user.max_user_namespaces=15000"),
)


@dataclass(frozen=True)
class SetupResult:
    """Whether bwrap works now, and what was done or must be done."""

    ok: bool
    message: str


def _run(argv: list[str]) -> int:
    return subprocess.run(argv, check=False).returncode


def _namespace_hint() -> str:
    for path, bad, fix in _SYSCTL_HINTS:
        try:
            if path.read_text().strip() == bad:
                return f"user namespaces are disabled ({path} is {bad}): {fix}"
        except OSError:
            continue
    return "bwrap cannot create namespaces here (a container without user namespaces?)"


def _install_hint() -> str:
    if shutil.which("apt-get"):
        return "install it with: sudo apt-get install bubblewrap"
    if shutil.which("dnf"):
        return "install it with: sudo dnf install bubblewrap"
    if shutil.which("pacman"):
        return "install it with: sudo pacman -S bubblewrap"
    return "install bubblewrap (https://github.com/containers/bubblewrap) from your OS packages"


def ensure_bwrap(install: bool = True, runner: Runner = _run) -> SetupResult:
    """Check bwrap; if it is missing and we are root on Debian/Ubuntu, install it with apt-get
    (when `install`). The message says what works, what was done, or what the user must do;
    without bwrap, untrusted code can only run with the explicit `--isolation local`."""
    if bwrap.bwrap_available():
        return SetupResult(True, "bubblewrap works: agents and scorers run sandboxed")
    if shutil.which("bwrap") is not None:
        return SetupResult(False, f"bubblewrap is installed but does not work: "
                                  f"{_namespace_hint()}")
    if not install:
        return SetupResult(False, f"bubblewrap is missing; {_install_hint()}")
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return SetupResult(False, f"bubblewrap is missing and cannot be installed "
                                  f"automatically here (needs root and apt-get); "
                                  f"{_install_hint()}")
    updated = runner(["apt-get", "update"]) == 0
    if not updated or runner(["apt-get", "install", "-y", "bubblewrap"]) != 0:
        return SetupResult(False, "apt-get could not install bubblewrap (offline?); "
                                  f"{_install_hint()}")
    bwrap.reset_probe()
    if bwrap.bwrap_available():
        return SetupResult(True, "installed bubblewrap with apt-get; it works")
    return SetupResult(False, f"installed bubblewrap, but it does not work: "
                              f"{_namespace_hint()}")
