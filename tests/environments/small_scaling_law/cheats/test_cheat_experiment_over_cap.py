"""Cheat: experiments over the per-experiment cap (1/50 of the target), malformed
requests, and more calls than allowed. The trusted service refuses them without training;
the cap lives in the service, not in code the agent can edit."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from rebench.core.spec import EnvironmentSpec, Profile, ServiceContext
from rebench.environments.small_scaling_law.assets import load_protected
from rebench.environments.small_scaling_law.service import Experiments, start_experiments


@pytest.fixture
def service(ssl_spec: EnvironmentSpec, ssl_cpu: Profile, ssl_assets: Path,
            tmp_path: Path) -> Experiments:
    return start_experiments(ServiceContext(ssl_spec, ssl_cpu, ssl_assets, tmp_path))


def test_the_cap_is_a_fiftieth_of_the_target(service: Experiments, ssl_assets: Path) -> None:
    assert service.cap == pytest.approx(load_protected(ssl_assets).target_flops / 50)
    assert next(s for s in service.ctx.spec.services).max_calls == 100


@pytest.mark.parametrize("request_", [
    {"n_embd": 64, "max_iters": 10_000},  # far over the cap
    {"n_embd": 512, "max_iters": 1},  # one step of the widest model is over the cap
    {"n_embd": 16, "max_iters": 10**12},
    {"n_embd": 16.0, "max_iters": 4}, {"n_embd": 16, "max_iters": True},
    {"n_embd": 17, "max_iters": 4}, {"n_embd": 16, "max_iters": 0},
    {"n_embd": 16, "max_iters": -4}, {"n_embd": 16},
    {"n_embd": 16, "max_iters": 4, "lr": math.nan}, {"n_embd": 16, "max_iters": 4, "lr": -1},
    {"n_embd": 16, "max_iters": 4, "lr": "0.1"}, {"n_embd": 16, "max_iters": 4, "cap": 1e30},
    {"n_embd": 16, "max_iters": 4, "train_script": "import os"},
])
def test_refusals_train_nothing(service: Experiments, request_: dict[str, Any]) -> None:
    reply = service.handle(request_)
    assert reply["ok"] is False and reply["error"]
    assert service.runs == 0 and service.flops_used == 0.0


def test_exactly_at_the_cap_runs_and_is_metered(service: Experiments) -> None:
    per_iter = service.recipe.flops(16, 1)
    iters = int(service.cap // per_iter)
    reply = service.handle({"n_embd": 16, "max_iters": iters})
    assert reply["ok"] is True and reply["flops"] <= service.cap
    assert reply["total_flops_used"] == reply["flops"] and reply["experiments_run"] == 1
    assert math.isfinite(reply["val_loss"]) and reply["train_loss_curve"][-1][0] == iters
    refused = service.handle({"n_embd": 16, "max_iters": iters + 1})
    assert refused["ok"] is False and service.runs == 1
