"""The judge service: the only access the agent has to the judge, metered per run."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from rebench.core.service import ServiceContext
from rebench.core.spec import EnvironmentSpec
from rebench.environments.nanogpt_chat_rl.judge import OfflineJudge
from rebench.environments.nanogpt_chat_rl.prepare import ChatParams
from rebench.environments.nanogpt_chat_rl.service import JudgeService


@pytest.fixture
def service(judge: OfflineJudge, chat_spec: EnvironmentSpec, tmp_path: Any
            ) -> tuple[JudgeService, list[tuple[str, dict[str, Any]]]]:
    events: list[tuple[str, dict[str, Any]]] = []
    profile = chat_spec.profile("cpu")
    params = dataclasses.replace(profile.params_as(ChatParams), max_comparisons=5,
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
    assert events == [("judge", {"comparisons": 3, "characters": 3 * 19 + 12,
                                 "comparisons_used": 3})]
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
