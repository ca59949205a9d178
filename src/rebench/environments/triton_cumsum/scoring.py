"""Trusted scorer of triton_cumsum: raw score = ln(milliseconds) of a `prefix_sum` call.

Phases: check the snapshot, start the sandboxed child, make the warm-up and timed calls
(session.py), kill the child tree, then verify every timed call's output against the
scorer's own implementation on the input redrawn from its seed.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from dataclasses import dataclass
from typing import Any

import torch

from rebench.core.score import ScoreResult
from rebench.environments.triton_cumsum.buffers import (
    CpuTransport,
    CudaTransport,
    Transport,
    make_input,
)
from rebench.environments.triton_cumsum.expected import expected_prefix_sum
from rebench.environments.triton_cumsum.proctree import set_child_subreaper
from rebench.environments.triton_cumsum.session import (
    CallResult,
    ChildSession,
    SubmissionError,
    child_command,
)
from rebench.harness.context import ScoringContext

# A timed call can never be reported faster than this (keeps ln() finite).
MIN_MS = 1e-3


@dataclass(frozen=True)
class CallPlan:
    """Sizes, device and limits of one scoring, read from the profile's params."""

    n: int
    device: str
    warmup_calls: int
    timed_calls: int
    call_timeout_s: float
    startup_timeout_s: float
    statistic: str  # "median" or "min" of the timed calls

    @classmethod
    def from_params(cls, params: Any) -> CallPlan:
        return cls(
            n=int(params["n"]),
            device=str(params["device"]),
            warmup_calls=int(params["warmup_calls"]),
            timed_calls=int(params["timed_calls"]),
            call_timeout_s=float(params["call_timeout_s"]),
            startup_timeout_s=float(params["startup_timeout_s"]),
            statistic=str(params["statistic"]),
        )


def score(ctx: ScoringContext) -> ScoreResult:
    """Time and verify the snapshot's `prefix_sum`; NaN with a reason for any failure."""
    plan = CallPlan.from_params(ctx.params)
    if plan.statistic not in ("median", "min"):
        raise ValueError(f"unknown statistic {plan.statistic!r} in the profile")  # spec bug
    if not (ctx.solution_dir / "solution.py").is_file():
        return ScoreResult.invalid("solution.py is missing from the submission")
    if plan.device == "cuda" and not torch.cuda.is_available():
        return ScoreResult.invalid("this profile needs a CUDA GPU, and none is visible")
    set_child_subreaper()
    if plan.device == "cpu":
        # One scorer thread: idle intra-op workers spinning after our own tensor work
        # would steal cores from the solution while it is being timed.
        torch.set_num_threads(1)
    transport = _transport(plan)
    session = _session(ctx, plan, transport)
    details: dict[str, Any] = {"n": plan.n, "device": plan.device}
    try:
        details["startup_s"] = round(session.start(), 3)
        calls = _run_calls(session, plan, details)
    except SubmissionError as exc:
        details["child_log_tail"] = session.log_tail()
        return ScoreResult.invalid(str(exc), **details)
    finally:
        session.close()  # the tree is dead before any expected output exists
        transport.close()
    details["child_log_tail"] = session.log_tail()
    overhead = transport.copy_overhead_s
    times_ms = [max(MIN_MS, (c.seconds - overhead) * 1e3) for c in calls]
    details.update(timed_ms=[round(t, 4) for t in times_ms],
                   copy_overhead_ms=round(overhead * 1e3, 4))
    problem = _verify(calls, plan)
    if problem is not None:
        return ScoreResult.invalid(problem, **details)
    return _result(times_ms, plan.statistic, details)


def _transport(plan: CallPlan) -> Transport:
    if plan.device == "cuda":
        return CudaTransport(plan.n, snapshots=plan.timed_calls)
    return CpuTransport(plan.n)


def _session(ctx: ScoringContext, plan: CallPlan, transport: Transport) -> ChildSession:
    child_env = {"REBENCH_PROFILE": ctx.profile.name, "PYTHONUNBUFFERED": "1"}
    argv = ctx.untrusted_argv(
        [*child_command(), "--solution-dir", str(ctx.solution_dir), "--n", str(plan.n),
         "--device", plan.device],
        env=child_env,
    )
    # Local isolation passes no environment through `wrap`: give the child ours, minus
    # the harness's own locations.
    env = {k: v for k, v in os.environ.items() if not k.startswith("REBENCH_")}
    env.update(child_env)
    return ChildSession(
        argv=argv, env=env, cwd=ctx.solution_dir, transport=transport,
        log_path=ctx.scratch_dir / "child.log",
        startup_timeout_s=plan.startup_timeout_s, call_timeout_s=plan.call_timeout_s,
    )


def _run_calls(
    session: ChildSession, plan: CallPlan, details: dict[str, Any]
) -> list[CallResult]:
    warmups = []
    for i in range(plan.warmup_calls):
        warmups.append(session.call(f"warm-up call {i + 1}", slot=0, keep=False))
    timed = [
        session.call(f"timed call {i + 1}", slot=i, keep=True) for i in range(plan.timed_calls)
    ]
    details["warmup_ms"] = [round(c.seconds * 1e3, 4) for c in warmups]
    details["walk_charged_calls"] = sum(c.walk_charged for c in warmups + timed)
    return timed


def _verify(calls: list[CallResult], plan: CallPlan) -> str | None:
    """Compare each timed output, bit for bit, with the scorer's own answer."""
    for i, call in enumerate(calls, start=1):
        if call.snapshot is None:
            return f"timed call {i}: no output was captured"
        expected = expected_prefix_sum(make_input(plan.n, call.seed, plan.device))
        if torch.equal(call.snapshot, expected):
            continue
        wrong = (call.snapshot != expected).nonzero()
        first = int(wrong[0, 0])
        return (
            f"timed call {i}: wrong result at {wrong.shape[0]} of {plan.n} positions "
            f"(first at index {first}: got {int(call.snapshot[first])})"
        )
    return None


def _result(times_ms: list[float], statistic: str, details: dict[str, Any]) -> ScoreResult:
    ms = min(times_ms) if statistic == "min" else statistics.median(times_ms)
    raw = math.log(ms)
    details["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return ScoreResult(
        raw=raw,
        message={"ms": round(ms, 4), "raw": round(raw, 6), "timed_calls": len(times_ms)},
        details=details,
    )
