"""The experiments service accounts atomically and trains under limits (issue 26, class 5):
a burst of concurrent calls never passes the run's FLOP allowance nor trains more than one
experiment at a time; a failed trusted run gives its reservation back; the real trainer
runs in a child process under the profile's limits, never in the harness process."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rebench.core.discovery import load_spec
from rebench.core.spec import ServiceContext
from rebench.environments.small_scaling_law import service as service_module
from rebench.environments.small_scaling_law.service import (
    MAX_RUNNING,
    ExperimentFault,
    Experiments,
    child_trainer,
)
from rebench.environments.small_scaling_law.trainer import Recipe
from rebench.sandbox.limits import Limits

RECIPE = Recipe(vocab_size=64, n_layer=4, block_size=16, batch_size=2, head_size=8,
                min_n_embd=16, max_n_embd=64, lr=2e-3, seed=0, threads=1, target_flops=1e9,
                eval_batch_size=8, val_windows=8, heldout_windows=8)
CAP = RECIPE.flops(16, 10)  # one 10-step experiment at width 16 is exactly the cap


def _ctx(tmp_path: Path) -> ServiceContext:
    spec = load_spec("small_scaling_law")
    return ServiceContext(spec, spec.profile("cpu"), tmp_path, tmp_path)


class SlowTrainer:
    """A stand-in trainer that records how many runs overlap."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0
        self.most = 0
        self.calls = 0

    def __call__(self, n_embd: int, max_iters: int, lr: float | None) -> dict[str, Any]:
        with self.lock:
            self.active += 1
            self.calls += 1
            self.most = max(self.most, self.active)
        time.sleep(0.02)
        with self.lock:
            self.active -= 1
        return {"curve": [[max_iters, 5.0]], "final_loss": 5.0}


def test_a_burst_of_concurrent_calls_never_passes_the_allowance(tmp_path: Path) -> None:
    trainer = SlowTrainer()
    allowed = 6
    service = Experiments(RECIPE, CAP, allowed * CAP, _ctx(tmp_path), trainer)
    replies: list[dict[str, Any]] = []
    lock = threading.Lock()
    start = threading.Barrier(24)

    def call() -> None:
        start.wait()
        reply = service.handle({"n_embd": 16, "max_iters": 10})
        with lock:
            replies.append(reply)

    threads = [threading.Thread(target=call) for _ in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ok = [r for r in replies if r["ok"]]
    assert len(ok) == allowed == trainer.calls  # the rest refused before any work
    assert service.flops_used == pytest.approx(allowed * CAP) and service.runs == allowed
    assert max(r["total_flops_used"] for r in replies) <= allowed * CAP
    assert trainer.most == service.most_running == MAX_RUNNING == 1
    refused = [r for r in replies if not r["ok"]]
    assert all("allowance" in r["error"] for r in refused)


def test_over_the_per_experiment_cap_is_refused_before_any_work(tmp_path: Path) -> None:
    trainer = SlowTrainer()
    service = Experiments(RECIPE, CAP, 10 * CAP, _ctx(tmp_path), trainer)
    reply = service.handle({"n_embd": 16, "max_iters": 11})
    assert not reply["ok"] and "per-experiment cap" in reply["error"]
    assert trainer.calls == 0 and service.flops_used == 0


def test_a_failed_trusted_run_gives_its_reservation_back(tmp_path: Path) -> None:
    def broken(n_embd: int, max_iters: int, lr: float | None) -> dict[str, Any]:
        raise ExperimentFault("out of memory")

    service = Experiments(RECIPE, CAP, CAP, _ctx(tmp_path), broken)
    with pytest.raises(ExperimentFault):
        service.handle({"n_embd": 16, "max_iters": 10})
    assert service.flops_used == 0 and service.runs == 0 and service.running == 0


def _tiny_assets(root: Path) -> None:
    protected = root / "protected"
    protected.mkdir(parents=True)
    rng = np.random.default_rng(0)
    rng.integers(0, RECIPE.vocab_size, 20_000).astype(np.uint16).tofile(protected / "train.bin")
    np.save(protected / "val_rows.npy",
            rng.integers(0, RECIPE.vocab_size, (8, RECIPE.block_size + 1)).astype(np.uint16))


def test_the_real_trainer_runs_in_a_limited_child_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The child trains and answers; the harness process never imports a model's
    training; too little memory or time is a trusted failure (ExperimentFault)."""
    _tiny_assets(tmp_path)
    seen: list[list[str]] = []
    real_run = service_module.subprocess.run

    def spy(argv: list[str], **kwargs: Any) -> Any:
        seen.append(argv)
        return real_run(argv, **kwargs)

    monkeypatch.setattr(service_module.subprocess, "run", spy)
    train = child_trainer(RECIPE, tmp_path, Limits(memory_bytes=4 << 30, pids=256), 600.0)
    result = train(16, 3, None)
    assert result["curve"][-1][0] == 3 and result["final_loss"] > 0
    assert seen and seen[0][-2:] == ["-m", service_module.CHILD_MODULE]
    assert "-I" in seen[0][:3]  # behind the limits launcher
    starved = child_trainer(RECIPE, tmp_path, Limits(memory_bytes=64 << 20, pids=256), 600.0)
    with pytest.raises(ExperimentFault):
        starved(16, 3, None)
    slow = child_trainer(RECIPE, tmp_path, Limits(memory_bytes=4 << 30, pids=256), 0.5)
    with pytest.raises(ExperimentFault, match="limit"):
        slow(16, 3, None)
