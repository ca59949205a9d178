"""Sandboxes for untrusted code: `bwrap` (bubblewrap) and `local` (no isolation)."""

from rebench.sandbox.base import ExecResult, Isolation, Sandbox, SandboxConfig
from rebench.sandbox.local import LocalSandbox


def make_sandbox(isolation: Isolation, config: SandboxConfig,
                 share_with: Sandbox | None = None) -> Sandbox:
    """The sandbox of the given kind. With `share_with` (a sandbox of the same run, e.g.
    the agent's workspace sandbox), its processes join that sandbox's process group: they
    are frozen with it during official scores and killed with it at the hard stop."""
    if isolation is Isolation.LOCAL:
        return LocalSandbox(config)
    from rebench.sandbox.bwrap import BwrapSandbox

    group = share_with.process_group() if share_with is not None else None
    sandbox: Sandbox = BwrapSandbox(config, group=group)
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
