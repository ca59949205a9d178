"""Trusted scorer of triton_cumsum: raw score = ln(milliseconds) of a `prefix_sum` call.

Phases: check the snapshot, start the sandboxed child, make the warm-up and timed calls
(session.py; gpu timing in gpu_transport.py), kill the child tree, then verify every timed
call's output against the scorer's own implementation on the input redrawn from its seed.
Nothing measured separately is ever subtracted from a timed call.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from typing import Any

import torch

from rebench.core.score import ScoreResult
from rebench.environments.triton_cumsum.buffers import CpuTransport, make_input
from rebench.environments.triton_cumsum.environment import TritonParams
from rebench.environments.triton_cumsum.expected import expected_prefix_sum
from rebench.environments.triton_cumsum.gpu_transport import CudaTransport, hash_output
from rebench.environments.triton_cumsum.session import (
    CallResult,
    ChildSession,
    GpuBatchResult,
    SubmissionError,
    child_command,
)
from rebench.scoring.context import ScoringContext


def machine_load() -> float:
    """The 1-minute load average, recorded beside every timing score."""
    return round(os.getloadavg()[0], 2)


def score(ctx: ScoringContext) -> ScoreResult:
    """Time and verify the snapshot's `prefix_sum`; NaN with a reason for any failure."""
    plan: TritonParams = ctx.profile.typed
    if not (ctx.solution_dir / "solution.py").is_file():
        return ScoreResult.invalid("missing_solution")
    if plan.device == "cuda" and not torch.cuda.is_available():
        return ScoreResult.invalid("no_gpu")
    threads = torch.get_num_threads()
    if plan.device == "cpu":
        # One scorer thread while the solution runs: idle intra-op workers spinning after
        # our own tensor work would steal cores from the solution while it is being timed.
        # Verification (the child is dead by then) gets every thread back.
        torch.set_num_threads(1)
    details: dict[str, Any] = {"n": plan.n, "device": plan.device,
                               "load_before": machine_load()}
    transport = (CudaTransport(plan.n, plan.batch) if plan.device == "cuda"
                 else CpuTransport(plan.n))
    try:
        return _score_with(ctx, plan, transport, details, threads)
    finally:
        transport.close()
        torch.set_num_threads(threads)


def _score_with(ctx: ScoringContext, plan: TritonParams, transport: CpuTransport | CudaTransport,
                details: dict[str, Any], verify_threads: int) -> ScoreResult:
    session = _session(ctx, plan, transport)
    try:
        details["startup_s"] = round(session.start(), 3)
        calls = _run_calls(session, plan, details)
    except SubmissionError as exc:
        details["child_log_tail"] = session.log_tail()
        return ScoreResult.invalid(exc.reason, detail=exc.detail, **details)
    finally:
        session.close()  # the tree is dead before any expected output exists
    details["child_log_tail"] = session.log_tail()
    details["load_after"] = machine_load()
    times_ms = [c.seconds * 1e3 for c in calls]
    details["timed_ms"] = [round(t, 4) for t in times_ms]
    torch.set_num_threads(verify_threads)  # the child tree is dead: nothing is timed now
    problem = _verify(calls, plan, transport)
    if problem is not None:
        reason, detail = problem
        return ScoreResult.invalid(reason, detail=detail, **details)
    return _result(times_ms, plan.statistic, details)


def _session(
    ctx: ScoringContext, plan: TritonParams, transport: CpuTransport | CudaTransport
) -> ChildSession:
    child_env = {"REBENCH_PROFILE": ctx.profile.name, "PYTHONUNBUFFERED": "1"}
    argv = [*child_command(), "--solution-dir", str(ctx.solution_dir), "--n", str(plan.n),
            "--device", plan.device]
    prep_limit = plan.prep_wait_ms if isinstance(transport, CudaTransport) else math.inf
    return ChildSession(
        ctx=ctx, argv=argv, env=child_env, transport=transport,
        log_path=ctx.scratch_dir / "child.log",
        startup_timeout_s=plan.startup_timeout_s, call_timeout_s=plan.call_timeout_s,
        prep_limit_ms=prep_limit,
    )


Call = CallResult | GpuBatchResult


def _run_calls(session: ChildSession, plan: TritonParams, details: dict[str, Any]) -> list[Call]:
    if plan.device == "cuda":
        return _run_batches(session, plan, details)
    calls: list[Call] = []
    for i in range(plan.warmup_calls + plan.timed_calls):
        timed = i >= plan.warmup_calls
        label = f"timed call {i - plan.warmup_calls + 1}" if timed else f"warm-up call {i + 1}"
        calls.append(session.call(label, slot=0, keep=timed))
    details["warmup_ms"] = [round(c.seconds * 1e3, 4) for c in calls[: plan.warmup_calls]]
    details["walk_charged_calls"] = sum(
        c.walk_charged for c in calls if isinstance(c, CallResult))
    return calls[plan.warmup_calls :]


