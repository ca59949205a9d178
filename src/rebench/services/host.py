"""Serving an environment's services for one run: one unix socket per service in a private
folder that agents' sandboxes get read-only at SERVICES_MOUNT, one JSON request and one JSON
reply a connection. Every call is metered (a per-run cap on calls) and logged as a
`service_call` event. Requests are untrusted: size-capped, parsed defensively, and a service
exception is reported as a harness error, never passed to the agent as a traceback.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socketserver
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rebench.core.service import Reply, Service
from rebench.core.spec import ServiceContext, ServiceSpec
from rebench.services.client import SERVICES_MOUNT

__all__ = ["SERVICES_MOUNT", "ServiceHost"]

_READ_TIMEOUT_S = 30.0

Emit = Callable[[str, Mapping[str, Any]], None]


class _Served:
    """One service, its spec and its meter."""

    def __init__(self, spec: ServiceSpec, service: Service) -> None:
        self.spec = spec
        self.service = service
        self.calls = 0
        self.lock = threading.Lock()

    def admit(self) -> int | None:
        """The call's number, or None when the run's calls are used up."""
        with self.lock:
            if self.spec.max_calls is not None and self.calls >= self.spec.max_calls:
                return None
            self.calls += 1
            return self.calls


class ServiceHost:
    """The services of one run; `start` them, `call` them from the harness side, hand
    `socket_dir` to sandboxes, `close` at the end of the run."""

    def __init__(self, specs: tuple[ServiceSpec, ...],
                 make_context: Callable[[Path], ServiceContext], emit: Emit) -> None:
        self._specs = specs
        self._make_context = make_context
        self._emit = emit
        self._served: dict[str, _Served] = {}
        self._servers: list[socketserver.UnixStreamServer] = []
        self.socket_dir: Path | None = None
        self._scratch: list[Path] = []  # removed on close (they held the services' files)

    def start(self) -> None:
        """Start every service and its socket."""
        if not self._specs:
            return
        self.socket_dir = Path(tempfile.mkdtemp(prefix="rebench-services-"))
        self.socket_dir.chmod(0o755)
        for spec in self._specs:
            scratch = Path(tempfile.mkdtemp(prefix=f"rebench-service-{spec.name}-"))
            self._scratch.append(scratch)
            served = _Served(spec, spec.start(self._make_context(scratch)))
            self._served[spec.name] = served
            self._serve(served, self.socket_dir / f"{spec.name}.sock")

    def _serve(self, served: _Served, path: Path) -> None:
        host = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                self.connection.settimeout(_READ_TIMEOUT_S)
                line = self.rfile.readline(served.spec.max_request_bytes + 1)
                reply = host._answer(served, line)
                with contextlib.suppress(OSError):
                    self.wfile.write(json.dumps(reply, default=str).encode() + b"\n")

        server = _ThreadingUnixServer(str(path), Handler)
        path.chmod(0o666)  # sandboxed processes may run as another uid mapping
        threading.Thread(target=server.serve_forever, daemon=True,
                         name=f"service-{served.spec.name}").start()
        self._servers.append(server)

    def _answer(self, served: _Served, line: bytes) -> Reply:
        if len(line) > served.spec.max_request_bytes or not line.endswith(b"\n"):
            return {"ok": False, "error": f"a request is one JSON line of at most "
                                          f"{served.spec.max_request_bytes} bytes"}
        try:
            request = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return {"ok": False, "error": "the request is not JSON"}
        if not isinstance(request, dict):
            return {"ok": False, "error": "the request must be a JSON object"}
        return self._call(served, request, len(line))

    def call(self, name: str, request: Mapping[str, Any]) -> Reply:
        """A call from the harness side (e.g. a replayed agent); same meter and log."""
        served = self._served.get(name)
        if served is None:
            known = ", ".join(sorted(self._served)) or "none"
            return {"ok": False, "error": f"no service {name!r} (services: {known})"}
        size = len(json.dumps(request, default=str))
        if size > served.spec.max_request_bytes:
            return {"ok": False, "error": "the request is too large"}
        return self._call(served, dict(request), size)

    def _call(self, served: _Served, request: dict[str, Any], size: int) -> Reply:
        number = served.admit()
        name = served.spec.name
        if number is None:
            reply: Reply = {"ok": False, "error": f"the run's {served.spec.max_calls} calls "
                                                  f"of {name} are used up"}
            self._emit("service_call", {"service": name, "ok": False, "refused": True,
                                        "request_bytes": size})
            return reply
        start = time.monotonic()
        try:
            reply = served.service.handle(request)
            if not isinstance(reply, dict):
                raise TypeError(f"{name} answered {type(reply).__name__}, not a dict")
        except Exception as exc:  # the service's bug is the harness's fault
            self._emit("harness_error", {"during": f"service {name}",
                                         "error": f"{type(exc).__name__}: {exc}"})
            reply = {"ok": False, "error": f"the {name} service failed (a harness error, "
                                           "not your fault; the call is not counted)"}
            with served.lock:
                served.calls -= 1
        self._emit("service_call", {
            "service": name, "call": number, "ok": bool(reply.get("ok", False)),
            "seconds": round(time.monotonic() - start, 3), "request_bytes": size,
            "request": _summary(request), "reply": _summary(reply)})
        return reply

    def usage(self) -> dict[str, int]:
        """Calls made per service so far."""
        return {name: served.calls for name, served in self._served.items()}

    def close(self) -> None:
        """Stop the sockets and the services."""
        for server in self._servers:
            server.shutdown()
            server.server_close()
        self._servers = []
        for served in self._served.values():
            with contextlib.suppress(Exception):
                served.service.close()
        if self.socket_dir is not None:
            shutil.rmtree(self.socket_dir, ignore_errors=True)
        for scratch in self._scratch:
            shutil.rmtree(scratch, ignore_errors=True)
        self._scratch = []


def _summary(data: Mapping[str, Any], limit: int = 2000) -> str:
    text = json.dumps(data, default=str, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + f"... [{len(text)} chars]"


class _ThreadingUnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
