"""Official scoring: run the agent's `generate_solution` on the held-out problems in a
sandboxed child that only returns code strings, then compile and test those on this side.

The child has no network: the trusted side serves the model (the simulator, or a proxy to a
configured real endpoint holding the API key) on a unix socket inside the child's folder.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rebench.core.errors import ScorerFault
from rebench.core.score import ScoreResult
from rebench.environments.rust_codecontests_inference.environment import RustParams
from rebench.environments.rust_codecontests_inference.evaluation import (
    judge_answers,
    load_problems,
    make_backend,
    run_child,
    summarize,
    write_child_files,
)
from rebench.environments.rust_codecontests_inference.gateway import Gateway, Meter
from rebench.environments.rust_codecontests_inference.judge import Judge, find_rustc, rustc_sysroot
from rebench.environments.rust_codecontests_inference.prepare import HELD_OUT_FILE
from rebench.scoring.context import ScoringContext

SOCKET_NAME = "model.sock"


def _child_env(workdir: Path, rustc: str) -> dict[str, str]:
    path = f"{Path(rustc).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    return {"PATH": path, "HOME": str(workdir), "LANG": "C.UTF-8", "RUSTC": rustc,
            "PYTHONDONTWRITEBYTECODE": "1", "REBENCH_PROFILE": "official"}


def _run_solution(ctx: ScoringContext, problems: Sequence[dict[str, Any]], rustc: str
                  ) -> tuple[Any, dict[str, int], str]:
    params = ctx.profile.params_as(RustParams)
    backend, label = make_backend(problems, params.model_seed)
    budget = params.token_budget_per_problem * len(problems)
    parallel = params.parallel
    meter = Meter(token_budget=budget, max_concurrency=2 * parallel)
    with tempfile.TemporaryDirectory(prefix="rebench-rust-") as tmp:
        workdir = Path(tmp)
        write_child_files(workdir, problems)
        env = _child_env(workdir, rustc)
        with Gateway(backend, meter, label, socket_path=workdir / SOCKET_NAME) as gateway:
            argv = ctx.untrusted_argv(
                [sys.executable, "child_runner.py", str(ctx.solution_dir), "problems.json",
                 gateway.url, SOCKET_NAME, str(parallel), str(params.per_problem_timeout_s)],
                workdir=workdir, writable=True,
                extra_ro=(ctx.solution_dir, rustc_sysroot(rustc)), env=env, gpu=False,
            )
            outcome = run_child(argv, workdir, env, params.child_timeout_s,
                                {p["id"] for p in problems})
    return outcome, meter.snapshot(), label


def score(ctx: ScoringContext) -> ScoreResult:
    """Fraction of held-out problems solved; NaN when the solution cannot be run at all."""
    if not (ctx.solution_dir / "solution.py").is_file():
        return ScoreResult.invalid("no solution.py in the submission")
    problems = load_problems(ctx.assets_dir / "protected" / HELD_OUT_FILE)
    try:
        rustc = find_rustc()
    except FileNotFoundError as exc:
        raise ScorerFault(str(exc)) from None  # a broken machine is a harness problem
    outcome, usage, label = _run_solution(ctx, problems, rustc)
    if outcome.fatal:
        return ScoreResult.invalid(outcome.fatal, stderr=outcome.stderr_tail)
    sysroot = rustc_sysroot(rustc)

    def wrap(argv: Sequence[str], workdir: Path, writable: bool) -> list[str]:
        return ctx.untrusted_argv(argv, workdir=workdir, writable=writable, extra_ro=(sysroot,),
                                  gpu=False)

    # The compile cache lives in the scorer's private scratch dir, out of the solution's reach.
    judge = Judge(ctx.scratch_dir / "build", wrap=wrap, rustc=rustc)
    results = judge_answers(problems, outcome.answers, judge)
    solved, verdicts = summarize(problems, results)
    raw = solved / len(problems)
    message: dict[str, Any] = {
        "solved": solved, "problems": len(problems), "fraction_solved": raw,
        "verdicts": verdicts, "model": label, "tokens_used": usage["tokens_used"],
        "token_budget": usage["token_budget"],
        "solution_timed_out": outcome.timed_out,
        "solution_errors": len(outcome.errors),
    }
    if outcome.timed_out:
        timeout = ctx.profile.params_as(RustParams).child_timeout_s
        message["note"] = (f"the solution did not finish within {timeout} s;"
                           " answers returned before that were judged")
    details = {
        "per_problem": {pid: {"verdict": r.verdict.value, "detail": r.detail[:300]}
                        for pid, r in results.items()},
        "errors": outcome.errors, "child_stderr": outcome.stderr_tail,
        "child_wall_s": round(outcome.wall_s, 2), "requests": usage["requests"],
        "rejected_requests": usage["rejected"],
    }
    return ScoreResult(raw=raw, message=message, details=details)
