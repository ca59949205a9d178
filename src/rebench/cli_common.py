"""What every `rebench` command module shares: the consoles, the isolation and profile
options, number formatting. Below cli.py and cli_runs.py, so neither imports the other's
internals."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click
from rich.console import Console

from rebench.core.errors import RebenchError

if TYPE_CHECKING:
    from rebench.sandbox import Isolation

console = Console(stderr=True)
out = Console()
F = TypeVar("F", bound=Callable[..., Any])

ISOLATION_HELP = (
    "where untrusted code runs: bwrap (bubblewrap), local (no isolation: only for trusted "
    "code, prints a warning), auto (bwrap if it works here)"
)


def resolve_isolation(choice: str) -> Isolation:
    """The Isolation for a CLI choice (sandbox.resolve_isolation); `auto` refuses to fall
    back silently."""
    from rebench.sandbox import Isolation
    from rebench.sandbox import resolve_isolation as resolve

    isolation = resolve(choice)
    if isolation is Isolation.LOCAL:
        console.print(
            "[bold red]WARNING: --isolation local runs untrusted code without a sandbox. "
            "Use it only for code you trust.[/]"
        )
    if isolation is not None:
        return isolation
    raise RebenchError(
        "bubblewrap (bwrap) is not available, so untrusted code cannot be sandboxed. Install "
        "it (Debian/Ubuntu: apt-get install bubblewrap) or pass --isolation local to run "
        "without isolation."
    )


def isolation_option(f: F) -> F:
    return click.option(
        "--isolation", type=click.Choice(["auto", "bwrap", "local"]), default="auto",
        show_default=True, help=ISOLATION_HELP,
    )(f)


def profile_option(f: F) -> F:
    return click.option("--profile", "-p", default="cpu", show_default=True,
                        help="environment profile (cpu or gpu)")(f)


def fmt_number(x: float | None, digits: int = 3) -> str:
    """A number for a table cell; "-" for missing or non-finite values."""
    return "-" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"
