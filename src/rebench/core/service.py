"""What a run-scoped trusted service implements (what an environment declares to start one,
`ServiceSpec` and its `ServiceContext`, is part of the environment's spec: core/spec.py).

A service runs in the harness (trusted) for a run's lifetime; the agent reaches it only over
a unix socket mounted into its sandbox (services/host.py) or through its session. Examples:
a model gateway, a metered judge, an experiment runner that enforces a compute cap.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

Reply = dict[str, Any]


class Service(Protocol):
    """One running service. `handle` answers one request (JSON data both ways); a request
    the service refuses is answered with {"ok": False, "error": ...}, never an exception
    (an exception is a harness fault). `close` stops background work."""

    def handle(self, request: Mapping[str, Any]) -> Reply: ...

    def close(self) -> None: ...
