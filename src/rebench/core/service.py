"""Run-scoped trusted services: what an environment declares, what a service implements.

A service runs in the harness (trusted) for a run's lifetime; the agent reaches it only over
a unix socket mounted into its sandbox (services/host.py) or through its session. Examples:
a model gateway, a metered judge, an experiment runner that enforces a compute cap.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rebench.core.spec import EnvironmentSpec, Profile

Reply = dict[str, Any]


class Service(Protocol):
    """One running service. `handle` answers one request (JSON data both ways); a request
    the service refuses is answered with {"ok": False, "error": ...}, never an exception
    (an exception is a harness fault). `close` stops background work."""

    def handle(self, request: Mapping[str, Any]) -> Reply: ...

    def close(self) -> None: ...


def _no_pause() -> AbstractContextManager[None]:
    return nullcontext()


@dataclass(frozen=True)
class ServiceContext:
    """What a service gets when it starts: the run's environment and profile, the prepared
    assets (protected ones included: the service is trusted), a private scratch folder,
    `emit(type, fields)` to write its own events, and `clock_paused()`, a context manager
    under which the agent's working clock stands still (upstream retries, rate limits)."""

    spec: EnvironmentSpec
    profile: Profile
    assets_dir: Path
    scratch_dir: Path
    emit: Callable[[str, Mapping[str, Any]], None] = lambda kind, fields: None
    clock_paused: Callable[[], AbstractContextManager[None]] = _no_pause


@dataclass(frozen=True)
class ServiceSpec:
    """A service an environment declares. `name` is how the agent calls it
    (`rebench-service NAME '{json}'`); `start` builds it; `max_calls` caps the calls of a
    run (None: no cap); requests are at most `max_request_bytes` of JSON."""

    name: str
    description: str
    start: Callable[[ServiceContext], Service]
    max_calls: int | None = None
    max_request_bytes: int = 1 << 20

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"service name {self.name!r} must be an identifier")
