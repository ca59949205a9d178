"""The model gateway: OpenAI-compatible, budget and rate limits enforced, and the proxy to a
real endpoint (tested against a loopback server of our own that is not the simulator)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import openai
import pytest

from rebench.environments.rust_codecontests_inference.gateway import (
    Gateway,
    Meter,
    simulator_backend,
)
from rebench.environments.rust_codecontests_inference.problems import split_problems
from rebench.environments.rust_codecontests_inference.scoring import configured_upstream
from rebench.environments.rust_codecontests_inference.simulator import (
    KnownProblem,
    Simulator,
    count_tokens,
)

VALIDATION, _ = split_problems(b"tests: validation key")
KNOWN = [KnownProblem(p.id, p.difficulty, p.description, p.solution) for p in VALIDATION[:5]]


def _sim_gateway(budget: int = 10**6, concurrency: int = 4, **kw: Any) -> Gateway:
    backend = simulator_backend(Simulator(KNOWN, 1), 0.0)
    return Gateway(backend, Meter(budget, concurrency), "sim", **kw)


async def _ask(url: str, n: int = 1, retries: int = 0) -> Any:
    client = openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=retries)
    prompt = f"Solve in Rust:\n{KNOWN[0].description}"
    return await client.chat.completions.create(
        model="anything", n=n, messages=[{"role": "user", "content": prompt}])


def test_openai_client_talks_to_the_simulator_over_tcp() -> None:
    with _sim_gateway() as gw:
        result = asyncio.run(_ask(gw.url, n=3))
    assert len(result.choices) == 3
    assert "```" in (result.choices[0].message.content or "")
    assert result.usage is not None and result.usage.total_tokens > 0
    assert gw.meter.snapshot()["tokens_used"] == result.usage.total_tokens


def test_token_budget_is_enforced() -> None:
    prompt_tokens = count_tokens(f"Solve in Rust:\n{KNOWN[0].description}")
    with _sim_gateway(budget=prompt_tokens + 40) as gw:
        first = asyncio.run(_ask(gw.url))  # admitted, its completion cut to what is left
        assert first.choices[0].finish_reason == "length"
        with pytest.raises(openai.RateLimitError) as err:
            asyncio.run(_ask(gw.url, retries=3))
    assert "budget" in str(err.value)
    usage = gw.meter.snapshot()
    assert usage["rejected"] == 1  # x-should-retry: false stops client retries
    assert usage["tokens_used"] == usage["token_budget"]


def test_concurrency_limit_answers_429() -> None:
    meter = Meter(10**6, 1)
    first = meter.admit(10, 1, 100)
    assert not isinstance(first, str)
    assert meter.admit(10, 1, 100) == "busy"
    meter.settle(first, 10)
    assert not isinstance(meter.admit(10, 1, 100), str)


@pytest.mark.parametrize("body,status", [
    ({"messages": []}, 400),
    ({"messages": [{"role": "user", "content": "x"}], "n": 9}, 400),
    ({"messages": [{"role": "user", "content": "x"}], "temperature": 3}, 400),
    ({"messages": [{"role": "user", "content": "x"}], "stream": True}, 400),
])
def test_bad_requests_are_rejected(body: dict[str, Any], status: int) -> None:
    import urllib.error
    import urllib.request

    with _sim_gateway() as gw:
        req = urllib.request.Request(gw.url + "/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=10)
    assert err.value.code == status


def test_unix_socket_gateway(tmp_path: Path) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "src" / "rebench" /
                           "environments" / "rust_codecontests_inference"))
    import child_runner

    with _sim_gateway(socket_path=tmp_path / "m.sock") as gw:
        client = child_runner._client(gw.url, str(tmp_path / "m.sock"))

        async def ask() -> Any:
            return await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi, in Rust"}])

        result = asyncio.run(ask())
    assert result.choices[0].message.content
    assert not (tmp_path / "m.sock").exists()


class _FakeOpenAI(BaseHTTPRequestHandler):
    """A minimal OpenAI-compatible server that is not the simulator: it answers every prompt
    with the correct program of the problem whose statement appears in it."""

    solutions: ClassVar[dict[str, str]] = {}
    seen: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, *args: Any) -> None:
        del args

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append({"auth": self.headers.get("Authorization"), "body": body,
                                "path": self.path})
        text = body["messages"][-1]["content"]
        code = next((c for key, c in self.solutions.items() if key in text), "fn main() {}")
        content = f"Sure.\n```rust\n{code}\n```\n"
        payload = json.dumps({
            "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def fake_openai() -> Iterator[tuple[str, type[_FakeOpenAI]]]:
    _FakeOpenAI.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", _FakeOpenAI
    server.shutdown()
    server.server_close()


def test_upstream_configuration_from_environment() -> None:
    assert configured_upstream({}) is None
    assert configured_upstream({"REBENCH_RUST_BASE_URL": "  "}) is None
    up = configured_upstream({"REBENCH_RUST_BASE_URL": "http://h/v1", "OPENAI_API_KEY": "k"})
    assert up is not None and up.model == "gpt-3.5-turbo" and up.api_key == "k"
    up = configured_upstream({"REBENCH_RUST_BASE_URL": "http://h/v1", "OPENAI_API_KEY": "k",
                              "REBENCH_RUST_API_KEY": "r", "REBENCH_RUST_MODEL": "m"})
    assert up is not None and (up.base_url, up.model, up.api_key) == ("http://h/v1", "m", "r")


def test_gateway_proxies_to_a_real_endpoint_with_the_key_and_model(
        fake_openai: tuple[str, type[_FakeOpenAI]]) -> None:
    url, handler = fake_openai
    upstream = configured_upstream({"REBENCH_RUST_BASE_URL": url, "REBENCH_RUST_MODEL": "m-1",
                                    "REBENCH_RUST_API_KEY": "secret"})
    assert upstream is not None
    with Gateway(upstream, Meter(1000, 4), "m-1") as gw:
        result = asyncio.run(_ask(gw.url))
    assert result.choices[0].message.content
    assert handler.seen[0]["auth"] == "Bearer secret"
    assert handler.seen[0]["body"]["model"] == "m-1"  # the solution cannot pick another model
    assert gw.meter.snapshot()["tokens_used"] == 30
