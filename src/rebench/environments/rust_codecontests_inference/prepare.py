"""Build the problem set from a secret drawn here: validation problems (public data, with tests
and solutions, for the local evaluate tool and its simulator) and held-out test problems
(protected data). Nothing the agent can read (package code, spec seeds, public files) is
enough to rebuild the held-out instances: their tests and the examples in their statements
follow from the secret, which is stored only in protected/. The held-out scoring's simulator
seed follows from it too (`held_out_seed`); the agent's own tools use the public one.
"""

from __future__ import annotations

import json
import secrets
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from rebench.environments.rust_codecontests_inference.environment import RustParams
from rebench.environments.rust_codecontests_inference.problems import (
    Problem,
    split_problems,
)
from rebench.environments.rust_codecontests_inference.problems.base import derive_key
from rebench.scoring.context import PrepareContext

SECRET_FILE = "secret.bin"
HELD_OUT_FILE = "test.jsonl"
VALIDATION_FILE = "validation.jsonl"
# The local evaluate tool: portable modules (standard library and openai only, sibling imports
# relative) copied into the workspace, so it runs without importing rebench.
EVAL_PACKAGE = "rust_eval"
EVAL_MODULES = ("chat_request", "child_runner", "evaluation", "gateway", "judge", "local_eval",
                "mutations", "processes", "simulator", "toolchain")
PARAMS_FILE = "params.json"


def held_out_seed(protected_dir: Path) -> int:
    """The simulator's seed for the held-out scoring, derived from the prepare's secret:
    no agent can compute which request makes the scorer's simulator answer correctly
    (with the public `model_seed` a scaffold could, 1.3.x)."""
    secret = (protected_dir / SECRET_FILE).read_bytes()
    return int.from_bytes(derive_key(secret, "simulator seed")[:8], "big")


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


def copy_eval_package(target: Path, params: Mapping[str, object]) -> None:
    """The local evaluate tool's modules, as plain files under `target/rust_eval/`, with the
    profile's (public) parameters."""
    here = Path(__file__).resolve().parent
    folder = target / EVAL_PACKAGE
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "__init__.py").write_text('"""The local evaluate tool (copied at prepare)."""\n')
    for name in EVAL_MODULES:
        shutil.copyfile(here / f"{name}.py", folder / f"{name}.py")
    (folder / PARAMS_FILE).write_text(json.dumps(dict(params), indent=1, sort_keys=True))


def prepare(ctx: PrepareContext) -> None:
    """Draw the secret, generate every problem, split by family, write the data files."""
    ctx.progress("generating problems and tests", 0.1)
    secret = secrets.token_bytes(32)
    (ctx.protected_dir / SECRET_FILE).write_bytes(secret)
    validation, test = split_problems(secret)
    params: RustParams = ctx.profile.typed
    test = select_test_problems(test, params.n_test_problems)
    _write_jsonl(ctx.public_dir / VALIDATION_FILE, validation)
    _write_jsonl(ctx.protected_dir / HELD_OUT_FILE, test)
    copy_eval_package(ctx.public_dir, ctx.profile.params)
    ctx.progress(f"{len(validation)} validation and {len(test)} held-out problems", 1.0)
