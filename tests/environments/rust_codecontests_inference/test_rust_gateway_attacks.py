"""Attacks on the model gateway: malformed requests get a clear HTTP 400 (never a crash, a
hang or free tokens), and a burst of concurrent requests cannot overshoot the token budget
(budget is reserved atomically before a request is served)."""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest
from test_rust_gateway import KNOWN

from rebench.environments.rust_codecontests_inference.gateway import (
    Gateway,
    Meter,
    simulator_backend,
)
from rebench.environments.rust_codecontests_inference.simulator import Simulator

MSG = [{"role": "user", "content": "Solve in Rust: " + KNOWN[0].description}]


def _gateway(budget: int = 10**6, concurrency: int = 4, latency: float = 0.0) -> Gateway:
    backend = simulator_backend(Simulator(KNOWN, 1), latency)
    return Gateway(backend, Meter(budget, concurrency), "sim")


def _post(url: str, payload: bytes, timeout: float = 10.0) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(url + "/chat/completions", payload,
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


MALFORMED: dict[str, Any] = {
    "not an object": [MSG],
    "no model": {"messages": MSG},
    "model not a string": {"model": 5, "messages": MSG},
    "messages not a list": {"model": "m", "messages": "hi"},
    "empty messages": {"model": "m", "messages": []},
    "message not an object": {"model": "m", "messages": ["hi"]},
    "content a number": {"model": "m", "messages": [{"role": "user", "content": 5}]},
    "content an object": {"model": "m", "messages": [{"role": "user", "content": {"a": 1}}]},
    "content a list of junk": {"model": "m", "messages": [{"role": "user", "content": [1, 2]}]},
    "content missing": {"model": "m", "messages": [{"role": "user"}]},
    "unknown role": {"model": "m", "messages": [{"role": "root", "content": "x"}]},
    "unknown message key": {"model": "m", "messages": [{"role": "user", "content": "x",
                                                         "tool_calls": []}]},
    "negative max_tokens": {"model": "m", "messages": MSG, "max_tokens": -5},
    "zero max_tokens": {"model": "m", "messages": MSG, "max_tokens": 0},
    "float max_tokens": {"model": "m", "messages": MSG, "max_tokens": 10.5},
    "string max_tokens": {"model": "m", "messages": MSG, "max_tokens": "100"},
    "bool max_tokens": {"model": "m", "messages": MSG, "max_tokens": True},
    "huge max_tokens": {"model": "m", "messages": MSG, "max_tokens": 10**12},
    "negative max_completion_tokens": {"model": "m", "messages": MSG,
                                       "max_completion_tokens": -1},
    "both max_tokens fields": {"model": "m", "messages": MSG, "max_tokens": 10,
                              "max_completion_tokens": 10},
    "huge n": {"model": "m", "messages": MSG, "n": 10**9},
    "zero n": {"model": "m", "messages": MSG, "n": 0},
    "float n": {"model": "m", "messages": MSG, "n": 2.0},
    "bool n": {"model": "m", "messages": MSG, "n": True},
    "temperature too high": {"model": "m", "messages": MSG, "temperature": 3},
    "temperature a string": {"model": "m", "messages": MSG, "temperature": "hot"},
    "top_p out of range": {"model": "m", "messages": MSG, "top_p": 1.5},
    "seed a float": {"model": "m", "messages": MSG, "seed": 1.5},
    "stop a number": {"model": "m", "messages": MSG, "stop": 5},
    "too many stops": {"model": "m", "messages": MSG, "stop": ["a", "b", "c", "d", "e"]},
    "streaming": {"model": "m", "messages": MSG, "stream": True},
    "stream not a bool": {"model": "m", "messages": MSG, "stream": "no"},
    "unknown field": {"model": "m", "messages": MSG, "tools": []},
}


@pytest.fixture(scope="module")
def gateway() -> Any:
    with _gateway() as gw:
        yield gw


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_request_gets_a_clear_400(name: str, gateway: Gateway) -> None:
    before = gateway.meter.snapshot()["tokens_used"]
    status, payload = _post(gateway.url, json.dumps(MALFORMED[name]).encode())
    assert status == 400, (name, payload)
    assert payload["error"]["type"] == "invalid_request_error"
    assert payload["error"]["message"]
    assert gateway.meter.snapshot()["tokens_used"] == before


@pytest.mark.parametrize("raw", [b"NaN", b'{"model": "m", "messages": [], "temperature": NaN}',
                                 b"\xff\xfe", b"{"])
def test_invalid_json_gets_400(raw: bytes, gateway: Gateway) -> None:
    assert _post(gateway.url, raw)[0] == 400


def _raw_http(url: str, head: str, body: bytes = b"") -> bytes:
    host, port = url.split("//")[1].split("/")[0].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(head.encode() + b"\r\n" + body)
        conn.shutdown(socket.SHUT_WR)
        return conn.recv(65536)


@pytest.mark.parametrize("length", ["-1", "abc", "99999999999999999999"])
def test_bad_content_length_is_refused_at_once(length: str, gateway: Gateway) -> None:
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n"
            "Content-Type: application/json\r\n")
    reply = _raw_http(gateway.url, head)
    assert reply.split(b" ")[1] in (b"400", b"411", b"413"), reply[:200]


def test_max_tokens_within_limits_is_served_and_charged(gateway: Gateway) -> None:
    status, payload = _post(gateway.url, json.dumps(
        {"model": "m", "messages": MSG, "max_tokens": 7, "n": 2}).encode())
    assert status == 200
    assert all(len(c["message"]["content"]) <= 28 for c in payload["choices"])
    assert payload["usage"]["completion_tokens"] <= 14


def test_concurrent_burst_cannot_overshoot_the_budget() -> None:
    """32 requests at once, each asking for up to 8 x 2000 tokens, against a budget that
    covers a few of them: the total charged never exceeds the budget."""
    budget = 3000
    with _gateway(budget=budget, concurrency=64, latency=1.0) as gw:
        body = json.dumps({"model": "m", "messages": MSG, "n": 8, "max_tokens": 2000}).encode()
        statuses: list[int] = []
        barrier = threading.Barrier(32)

        def fire() -> None:
            barrier.wait()
            statuses.append(_post(gw.url, body, timeout=60)[0])

        threads = [threading.Thread(target=fire) for _ in range(32)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        usage = gw.meter.snapshot()
    assert 200 in statuses and 429 in statuses
    assert usage["tokens_used"] <= budget, usage


def test_reservations_are_released_after_each_request() -> None:
    meter = Meter(1000, 4)
    first = meter.admit(prompt_tokens=100, n=2, max_tokens=1000)
    assert not isinstance(first, str) and first.max_tokens == 450  # clamped to what is free
    second = meter.admit(prompt_tokens=100, n=1, max_tokens=10)
    assert isinstance(second, str) and second == "busy"  # the rest is reserved: retry later
    meter.settle(first, 300)
    assert meter.snapshot()["tokens_used"] == 300
    third = meter.admit(prompt_tokens=100, n=1, max_tokens=10)
    assert not isinstance(third, str) and third.tokens == 110
    meter.settle(third, 110)
    assert meter.admit(prompt_tokens=600, n=1, max_tokens=10) == "budget"
