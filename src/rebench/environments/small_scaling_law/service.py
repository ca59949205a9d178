"""The `experiments` service: trusted training runs of at most 1/50 of the target budget.

The agent sends {"n_embd": int, "max_iters": int, "lr": float (optional)}; the service
checks the shape and the FLOP caps, trains with the trusted trainer on the public train
split and answers with the loss curve, the validation loss (on the windows of this
prepare's drawn mixture) and the FLOPs used so far. Nothing from the agent's workspace is
read: the request is data only.

Accounting is atomic (DESIGN.md section 4, "services account atomically"): a call's FLOPs
are reserved under a lock before any work (and given back only if the trusted side fails),
so a burst of concurrent calls can never pass the run's FLOP allowance; experiments run
one at a time (MAX_RUNNING), each in a child process under the profile's memory, pids and
file-size limits and a wall-clock limit, never inside the harness process.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rebench.core.service import Reply
from rebench.core.spec import ServiceContext
from rebench.environments.small_scaling_law.assets import load_protected
from rebench.environments.small_scaling_law.trainer import Recipe, ScalingParams
from rebench.sandbox.limits import Limits, ProcessGroup, launcher_argv, rlimits_for
from rebench.scoring.kit import protected_dir

_KEYS = {"n_embd", "max_iters", "lr"}
CHILD_MODULE = "rebench.environments.small_scaling_law.experiment_child"
# Experiments that train at once (the others wait for the slot, in turn).
MAX_RUNNING = 1

# (n_embd, max_iters, lr) -> {"curve": [[step, loss], ...], "final_loss": float}
TrainFn = Callable[[int, int, float | None], dict[str, Any]]


class ExperimentFault(RuntimeError):
    """The trusted training failed (timed out, ran out of memory, crashed): a harness
    error, not the agent's; the call's reservation is given back."""


def _int_field(request: Mapping[str, Any], key: str) -> int | None:
    value = request.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


class Experiments:
    """Meters the FLOPs of every accepted run (reserved before it trains) and trains one
    experiment at a time through `train` (by default a limited child process)."""

    def __init__(self, recipe: Recipe, cap: float, total_cap: float, ctx: ServiceContext,
                 train: TrainFn) -> None:
        self.recipe = recipe
        self.cap = cap
        self.total_cap = total_cap
        self.ctx = ctx
        self._train = train
        self._lock = threading.Lock()  # guards the counters below
        self._slot = threading.BoundedSemaphore(MAX_RUNNING)
        self.flops_used = 0.0  # reserved or spent: never above total_cap
        self.runs = 0
        self.running = 0
        self.most_running = 0  # the most experiments seen training at once

    def refuse(self, error: str) -> Reply:
        return {"ok": False, "error": error, "flops_cap": self.cap,
                "total_flops_cap": self.total_cap, "total_flops_used": self.flops_used}

    def _check(self, request: Mapping[str, Any]) -> tuple[int, int, float | None] | str:
        """The request's (n_embd, max_iters, lr), or why it is refused."""
        unknown = set(request) - _KEYS
        if unknown:
            return f"unknown keys {sorted(unknown)}; send n_embd, max_iters, lr?"
        n_embd, max_iters = _int_field(request, "n_embd"), _int_field(request, "max_iters")
        if n_embd is None or max_iters is None:
            return "n_embd and max_iters must be integers"
        shape = self.recipe.shape_error(n_embd, max_iters)
        if shape:
            return shape
        lr = request.get("lr")
        if lr is not None and (isinstance(lr, bool) or not isinstance(lr, (int, float))
                               or not math.isfinite(lr) or not 0 < lr <= 1):
            return "lr must be a number in (0, 1]"
        return n_embd, max_iters, None if lr is None else float(lr)

    def _reserve(self, flops: float) -> str | None:
        """Count `flops` against the run's allowance before any work, or say why not."""
        with self._lock:
            if self.flops_used + flops > self.total_cap:
                return (f"{flops:.4g} FLOPs would pass the run's experiment allowance of "
                        f"{self.total_cap:.4g} ({self.flops_used:.4g} used)")
            self.flops_used += flops
            self.runs += 1
            return None

    def _release(self, flops: float) -> None:
        with self._lock:
            self.flops_used -= flops
            self.runs -= 1

    def _run(self, n_embd: int, max_iters: int, lr: float | None) -> dict[str, Any]:
        with self._slot:  # one at a time: the others wait here, already reserved
            with self._lock:
                self.running += 1
                self.most_running = max(self.most_running, self.running)
            try:
                return self._train(n_embd, max_iters, lr)
            finally:
                with self._lock:
                    self.running -= 1

    def handle(self, request: Mapping[str, Any]) -> Reply:
        checked = self._check(request)
        if isinstance(checked, str):
            return self.refuse(checked)
        n_embd, max_iters, lr = checked
        flops = self.recipe.flops(n_embd, max_iters)
        if flops > self.cap:
            return self.refuse(f"{flops:.4g} FLOPs is over the per-experiment cap of "
                               f"{self.cap:.4g}")
        why = self._reserve(flops)
        if why:
            return self.refuse(why)
        start = time.monotonic()
        try:
            result = self._run(n_embd, max_iters, lr)
        except BaseException:
            self._release(flops)  # the trusted side failed: the agent is not charged
            raise
        with self._lock:
            used, runs = self.flops_used, self.runs
        self.ctx.emit("experiment", {"n_embd": n_embd, "max_iters": max_iters, "lr": lr,
                                     "flops": flops, "total_flops_used": used,
                                     "val_loss": result["final_loss"]})
        return {"ok": True, "n_embd": n_embd, "max_iters": max_iters,
                "lr": self.recipe.lr if lr is None else lr,
                "flops": flops, "flops_cap": self.cap, "total_flops_cap": self.total_cap,
                "total_flops_used": used, "experiments_run": runs,
                "train_loss_curve": result["curve"], "val_loss": result["final_loss"],
                "seconds": round(time.monotonic() - start, 2)}

    def close(self) -> None:
        pass


