"""Sandboxes for untrusted code: `bwrap` (bubblewrap) and `local` (no isolation)."""

from rebench.sandbox.base import ExecResult, Isolation, Sandbox, SandboxConfig
from rebench.sandbox.local import LocalSandbox


def make_sandbox(isolation: Isolation, config: SandboxConfig) -> Sandbox:
    """The sandbox of the given kind."""
    if isolation is Isolation.LOCAL:
        return LocalSandbox(config)
    from rebench.sandbox.bwrap import BwrapSandbox

    sandbox: Sandbox = BwrapSandbox(config)
    return sandbox


def default_isolation() -> Isolation:
    """bwrap where it works on this machine, else local (callers must then warn or refuse)."""
    from rebench.sandbox.bwrap import bwrap_available

    return Isolation.BWRAP if bwrap_available() else Isolation.LOCAL


__all__ = [
    "ExecResult",
    "Isolation",
    "LocalSandbox",
    "Sandbox",
    "SandboxConfig",
    "default_isolation",
    "make_sandbox",
]
