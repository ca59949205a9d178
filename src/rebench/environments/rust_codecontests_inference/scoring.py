"""Official scoring: run the agent's `generate_solution` on the held-out problems in a
sandboxed child that only returns code strings, then compile and test those on this side.

What the agent sees is the fixed schema `environment.FEEDBACK`: validity, the solved
fraction and counts. Validity is decided before any held-out problem is in reach of the
solution (an import check in a child without problems); once the solution has run on the
held-out problems, nothing it controls (its exceptions, stderr, exit status, timing, token
use, per-problem verdicts) reaches the message, only the solved fraction, which is the
score itself. The rest goes to the private details.

The child has no network: the trusted side serves the model (the simulator, or a proxy to a
configured real endpoint holding the API key) on a unix socket inside the child's folder.
Every untrusted process (that child, rustc on the returned programs, each program on each
test) runs through rebench's one untrusted runner (`sandboxed_runner`).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rebench.core.errors import ScorerFault
from rebench.core.paths import endpoint
from rebench.core.score import ScoreResult
from rebench.environments.rust_codecontests_inference import child_runner
from rebench.environments.rust_codecontests_inference.environment import RustParams
from rebench.environments.rust_codecontests_inference.evaluation import (
    MAX_LINE_BYTES,
    ScaffoldRun,
    judge_answers,
    load_problems,
    make_backend,
    run_scaffold,
    summarize,
    write_problems,
)
from rebench.environments.rust_codecontests_inference.gateway import Gateway, Meter, Upstream
from rebench.environments.rust_codecontests_inference.judge import Judge
from rebench.environments.rust_codecontests_inference.prepare import HELD_OUT_FILE, held_out_seed
from rebench.environments.rust_codecontests_inference.processes import (
    Outcome,
    Request,
    Runner,
)
from rebench.environments.rust_codecontests_inference.toolchain import find_rustc, rustc_sysroot
from rebench.scoring.context import ScoringContext
from rebench.scoring.runner import ChildFailure, run_child

SOCKET_NAME = "model.sock"
# The import check's limit: importing the solution (and openai) takes seconds; the check runs
# before the held-out problems exist anywhere the solution can reach.
CHECK_TIMEOUT_S = 60.0


def _child_env(workdir: Path, rustc: str) -> dict[str, str]:
    path = f"{Path(rustc).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    return {"PATH": path, "HOME": str(workdir), "LANG": "C.UTF-8", "RUSTC": rustc,
            "PYTHONDONTWRITEBYTECODE": "1", "REBENCH_PROFILE": "official"}


def configured_upstream(environ: Mapping[str, str] | None = None) -> Upstream | None:
    """The real endpoint the user configured: $REBENCH_RUST_BASE_URL (+ _MODEL, default
    gpt-3.5-turbo as in the paper; _API_KEY, else $OPENAI_API_KEY), None for the simulator."""
    found = endpoint("RUST", "gpt-3.5-turbo", environ)
    return None if found is None else Upstream(found.base_url, found.model, found.api_key)


def sandboxed_runner(ctx: ScoringContext, extra_ro: tuple[Path, ...]) -> Runner:
    """The judge's and the evaluation's Runner over rebench's untrusted runner: each process
    in a fresh sandbox of this scoring (no network, no GPU, the profile's limits, `extra_ro`
    read-only besides its folder), with exactly the environment asked for, killed whole
    when it ends."""

    def run(request: Request) -> Outcome:
        done = run_child(ctx, request.argv, timeout_s=request.timeout_s, workdir=request.cwd,
                         writable=request.writable, extra_ro=extra_ro, env=request.env,
                         gpu=False, stdin=request.stdin,
                         max_output_bytes=request.max_output_bytes, clear_env=True)
        return Outcome(returncode=-9 if done.returncode is None else done.returncode,
                       stdout=done.stdout, stderr_tail=done.stderr_tail,
                       timed_out=done.failure is ChildFailure.TIMEOUT,
                       output_capped=done.failure is ChildFailure.OUTPUT_CAP,
                       seconds=done.seconds)

    return run


def _run_solution(ctx: ScoringContext, problems: Sequence[dict[str, Any]], rustc: str
                  ) -> tuple[ScaffoldRun, dict[str, int], str]:
    params: RustParams = ctx.profile.typed
    backend, label = make_backend(problems, held_out_seed(ctx.protected_dir),
                                  configured_upstream())
    budget = params.token_budget_per_problem * len(problems)
    parallel = params.parallel
    meter = Meter(token_budget=budget, max_concurrency=2 * parallel)
    with tempfile.TemporaryDirectory(prefix="rebench-rust-") as tmp:
        workdir = Path(tmp)
        problems_name = write_problems(workdir, problems)
        runner = sandboxed_runner(ctx, (ctx.solution_dir, rustc_sysroot(rustc)))
        with Gateway(backend, meter, label, socket_path=workdir / SOCKET_NAME) as gateway:
            # child_runner comes from the sandbox's child runtime (the spec's child_modules)
            argv = [sys.executable, "-m", child_runner.__name__, str(ctx.solution_dir),
                    problems_name, gateway.url, SOCKET_NAME, str(parallel),
                    str(params.per_problem_timeout_s)]
            outcome = run_scaffold(runner, argv, workdir, _child_env(workdir, rustc),
                                   params.child_timeout_s, {p["id"] for p in problems})
    return outcome, meter.snapshot(), label


def import_check(ctx: ScoringContext, rustc: str) -> dict[str, Any] | None:
    """Import the solution in a sandboxed child whose folder holds no problem: None if it
    loads and defines `generate_solution`, else the private details of the failure."""
    with tempfile.TemporaryDirectory(prefix="rebench-rust-check-") as tmp:
        workdir = Path(tmp)
        runner = sandboxed_runner(ctx, (ctx.solution_dir, rustc_sysroot(rustc)))
        argv = (sys.executable, "-m", child_runner.__name__, "--check", str(ctx.solution_dir))
        done = runner(Request(argv, workdir, _child_env(workdir, rustc), CHECK_TIMEOUT_S,
                              writable=True, max_output_bytes=MAX_LINE_BYTES))
    records = []
    for line in done.stdout.splitlines()[:16]:
        try:
            records.append(json.loads(line))
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
    if {"ok": True} in records and done.returncode == 0:
        return None
    fatal = next((r["fatal"] for r in records if isinstance(r, dict)
                  and isinstance(r.get("fatal"), str)), None)
    return {"fatal": fatal, "returncode": done.returncode, "timed_out": done.timed_out,
            "stderr": done.stderr_tail[-4000:]}


def score(ctx: ScoringContext) -> ScoreResult:
    """Fraction of held-out problems solved; NaN when the solution cannot be run at all
    (decided before it sees a held-out problem)."""
    if not (ctx.solution_dir / "solution.py").is_file():
        return ScoreResult.invalid("no_solution")
    try:
        rustc = find_rustc()
    except FileNotFoundError as exc:
        raise ScorerFault(str(exc)) from None  # a broken machine is a harness problem
    failed = import_check(ctx, rustc)
    if failed is not None:
        return ScoreResult.invalid("import_failed", **failed)
    problems = load_problems(ctx.protected_dir / HELD_OUT_FILE)
    outcome, usage, label = _run_solution(ctx, problems, rustc)
    # The compile cache lives in the scorer's private scratch dir, out of the solution's reach.
    judge = Judge(ctx.scratch_dir / "build", sandboxed_runner(ctx, (rustc_sysroot(rustc),)),
                  rustc=rustc)
    results = judge_answers(problems, outcome.answers, judge)
    solved, verdicts = summarize(problems, results)
    raw = solved / len(problems)
    # Only the score and public counts: which problems failed how, the solution's errors,
    # exceptions, stderr, exit status, time-out and token use were chosen by code that read
    # the held-out statements (a channel), so they stay private.
    message: dict[str, Any] = {"solved": solved, "problems": len(problems),
                               "fraction_solved": raw}
    details = {
        "per_problem": {pid: {"verdict": r.verdict.value, "detail": r.detail[:300]}
                        for pid, r in results.items()},
        "verdicts": verdicts, "model": label, "tokens_used": usage["tokens_used"],
        "token_budget": usage["token_budget"], "solution_timed_out": outcome.timed_out,
        "solution_output_capped": outcome.output_capped, "fatal": outcome.fatal,
        "returncode": outcome.returncode, "errors": outcome.errors,
        "child_stderr": outcome.stderr_tail, "child_wall_s": round(outcome.wall_s, 2),
        "requests": usage["requests"], "rejected_requests": usage["rejected"],
    }
    return ScoreResult(raw=raw, message=message, details=details)