def child_trainer(recipe: Recipe, assets_dir: Path, limits: Limits,
                  timeout_s: float) -> TrainFn:
    """Train in a child process (experiment_child) that joins a process group of its own
    under `limits` and is killed after `timeout_s`."""
    protected = protected_dir(assets_dir)

    def train(n_embd: int, max_iters: int, lr: float | None) -> dict[str, Any]:
        request = {"recipe": recipe.__dict__, "train_path": str(protected / "train.bin"),
                   "rows_path": str(protected / "val_rows.npy"), "n_embd": n_embd,
                   "max_iters": max_iters, "lr": lr}
        group = ProcessGroup.create(limits)
        argv = launcher_argv(group, rlimits_for(limits, group, recipe.device == "cuda"),
                             [sys.executable, "-m", CHILD_MODULE])
        try:
            out = subprocess.run(argv, input=json.dumps(request), capture_output=True,
                                 text=True, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired as exc:
            raise ExperimentFault(f"an experiment passed its {timeout_s:.0f} s limit") from exc
        finally:
            oom = group.oom_killed()
            group.remove()
        if out.returncode != 0 or oom:
            raise ExperimentFault(f"the experiment's trainer failed (exit {out.returncode}"
                                  f"{', out of memory' if oom else ''}): {out.stderr[-500:]}")
        reply: dict[str, Any] = json.loads(out.stdout)
        return reply

    return train


def start_experiments(ctx: ServiceContext) -> Experiments:
    """Check the protected data once for the run; the caps are fractions of the target."""
    data = load_protected(ctx.assets_dir)
    params: ScalingParams = ctx.profile.typed
    recipe = Recipe.of(params, data.vocab_size, data.target_flops)
    cap = recipe.target_flops * params.experiment_fraction
    limits = Limits(memory_bytes=int(ctx.profile.memory_gb * 2**30),
                    pids=ctx.profile.pids_max, file_size_bytes=1 << 20)
    train = child_trainer(recipe, ctx.assets_dir, limits, params.experiment_timeout_s)
    total = cap * (ctx.spec.services[0].max_calls or 1)
    return Experiments(recipe, cap, total, ctx, train)
