"""The Rust toolchain the judge compiles with: the real rustc binary, its sysroot, its version.

These probes run the installed toolchain with fixed arguments on the trusted side (no
agent input reaches them), before any sandbox exists: the sandboxes that run the compiler
must show the sysroot they find. Portable: standard library only (copied into the
workspace for the local evaluate tool).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

_PROBE_TIMEOUT_S = 30


def find_rustc() -> str:
    """The real rustc binary (not the rustup proxy, which needs its RUSTUP_HOME at run time,
    usually ~/.rustup: sandboxes move HOME, so the proxy is asked with the likely homes)."""
    proxy = shutil.which("rustc")
    if proxy is None:
        raise FileNotFoundError("rustc is not installed (install Rust stable with rustup)")
    homes = [os.environ.get("RUSTUP_HOME"), None,
             str(Path(proxy).resolve().parents[2] / ".rustup")]  # ~/.cargo/bin -> ~/.rustup
    for home in homes:
        env = {**os.environ, **({"RUSTUP_HOME": home} if home else {})}
        try:
            sysroot = subprocess.run([proxy, "--print", "sysroot"], capture_output=True,
                                     text=True, timeout=_PROBE_TIMEOUT_S, check=True,
                                     env=env).stdout.strip()
        except (subprocess.SubprocessError, OSError):
            continue
        real = Path(sysroot) / "bin" / "rustc"
        if real.is_file():
            return str(real)
    return proxy


def rustc_sysroot(rustc: str) -> Path:
    """The toolchain folder a sandbox must show read-only for `rustc` to work."""
    return Path(rustc).resolve().parent.parent


def rustc_version(rustc: str) -> str:
    """`rustc --version` (part of the judge's compile cache key)."""
    return subprocess.run([rustc, "--version"], capture_output=True, text=True,
                          timeout=_PROBE_TIMEOUT_S).stdout.strip()
