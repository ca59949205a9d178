"""Scaffolding for Rust Codecontests: the spec."""

from __future__ import annotations

from dataclasses import dataclass

from rebench.core.feedback import Feedback
from rebench.core.spec import Aggregation, Direction, EnvironmentSpec, Profile, SolutionRecipe


@dataclass(frozen=True)
class RustParams:
    """A profile's numbers (the portable evaluation copy reads the same keys from JSON)."""

    model_seed: int  # the simulated model's seed in the agent's tools (public; not the scorer's)
    token_budget_per_problem: int  # prompt + completion tokens per held-out problem
    n_test_problems: int  # held-out problems scored
    parallel: int  # problems solved at once by the agent's scaffold
    per_problem_timeout_s: float  # wall time the scaffold gets per problem
    child_timeout_s: float  # wall time the whole scaffold run gets


# Shared by both profiles (the profiles differ only in problem counts and budgets).
_COMMON = {
    # Seed of the simulated model's sampling (public: it makes scores reproducible; knowing it
    # gives nothing that the public simulator and family code do not).
    "model_seed": 20241122,
    "token_budget_per_problem": 20_000,  # prompt + completion tokens, as in the paper's credits
}

CPU = Profile(
    name="cpu",
    description="32 held-out problems, 4 problems in parallel, simulated model; 2 CPU cores.",
    starting_raw=0.0,
    # 1.4.0: the mean of 8 scorer seeds (20, 15, 19, 12, 18, 17, 16, 14 of 32 solved; SD 2.7
    # problems, 0.16 normalized), `rebench evaluate --solution reference` on one prepare with
    # its secret replaced, bwrap, the 2-core VM at load 4-5 (2026-12-07). Before 1.4.0 every
    # prepare used the public seed: 13, 13, 14 of 32, one draw of the sampling repeated.
    reference_raw=0.51171875,
    anchors_hardware="cpu:2-core x86_64 VM (rustc 1.95, 2026-12-07)",
    params={**_COMMON, "n_test_problems": 32, "parallel": 4, "per_problem_timeout_s": 40.0,
            "child_timeout_s": 150.0},
    memory_gb=8.0,
    default_budget_s=8 * 3600.0,
    scoring_timeout_s=240.0,
)

GPU = Profile(
    name="gpu",
    description="All 65 held-out problems, 8 problems in parallel, simulated model or a real "
    "endpoint; needs no GPU (the name keeps the two-profile convention).",
    starting_raw=0.0,
    # 1.4.0: the mean of 4 scorer seeds (34, 32, 33, 27 of 65), measured as the cpu
    # profile's on this profile's prepare (it needs no GPU); before, one prepare under the
    # public seed: 27 of 65.
    reference_raw=0.4846153846153846,
    anchors_hardware="cpu:2-core x86_64 VM (rustc 1.95, 2026-12-07)",
    params={**_COMMON, "n_test_problems": 65, "parallel": 8, "per_problem_timeout_s": 60.0,
            "child_timeout_s": 420.0},
    memory_gb=16.0,
    default_budget_s=8 * 3600.0,
    scoring_timeout_s=600.0,
)

# For rebench's own tests: the cpu profile's protocol on the first 8 held-out problems of the
# round robin (8 of the 13 held-out families, one problem each), so a plumbing test or a
# degenerate policy whose outcome does not depend on the cpu profile's 32 problems scores in
# seconds (tests/environments/rust_codecontests_inference, degenerate.py).
TEST = Profile(
    name="test",
    description="exists for rebench's own tests (cheats, plumbing, degenerate policies whose "
    "outcome does not depend on the cpu size): 8 held-out problems, 4 in parallel, "
    "simulated model; scores not comparable with cpu",
    starting_raw=0.0,  # the start's raw markdown never compiles: 0 of 8 on every prepare
    # 1.4.0: the mean of 8 scorer seeds (6, 3, 5, 2, 4, 3, 1, 2 of 8 solved), measured as
    # the cpu profile's (2026-12-07); before, 3 prepares under the public seed: 2, 1, 2.
    reference_raw=0.40625,
    anchors_hardware="cpu:2-core x86_64 VM (rustc 1.95, 2026-12-07)",
    params={**_COMMON, "n_test_problems": 8, "parallel": 4, "per_problem_timeout_s": 40.0,
            "child_timeout_s": 90.0},
    memory_gb=8.0,
    default_budget_s=3600.0,
    scoring_timeout_s=180.0,
)

# What a score tells the agent (scoring.py): validity is decided before the solution sees a
# held-out problem; a valid score shows the solved fraction and counts, nothing per problem.
FEEDBACK = Feedback(
    reasons={
        "no_solution": "solution.py is missing from the submission",
        "import_failed": "solution.py failed to import, or does not define `async def "
        "generate_solution(client, semaphore, problem)` (checked before any held-out problem "
        "is given to it; run evaluate.py to see the error)",
    },
    numbers={"fraction_solved": 4, "solved": 0, "problems": 0},
)

SPEC = EnvironmentSpec(
    id="rust_codecontests_inference",
    version="1.4.1",
    title="Scaffolding for Rust Codecontests",
    direction=Direction.HIGHER,
    raw_score_meaning="fraction of held-out problems whose returned Rust program passes all "
    "public, private and generated tests",
    profiles={"cpu": CPU, "gpu": GPU, "test": TEST},
    solutions={
        "starting": SolutionRecipe("starting"),
        "reference": SolutionRecipe("reference"),
        "expert": SolutionRecipe("expert"),
    },
    params_type=RustParams,
    aggregation=Aggregation.BEST,
    solution_globs=("*.py",),
    snapshot_max_bytes=4 * 1024 * 1024,
    child_modules=("child_runner",),
    feedback=FEEDBACK,
    paper_starting_raw=0.0,
    paper_reference_raw=0.12727272727272726,
)
