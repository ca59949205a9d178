"""The model gateway: an OpenAI-compatible chat-completions endpoint that the trusted side
serves to the solution, on a unix socket (scoring: the sandbox has no network) or on
loopback TCP (the local evaluate tool).

It enforces the rules of the environment whatever the backend: a token budget (prompt plus
completion tokens), a cap on concurrent requests (HTTP 429 beyond it), a cap on `n`, and the
model name. The backend is the simulator or an upstream OpenAI-compatible server, whose API
key stays in the trusted process.
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

from .simulator import MAX_N, Simulator

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


def upstream_from_env(environ: dict[str, str] | None = None) -> Upstream | None:
    """The real endpoint configured by REBENCH_RUST_BASE_URL (+ _MODEL, _API_KEY), if any."""
    env = dict(os.environ if environ is None else environ)
    base = env.get("REBENCH_RUST_BASE_URL", "").strip()
    if not base:
        return None
    key = env.get("REBENCH_RUST_API_KEY") or env.get("OPENAI_API_KEY") or "none"
    return Upstream(base, env.get("REBENCH_RUST_MODEL", "gpt-3.5-turbo"), key)


def simulator_backend(simulator: Simulator, latency_scale: float) -> Backend:
    """The simulator with latency: 0.15 s plus 0.4 ms per completion token, scaled."""

    def call(body: dict[str, Any]) -> dict[str, Any]:
        result = simulator.complete(body)
        tokens = result["usage"]["completion_tokens"] / max(1, len(result["choices"]))
        time.sleep(latency_scale * (0.15 + 0.0004 * tokens))
        return result

    return call


@dataclass
class Meter:
    """Token and request accounting shared by the handler threads."""

    token_budget: int
    max_concurrency: int
    tokens_used: int = 0
    requests: int = 0
    rejected: int = 0
    in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def admit(self) -> str | None:
        with self.lock:
            if self.tokens_used >= self.token_budget:
                self.rejected += 1
                return "budget"
            if self.in_flight >= self.max_concurrency:
                self.rejected += 1
                return "busy"
            self.in_flight += 1
            self.requests += 1
            return None

    def release(self, tokens: int) -> None:
        with self.lock:
            self.in_flight -= 1
            self.tokens_used += tokens

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return {"tokens_used": self.tokens_used, "token_budget": self.token_budget,
                    "requests": self.requests, "rejected": self.rejected}


def _validate(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    if not isinstance(body.get("messages"), list) or not body["messages"]:
        return "messages must be a non-empty list"
    n = body.get("n", 1)
    if not isinstance(n, int) or not 1 <= n <= MAX_N:
        return f"n must be an integer from 1 to {MAX_N}"
    t = body.get("temperature", 1.0)
    if t is not None and (not isinstance(t, int | float) or not 0 <= t <= 2):
        return "temperature must be between 0 and 2"
    if body.get("stream"):
        return "streaming is not supported"
    return None


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

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._error(404, "only /v1/chat/completions is served", "not_found")
                return
            if length > MAX_BODY_BYTES:
                self._error(413, "request too large", "invalid_request_error")
                return
            try:
                body = json.loads(self.rfile.read(length) or b"null")
            except (json.JSONDecodeError, UnicodeDecodeError):
                self._error(400, "invalid JSON", "invalid_request_error")
                return
            problem = _validate(body)
            if problem:
                self._error(400, problem, "invalid_request_error")
                return
            verdict = meter.admit()
            if verdict == "budget":
                self._error(429, "token budget exhausted", "insufficient_quota",
                            {"x-should-retry": "false"})
                return
            if verdict == "busy":
                self._error(429, f"rate limit: at most {meter.max_concurrency} concurrent "
                            "requests", "rate_limit_exceeded", {"retry-after-ms": "200"})
                return
            tokens = 0
            try:
                result = backend(body)
                tokens = int(result.get("usage", {}).get("total_tokens", 0))
                self._send(200, result)
            except BackendError as exc:
                self._error(exc.status, str(exc), "upstream_error")
            finally:
                meter.release(tokens)

    return Handler


class _UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def get_request(self) -> tuple[Any, Any]:
        request, _ = super().get_request()
        return request, ("unix", 0)  # BaseHTTPRequestHandler expects a (host, port) address


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
            tcp = ThreadingHTTPServer(("127.0.0.1", 0), handler)
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
