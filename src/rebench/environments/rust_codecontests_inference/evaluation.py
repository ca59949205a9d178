"""What the official scorer and the local evaluate tool share: problem files, the view of a
problem the solution gets, the model backend, running the solution's child process (through
the caller's runner), and judging its answers.

Portable: imports only the standard library and sibling modules (relative imports), because it
is also copied into the workspace for the local evaluate tool, where `rebench` is not
importable.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .gateway import Backend, Upstream, simulator_backend
from .judge import Judge, JudgeResult, TestCase
from .processes import Request, Runner
from .simulator import MODEL_NAME, KnownProblem, Simulator

RUNNER = Path(__file__).resolve().parent / "child_runner.py"  # what the child runs
MAX_CHILD_STDOUT = 64 * 1024 * 1024
MAX_LINE_BYTES = 2 * 1024 * 1024  # one JSON line: a 256 KiB program, escaped, fits easily
TEST_KINDS = ("public_tests", "private_tests", "generated_tests")


def number(params: Mapping[str, object], key: str) -> float:
    """A numeric profile parameter (a spec error, not a bad submission, if it is not one)."""
    value = params[key]
    if not isinstance(value, int | float):
        raise TypeError(f"profile parameter {key} must be a number, not {value!r}")
    return float(value)


def load_problems(path: Path) -> list[dict[str, Any]]:
    """Problems of a JSONL file written by prepare."""
    with path.open() as fh:
        return [json.loads(line) for line in fh if line.strip()]


def agent_view(problem: Mapping[str, Any]) -> dict[str, Any]:
    """What `generate_solution` receives: no private or generated tests, no solution."""
    return {
        "name": problem["name"],
        "description": problem["description"],
        "public_tests": problem["public_tests"],
        "time_limit": problem["time_limit_s"],
        "memory_limit_bytes": int(problem["memory_limit_mb"]) * 1024 * 1024,
    }


def all_tests(problem: Mapping[str, Any]) -> list[TestCase]:
    return [TestCase(i, o) for kind in TEST_KINDS
            for i, o in zip(problem[kind]["input"], problem[kind]["output"], strict=True)]


def make_backend(problems: Sequence[Mapping[str, Any]], seed: int,
                 upstream: Upstream | None) -> tuple[Backend, str]:
    """The real endpoint when one is configured (the harness's settings, passed in), else the
    simulator over `problems`."""
    if upstream is not None:
        return upstream, f"{upstream.model} at {upstream.base_url}"
    known = [KnownProblem(p["id"], int(p["difficulty"]), p["description"], p["solution"])
             for p in problems]
    return simulator_backend(Simulator(known, seed), 1.0), f"{MODEL_NAME} (SIMULATED model)"


@dataclass
class ScaffoldRun:
    """What the solution's child process returned: code strings per problem id."""

    answers: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    fatal: str | None = None
    timed_out: bool = False
    output_capped: bool = False
    returncode: int | None = None
    stderr_tail: str = ""
    wall_s: float = 0.0


def _read_results(stdout: bytes, known: set[str], run: ScaffoldRun) -> None:
    stream = io.BytesIO(stdout)
    total = 0
    while total <= MAX_CHILD_STDOUT:
        raw = stream.readline(MAX_LINE_BYTES)  # bounded: a line without end cannot fill memory
        if not raw:
            break
        total += len(raw)
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if not isinstance(record, dict):
            continue
        if isinstance(record.get("fatal"), str) and run.fatal is None:
            run.fatal = record["fatal"][:2000]
        pid = record.get("id")
        if pid not in known or pid in run.answers or pid in run.errors:
            continue  # unknown ids and second answers are ignored
        if isinstance(record.get("code"), str):
            run.answers[pid] = record["code"]
        else:
            run.errors[pid] = str(record.get("error", "no answer"))[:1000]


def run_scaffold(runner: Runner, argv: Sequence[str], cwd: Path, env: Mapping[str, str],
                 timeout_s: float, known: set[str]) -> ScaffoldRun:
    """Run the solution's child through `runner` (in `cwd`, which it may write); at the
    timeout it is killed and what it sent before counts."""
    done = runner(Request(tuple(argv), cwd, env, timeout_s, writable=True,
                          max_output_bytes=MAX_CHILD_STDOUT + MAX_LINE_BYTES))
    run = ScaffoldRun(timed_out=done.timed_out, output_capped=done.output_capped,
                      returncode=done.returncode, stderr_tail=done.stderr_tail[-4000:],
                      wall_s=done.seconds)
    _read_results(done.stdout, known, run)
    return run


def write_problems(workdir: Path, problems: Sequence[Mapping[str, Any]]) -> str:
    """The problems file (agent view only) in the child's folder; its name there."""
    items = [{"id": p["id"], "problem": agent_view(p)} for p in problems]
    (workdir / "problems.json").write_text(json.dumps(items))
    return "problems.json"


def judge_answers(problems: Sequence[Mapping[str, Any]], answers: Mapping[str, str],
                  judge: Judge, workers: int | None = None) -> dict[str, JudgeResult]:
    """Judge every answered problem on all of its tests (unanswered ones are not judged)."""
    jobs = {p["id"]: (extract_code(answers[p["id"]]), all_tests(p), float(p["time_limit_s"]))
            for p in problems if p["id"] in answers}
    return judge.judge_many(jobs, workers)


def extract_code(answer: str) -> str:
    """The program as returned: the solution must return plain Rust source. Nothing is
    extracted on its behalf (a raw markdown answer does not compile, as in the original)."""
    return answer


def summarize(problems: Sequence[Mapping[str, Any]], results: Mapping[str, JudgeResult]
              ) -> tuple[int, dict[str, int]]:
    """(solved count, verdict counts including unanswered problems)."""
    verdicts: Counter[str] = Counter()
    for p in problems:
        result = results.get(p["id"])
        verdicts[result.verdict.value if result else "no_answer"] += 1
    return verdicts.get("passed", 0), dict(sorted(verdicts.items()))
