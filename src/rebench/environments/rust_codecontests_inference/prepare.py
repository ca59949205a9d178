"""Build the problem set: validation problems (public, with tests and solutions, for the
local evaluate tool and its simulator) and held-out test problems (protected)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from rebench.environments.rust_codecontests_inference.problems import Problem, split_problems
from rebench.harness.context import PrepareContext


def _write_jsonl(path: Path, problems: Sequence[Problem]) -> None:
    with path.open("w") as fh:
        for problem in problems:
            fh.write(json.dumps(problem.to_json(), sort_keys=True) + "\n")


def select_test_problems(problems: Sequence[Problem], count: int) -> list[Problem]:
    """A fixed subset spread over all held-out families (round robin over families)."""
    by_family: dict[str, list[Problem]] = {}
    for problem in problems:
        by_family.setdefault(problem.family, []).append(problem)
    chosen: list[Problem] = []
    rank = 0
    while len(chosen) < min(count, len(problems)):
        for family in sorted(by_family):
            if rank < len(by_family[family]) and len(chosen) < count:
                chosen.append(by_family[family][rank])
        rank += 1
    return sorted(chosen, key=lambda p: p.id)


def prepare(ctx: PrepareContext) -> None:
    """Generate every problem from its family and seed, split by family, write JSONL."""
    ctx.progress("generating problems and tests", 0.1)
    validation, test = split_problems(int(ctx.profile.params["problem_seed"]))
    test = select_test_problems(test, int(ctx.profile.params["n_test_problems"]))
    _write_jsonl(ctx.public_dir / "validation.jsonl", validation)
    _write_jsonl(ctx.protected_dir / "test.jsonl", test)
    ctx.progress(f"{len(validation)} validation and {len(test)} held-out problems", 1.0)
