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


ISOLATION_CHOICES = ("auto", "bwrap", "local")


def resolve_isolation(choice: str) -> Isolation | None:
    """The one rule for a user's isolation choice (`auto`, `bwrap` or `local`): `local` as
    asked, otherwise bubblewrap where it works here, otherwise None. Never a silent fall
    back to no sandbox: each front end turns None into its own error (the CLI's, Inspect's,
    a Ray node's) and prints its own warning for `local`."""
    if choice not in ISOLATION_CHOICES:
        raise ValueError(f"isolation must be one of {', '.join(ISOLATION_CHOICES)}")
    if choice == "local":
        return Isolation.LOCAL
    from rebench.sandbox.bwrap import bwrap_available

    return Isolation.BWRAP if bwrap_available() else None


def default_isolation() -> Isolation:
    """`resolve_isolation("auto")`, falling back to local where bwrap does not work (for
    tests and benchmarks; callers must then warn or refuse)."""
    return resolve_isolation("auto") or Isolation.LOCAL


__all__ = [
    "ISOLATION_CHOICES",
    "ExecResult",
    "Isolation",
    "LocalSandbox",
    "Sandbox",
    "SandboxConfig",
    "default_isolation",
    "make_sandbox",
    "resolve_isolation",
]
