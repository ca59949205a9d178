"""The agent's local evaluate tool: run `solution.py` on the validation problems exactly as
the official scorer runs it on the held-out ones (same child runner, same model gateway, same
judge), without the sandbox (processes.run_local starts every process). Its result is never
an official score.

Portable: prepare copies this module and its siblings into the workspace (`rust_eval/`), with
the profile's public parameters in `rust_eval/params.json`; it never imports `rebench`.

usage: python evaluate.py [--solution solution.py] [--problems validation.jsonl] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from .evaluation import (
    RUNNER,
    judge_answers,
    load_problems,
    make_backend,
    number,
    run_scaffold,
    summarize,
    write_problems,
)
from .gateway import Gateway, Meter
from .judge import Judge
from .processes import run_local
from .toolchain import find_rustc

PARAMS_FILE = Path(__file__).resolve().parent / "params.json"


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--solution", default="solution.py", type=Path)
    parser.add_argument("--problems", default="validation.jsonl", type=Path)
    parser.add_argument("--limit", type=int, default=0, help="only the first N problems")
    parser.add_argument("--params", default=PARAMS_FILE, type=Path,
                        help="the profile's public parameters (JSON)")
    return parser.parse_args(argv)


def load_params(path: Path) -> dict[str, object]:
    """The profile parameters written at prepare."""
    params: dict[str, object] = json.loads(path.read_text())
    return params


def evaluate(solution: Path, problems_file: Path, limit: int,
             params: Mapping[str, object]) -> float:
    """Print per-problem verdicts; return the fraction solved."""
    problems = load_problems(problems_file)[: limit or None]
    rustc = find_rustc()
    # Always the simulator: endpoint settings are the harness's (the sandbox has no network).
    backend, label = make_backend(problems, int(number(params, "model_seed")), None)
    budget = int(number(params, "token_budget_per_problem")) * len(problems)
    meter = Meter(budget, 2 * int(number(params, "parallel")))
    print(f"model: {label}; {len(problems)} validation problems", flush=True)
    with tempfile.TemporaryDirectory(prefix="rebench-rust-eval-") as tmp, \
            Gateway(backend, meter, label) as gateway:
        workdir = Path(tmp)
        problems_name = write_problems(workdir, problems)
        shutil.copyfile(RUNNER, workdir / RUNNER.name)  # run from here: only this on its path
        path = f"{Path(rustc).parent}:{os.environ.get('PATH', '')}"
        env = {**os.environ, "RUSTC": rustc, "PATH": path}
        argv = [sys.executable, RUNNER.name, str(solution.resolve().parent), problems_name,
                gateway.url, "-", str(params["parallel"]), str(params["per_problem_timeout_s"])]
        outcome = run_scaffold(run_local, argv, workdir, env, number(params, "child_timeout_s"),
                               {p["id"] for p in problems})
    if outcome.fatal:
        print(f"error: {outcome.fatal}\n{outcome.stderr_tail}")
        return 0.0
    judge = Judge(Path(tempfile.gettempdir()) / "rebench-rust-eval-cache", rustc=rustc)
    results = judge_answers(problems, outcome.answers, judge)
    for p in problems:
        r = results.get(p["id"])
        if r is None:
            line = f"{'no_answer':14s} {outcome.errors.get(p['id'], '')[:70]}"
        else:
            line = f"{r.verdict.value:14s} {r.detail[:70]}"
        print(f"{p['name'][:28]:28s} d{p['difficulty']} {line}")
    solved, verdicts = summarize(problems, results)
    usage = meter.snapshot()
    print(f"solved {solved}/{len(problems)} = {solved / max(1, len(problems)):.3f}; {verdicts}; "
          f"tokens {usage['tokens_used']}/{usage['token_budget']}"
          + ("; the solution timed out" if outcome.timed_out else ""))
    return solved / max(1, len(problems))


def main(argv: list[str] | None = None) -> int:
    """The command line of `python evaluate.py`."""
    args = _parse(sys.argv[1:] if argv is None else argv)
    evaluate(args.solution, args.problems, args.limit, load_params(args.params))
    return 0
