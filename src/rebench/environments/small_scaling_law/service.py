"""The `experiments` service: trusted training runs of at most 1/50 of the target budget.

The agent sends {"n_embd": int, "max_iters": int, "lr": float (optional)}; the service
checks the shape and the FLOP cap, trains with the trusted trainer on the public train
split and answers with the loss curve, the validation loss and the FLOPs used so far.
Nothing from the agent's workspace is read: the request is data only.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from rebench.core.service import Reply, ServiceContext
from rebench.environments.small_scaling_law.assets import ProtectedData, load_protected
from rebench.environments.small_scaling_law.trainer import Recipe, ScalingParams, train_config

_KEYS = {"n_embd", "max_iters", "lr"}


def _int_field(request: Mapping[str, Any], key: str) -> int | None:
    value = request.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


class Experiments:
    """Runs experiments one at a time; meters the FLOPs of every accepted run."""

    def __init__(self, recipe: Recipe, data: ProtectedData, cap: float, ctx: ServiceContext):
        self.recipe = recipe
        self.data = data
        self.cap = cap
        self.ctx = ctx
        self.flops_used = 0.0
        self.runs = 0

    def refuse(self, error: str) -> Reply:
        return {"ok": False, "error": error, "flops_cap": self.cap,
                "total_flops_used": self.flops_used}

    def handle(self, request: Mapping[str, Any]) -> Reply:
        unknown = set(request) - _KEYS
        if unknown:
            return self.refuse(f"unknown keys {sorted(unknown)}; send n_embd, max_iters, lr?")
        n_embd, max_iters = _int_field(request, "n_embd"), _int_field(request, "max_iters")
        if n_embd is None or max_iters is None:
            return self.refuse("n_embd and max_iters must be integers")
        shape = self.recipe.shape_error(n_embd, max_iters)
        if shape:
            return self.refuse(shape)
        lr = request.get("lr")
        if lr is not None and (isinstance(lr, bool) or not isinstance(lr, (int, float))
                               or not math.isfinite(lr) or not 0 < lr <= 1):
            return self.refuse("lr must be a number in (0, 1]")
        flops = self.recipe.flops(n_embd, max_iters)
        if flops > self.cap:
            return self.refuse(f"{flops:.4g} FLOPs is over the per-experiment cap of "
                               f"{self.cap:.4g}")
        start = time.monotonic()
        result = train_config(self.recipe, self.data.train, self.data.val_rows, n_embd,
                              max_iters, None if lr is None else float(lr))
        self.flops_used += flops
        self.runs += 1
        self.ctx.emit("experiment", {"n_embd": n_embd, "max_iters": max_iters, "lr": lr,
                                     "flops": flops, "total_flops_used": self.flops_used,
                                     "val_loss": result.final_loss})
        return {"ok": True, "n_embd": n_embd, "max_iters": max_iters,
                "lr": self.recipe.lr if lr is None else float(lr),
                "flops": flops, "flops_cap": self.cap, "total_flops_used": self.flops_used,
                "experiments_run": self.runs, "train_loss_curve": [list(p) for p in result.curve],
                "val_loss": result.final_loss, "seconds": round(time.monotonic() - start, 2)}

    def close(self) -> None:
        pass


def start_experiments(ctx: ServiceContext) -> Experiments:
    """Load the protected data once for the run; the cap is a fraction of the target."""
    data = load_protected(ctx.assets_dir)
    params = ctx.profile.params_as(ScalingParams)
    recipe = Recipe.of(params, data.vocab_size)
    return Experiments(recipe, data, recipe.target_flops * params.experiment_fraction, ctx)
