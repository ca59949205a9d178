"""The judge service: the only access the agent has to the judge, metered per run."""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

import pytest

from rebench.core.spec import EnvironmentSpec, ServiceContext
from rebench.environments.nanogpt_chat_rl.judge import OfflineJudge
from rebench.environments.nanogpt_chat_rl.service import JudgeService


@pytest.fixture
def service(judge: OfflineJudge, chat_spec: EnvironmentSpec, tmp_path: Any
            ) -> tuple[JudgeService, list[tuple[str, dict[str, Any]]]]:
    events: list[tuple[str, dict[str, Any]]] = []
    profile = chat_spec.profile("cpu")
    params = dataclasses.replace(profile.typed, max_comparisons=5,
                                 max_comparisons_per_call=3)
    ctx = ServiceContext(chat_spec, profile, tmp_path, tmp_path,
                         emit=lambda kind, fields: events.append((kind, dict(fields))))
    return JudgeService(judge, params, ctx), events


def item(a: str, b: str) -> dict[str, str]:
    return {"prompt": "What is 12 plus 30?", "a": a, "b": b}


def test_verdicts_and_metering(service: tuple[JudgeService, list[Any]]) -> None:
    svc, events = service
    reply = svc.handle({"comparisons": [item("42", "41"), item("41", "42"), item("42", "42")]})
    assert reply["ok"] and reply["verdicts"] == [1.0, 0.0, 0.5]
    assert reply["comparisons_used"] == 3 and reply["comparisons_left"] == 2
    assert len(events) == 1 and events[0][0] == "judge"
    assert {k: v for k, v in events[0][1].items() if k != "cpu_s"} == {
        "comparisons": 3, "characters": 3 * 19 + 12, "comparisons_used": 3}
    assert events[0][1]["cpu_s"] >= 0
    over = svc.handle({"comparisons": [item("1", "2")] * 3})
    assert not over["ok"] and "would be exceeded" in over["error"]
    assert svc.handle({"comparisons": [item("1", "2")] * 2})["comparisons_left"] == 0
    assert not svc.handle({"comparisons": [item("1", "2")]})["ok"]  # allowance spent


@pytest.mark.parametrize("request_", [
    {}, {"comparisons": []}, {"comparisons": "x"}, {"comparisons": [item("a", "b")], "x": 1},
    {"comparisons": [{"prompt": "p", "a": "a"}]},
    {"comparisons": [{"prompt": "p", "a": 1, "b": "b"}]},
    {"comparisons": [{"prompt": "p" * 500, "a": "a", "b": "b"}]},
    {"comparisons": [item("a" * 5000, "b")]},
    {"comparisons": [item("a", "b")] * 4},  # over the per-call cap
])
def test_malformed_requests_are_refused_and_cost_nothing(
        service: tuple[JudgeService, list[Any]], request_: dict[str, Any]) -> None:
    svc, events = service
    reply = svc.handle(request_)
    assert reply["ok"] is False and reply["error"] and reply["comparisons_used"] == 0
    assert events == []


class SlowJudge:
    """A judge that takes its time (as an endpoint does), counting what it judged and
    how many calls judged at once: the window a check-then-charge meter loses in."""

    def __init__(self) -> None:
        self.judged = 0
        self.active = 0
        self.most_active = 0
        self.lock = threading.Lock()

    def compare(self, prompt: str, first: str, second: str) -> float:
        with self.lock:
            self.judged += 1
            self.active += 1
            self.most_active = max(self.most_active, self.active)
        time.sleep(0.002)
        with self.lock:
            self.active -= 1
        return 0.5


def burst(svc: JudgeService, callers: int, per_call: int) -> list[dict[str, Any]]:
    """`callers` threads released at once, each making one call of `per_call`."""
    gate = threading.Barrier(callers)
    replies: list[dict[str, Any]] = []

    def call() -> None:
        gate.wait()
        reply = svc.handle({"comparisons": [item("42", "41")] * per_call})
        replies.append(reply)

    threads = [threading.Thread(target=call) for _ in range(callers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return replies


@pytest.mark.parametrize(("allowance", "callers", "per_call"), [(50, 40, 3), (100, 64, 7)])
def test_a_burst_of_concurrent_calls_never_exceeds_the_allowance(
        chat_spec: EnvironmentSpec, tmp_path: Any, allowance: int, callers: int,
        per_call: int) -> None:
    """Issue 26 class 5: 1.0.x checked the allowance before judging and charged after, so
    calls that arrived together all passed the check (19.8% over in review). Now every
    call reserves its comparisons under a lock first, and the judging runs one call at a
    time."""
    profile = chat_spec.profile("cpu")
    params = dataclasses.replace(profile.typed, max_comparisons=allowance,
                                 max_comparisons_per_call=per_call)
    judge = SlowJudge()
    svc = JudgeService(judge, params, ServiceContext(chat_spec, profile, tmp_path, tmp_path))
    replies = burst(svc, callers, per_call)
    granted = sum(len(r["verdicts"]) for r in replies if r["ok"])
    assert granted == judge.judged == svc.used <= allowance
    assert granted == allowance - allowance % per_call  # every call that fitted was served
    refused = [r for r in replies if not r["ok"]]
    assert refused and all("would be exceeded" in r["error"] for r in refused)
    assert all(r["comparisons_used"] <= allowance for r in replies)
    assert judge.most_active == 1  # one call's judging at a time


def test_a_burst_through_the_service_host(chat_spec: EnvironmentSpec, tmp_path: Any) -> None:
    """The same burst through the harness's service host (its socket server answers each
    connection in its own thread), with the host's call meter beside ours."""
    from rebench.core.spec import ServiceSpec
    from rebench.services.host import ServiceHost

    profile = chat_spec.profile("cpu")
    params = dataclasses.replace(profile.typed, max_comparisons=30,
                                 max_comparisons_per_call=4)
    judge = SlowJudge()
    events: list[tuple[str, dict[str, Any]]] = []
    spec = ServiceSpec("judge", "test", lambda ctx: JudgeService(judge, params, ctx))
    host = ServiceHost((spec,), lambda scratch: ServiceContext(chat_spec, profile, tmp_path,
                                                               scratch),
                       lambda kind, fields: events.append((kind, dict(fields))))
    host.start()
    try:
        gate = threading.Barrier(24)
        replies: list[dict[str, Any]] = []

        def call() -> None:
            gate.wait()
            replies.append(host.call("judge", {"comparisons": [item("1", "2")] * 4}))

        threads = [threading.Thread(target=call) for _ in range(24)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        host.close()
    granted = sum(len(r["verdicts"]) for r in replies if r["ok"])
    assert granted == judge.judged == 28  # 7 calls of 4 fit in 30