def _run_batches(session: ChildSession, plan: TritonParams,
                 details: dict[str, Any]) -> list[Call]:
    """gpu: warm-up batches (at least the paper's warm-up calls), then timed batches."""
    warmups = -(-plan.warmup_calls // plan.batch)
    batches = [session.gpu_batch(f"warm-up batch {i + 1}") for i in range(warmups)]
    batches += [session.gpu_batch(f"timed batch {i + 1}")
                for i in range(max(1, plan.timed_calls // plan.batch))]
    details["warmup_ms"] = [round(b.seconds * 1e3, 4) for b in batches[:warmups]]
    details["prep_ms_max"] = round(max(b.prep_ms for b in batches), 4)
    details["prep_waited_ms_max"] = round(max(b.waited_ms for b in batches), 4)
    details["prep_limit_ms"] = round(session.prep_limit_ms, 4)
    details["draw_ms"] = [round(b.draw_ms, 4) for b in batches[warmups:]]
    details["batch"] = plan.batch
    details["timed_calls"] = (len(batches) - warmups) * plan.batch
    # When the scorer saw each call's done flag: where the time of each batch went.
    details["first_batch_call_ms"] = [round(t, 4) for t in batches[warmups].call_ms]
    details["batch_call_ms"] = [[round(t, 4) for t in b.call_ms] for b in batches[warmups:]]
    details["gather_ms"] = [round(b.gather_ms, 4) for b in batches[warmups:]]
    # Per call of the first timed batch: go written, the child's stamps (untrusted), done.
    details["first_batch_trace_ms"] = [list(t) for t in batches[warmups].trace_ms]
    return list(batches[warmups:])


Problem = tuple[str, str]  # (reason code of environment.FEEDBACK, private detail)


def _verify(calls: list[Call], plan: TritonParams,
            transport: CpuTransport | CudaTransport) -> Problem | None:
    """Check each timed output against the scorer's own answer (the child is dead)."""
    for i, call in enumerate(calls, start=1):
        if isinstance(call, GpuBatchResult):
            assert isinstance(transport, CudaTransport)
            problem = _verify_gpu(call, plan, transport)
            where = f"timed batch {i}"
        else:
            expected = expected_prefix_sum(make_input(plan.n, call.seed, plan.device))
            problem = _verify_cpu(call, expected, plan.n)
            where = f"timed call {i}"
        if problem is not None:
            return problem[0], f"{where}: {problem[1]}"
    return None


def _verify_cpu(call: CallResult, expected: torch.Tensor, n: int) -> Problem | None:
    if call.snapshot is None:
        return "wrong_result", "no output was captured"
    if torch.equal(call.snapshot, expected):
        return None
    wrong = (call.snapshot != expected).nonzero()
    first = int(wrong[0, 0])
    return "wrong_result", (f"wrong at {wrong.shape[0]} of {n} positions "
                            f"(first at index {first}: got {int(call.snapshot[first])})")


def _verify_gpu(batch: GpuBatchResult, plan: TritonParams,
                transport: CudaTransport) -> Problem | None:
    for slot, seed in enumerate(batch.seeds):
        expected = expected_prefix_sum(make_input(plan.n, seed, plan.device))
        positions = batch.positions[slot].positions(expected.device)
        seen = batch.samples[slot].to(expected.device)
        wrong = int((expected[positions] != seen).sum())
        if wrong:
            return "unfinished", (f"call {slot + 1}: {wrong} of {positions.numel()} "
                                  "positions read when the batch was done were not right")
        if not torch.equal(hash_output(expected, transport.weights), batch.digests[slot]):
            return "wrong_result", f"call {slot + 1}: the output's hash differs"
    return None


def _result(times_ms: list[float], statistic: str, details: dict[str, Any]) -> ScoreResult:
    ms = min(times_ms) if statistic == "min" else statistics.median(times_ms)
    raw = math.log(ms)
    details["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return ScoreResult(
        raw=raw,
        # The score itself and a public count only (environment.FEEDBACK): the machine's
        # load, the per-call times and the child's log stay in the private details.
        message={"ms": round(ms, 4), "raw": round(raw, 6),
                 "timed_calls": details.get("timed_calls", len(times_ms))},
        details=details,
    )
