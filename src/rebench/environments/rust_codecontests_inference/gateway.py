"""The model gateway: an OpenAI-compatible chat-completions endpoint that the trusted side
serves to the solution, on a unix socket (scoring: the sandbox has no network) or on
loopback TCP (the local evaluate tool).

It enforces the rules of the environment whatever the backend: strictly validated requests
(`chat_request.py`), a token budget (prompt plus completion tokens) reserved atomically before
a request is served, so concurrent requests cannot overshoot it, a cap on concurrent requests
(HTTP 429 beyond it), a cap on `n`, and the model name. The backend is the simulator or an
upstream OpenAI-compatible server, whose API key stays in the trusted process.
"""

from __future__ import annotations

import json
import os
import socketserver
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .chat_request import InvalidRequest, parse_request
from .simulator import Simulator

MAX_BODY_BYTES = 2 * 1024 * 1024
Backend = Callable[[dict[str, Any]], dict[str, Any]]


class BackendError(Exception):
    """An upstream failure to pass on as an HTTP error."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Upstream:
    """A real OpenAI-compatible endpoint (base URL ending in /v1, model, API key)."""

    base_url: str
    model: str
    api_key: str
    timeout_s: float = 120.0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        payload = {**body, "model": self.model, "stream": False}
        request = urllib.request.Request(
            self.base_url.rstrip("/") + "/chat/completions",
            data=json.dumps(payload).encode(),
            headers={"Content-Type": "application/json",
                     "Authorization": f"Bearer {self.api_key}"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                result: dict[str, Any] = json.loads(response.read())
                return result
        except urllib.error.HTTPError as exc:
            raise BackendError(exc.code, f"upstream error {exc.code}") from None
        except (urllib.error.URLError, TimeoutError, OSError, json.JSONDecodeError) as exc:
            raise BackendError(502, f"upstream unreachable: {type(exc).__name__}") from None


def simulator_backend(simulator: Simulator, latency_scale: float) -> Backend:
    """The simulator with latency: 0.15 s plus 0.4 ms per completion token, scaled."""

    def call(body: dict[str, Any]) -> dict[str, Any]:
        result = simulator.complete(body)
        tokens = result["usage"]["completion_tokens"] / max(1, len(result["choices"]))
        time.sleep(latency_scale * (0.15 + 0.0004 * tokens))
        return result

    return call


@dataclass(frozen=True)
class Reservation:
    """Budget held for one request in flight: its prompt plus `n` x `max_tokens`."""

    tokens: int
    max_tokens: int  # completion tokens per choice the backend may write


@dataclass
class Meter:
    """Token and request accounting shared by the handler threads. A request reserves its
    worst case (prompt + n x max_tokens, `max_tokens` clamped to what is free) under the lock
    before it is served, and is charged what it used after, so the requests in flight can
    never together spend more than the budget."""

    token_budget: int
    max_concurrency: int
    tokens_used: int = 0
    reserved: int = 0
    requests: int = 0
    rejected: int = 0
    in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def admit(self, prompt_tokens: int, n: int, max_tokens: int) -> Reservation | str:
        """A reservation, or "budget" (spent: do not retry) or "busy" (retry later)."""
        with self.lock:
            if self.in_flight >= self.max_concurrency:
                self.rejected += 1
                return "busy"
            if self.tokens_used + prompt_tokens + n > self.token_budget:
                self.rejected += 1
                return "budget"
            free = self.token_budget - self.tokens_used - self.reserved
            cap = min(max_tokens, (free - prompt_tokens) // n)
            if cap < 1:  # what is left is held by requests in flight, which may give it back
                self.rejected += 1
                return "busy"
            reservation = Reservation(prompt_tokens + n * cap, cap)
            self.reserved += reservation.tokens
            self.in_flight += 1
            self.requests += 1
            return reservation

    def settle(self, reservation: Reservation, tokens: int) -> None:
        """Release a reservation and charge what the request used."""
        with self.lock:
            self.in_flight -= 1
            self.reserved -= reservation.tokens
            self.tokens_used += tokens

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return {"tokens_used": self.tokens_used, "token_budget": self.token_budget,
                    "requests": self.requests, "rejected": self.rejected}


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _used_tokens(result: dict[str, Any], reservation: Reservation) -> int:
    """What the backend says it used; its worst case when it says nothing usable."""
    usage = result.get("usage")
    total = usage.get("total_tokens") if isinstance(usage, dict) else None
    if isinstance(total, int) and not isinstance(total, bool) and total >= 0:
        return total
    return reservation.tokens


def make_handler(backend: Backend, meter: Meter, label: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            del format, args

        def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
                  ) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("X-Rebench-Model", label)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str, code: str,
                   headers: dict[str, str] | None = None) -> None:
            self._send(status, {"error": {"message": message, "type": code, "code": code}}, headers)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": label, "object": "model"}]})
            else:
                self._error(404, "not found", "not_found")

        def _body_length(self) -> int | None:
            """The declared body length, or None after answering an error."""
            self.close_connection = True  # a refused body is never read: do not reuse
            raw = self.headers.get("Content-Length")
            if raw is None or self.headers.get("Transfer-Encoding"):
                self._error(411, "Content-Length is required", "invalid_request_error")
                return None
            if not raw.strip().isdigit():
                self._error(400, "Content-Length must be a non-negative integer",
                            "invalid_request_error")
                return None
            if int(raw) > MAX_BODY_BYTES:
                self._error(413, "request too large", "invalid_request_error")
                return None
            self.close_connection = False
            return int(raw)

        def do_POST(self) -> None:
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._error(404, "only /v1/chat/completions is served", "not_found")
                return
            length = self._body_length()
            if length is None:
                return
            try:
                raw = self.rfile.read(length)
                request = parse_request(json.loads(raw, parse_constant=_no_constants))
            except (ValueError, UnicodeDecodeError) as exc:  # JSON errors are ValueErrors
                message = str(exc) if isinstance(exc, InvalidRequest) else "invalid JSON"
                self._error(400, message, "invalid_request_error")
                return
            verdict = meter.admit(request.prompt_tokens, request.n, request.max_tokens)
            if verdict == "budget":
                self._error(429, "token budget exhausted", "insufficient_quota",
                            {"x-should-retry": "false"})
                return
            if isinstance(verdict, str):
                self._error(429, f"rate limit: at most {meter.max_concurrency} concurrent "
                            "requests, and the budget left is held by requests in flight",
                            "rate_limit_exceeded", {"retry-after-ms": "200"})
                return
            tokens = 0
            try:
                result = backend(request.with_max_tokens(verdict.max_tokens))
                tokens = _used_tokens(result, verdict)
                self._send(200, result)
            except BackendError as exc:
                self._error(exc.status, str(exc), "upstream_error")
            finally:
                meter.settle(verdict, tokens)

    return Handler


class _UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    request_queue_size = 128  # a burst of connections waits instead of being reset

    def get_request(self) -> tuple[Any, Any]:
        request, _ = super().get_request()
        return request, ("unix", 0)  # BaseHTTPRequestHandler expects a (host, port) address


class _TcpServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


class Gateway:
    """A running gateway; use as a context manager."""

    def __init__(self, backend: Backend, meter: Meter, label: str,
                 socket_path: Path | None = None) -> None:
        handler = make_handler(backend, meter, label)
        self.meter = meter
        self.socket_path = socket_path
        self.server: socketserver.BaseServer
        if socket_path is not None:
            self.server = _UnixServer(str(socket_path), handler)
            os.chmod(socket_path, 0o666)
            self.url = "http://rebench-model/v1"
        else:
            tcp = _TcpServer(("127.0.0.1", 0), handler)
            tcp.daemon_threads = True
            self.server = tcp
            self.url = f"http://127.0.0.1:{tcp.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Gateway:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        if self.socket_path is not None:
            self.socket_path.unlink(missing_ok=True)
