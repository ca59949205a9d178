"""Cheating and broken submissions score NaN or no better than the start (0), with a clear
message, and the scorer finishes within its time limit: the hangs, with limits of seconds,
and the controls showing that the declared cheats are real without a sandbox. The declared
cheats themselves (degenerate.py, CHEATS; files of the environment's cheats/ folder) are
scored officially by the generic cheat test (tests/environments/test_degenerate_policies.py)."""

from __future__ import annotations

import math
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from rust_cc_support import CHEATS, DECLARED_CHEATS, ENV_DIR, bwrap_isolation

from rebench.environments.rust_codecontests_inference import scoring
from rebench.scoring.context import ScoringContext


def _score(make: Callable[..., ScoringContext], name: str, **kw: object) -> tuple[object, float]:
    folder = CHEATS if (CHEATS / f"{name}.py").is_file() else DECLARED_CHEATS
    ctx = make(folder / f"{name}.py", **kw)
    start = time.monotonic()
    result = scoring.score(ctx)
    return result, time.monotonic() - start


def test_generate_solution_that_never_returns_times_out_per_problem(
        small_context: Callable[..., ScoringContext]) -> None:
    result, elapsed = _score(small_context, "never_returns", per_problem_timeout_s=2.0)
    assert result.raw == 0.0  # type: ignore[attr-defined]
    assert result.details["verdicts"] == {"no_answer": 3}  # type: ignore[attr-defined]
    assert elapsed < 25


def test_blocking_solution_is_killed_at_the_overall_limit(
        small_context: Callable[..., ScoringContext]) -> None:
    result, elapsed = _score(small_context, "blocks_forever", child_timeout_s=5.0)
    assert result.raw == 0.0  # type: ignore[attr-defined]
    assert result.details["solution_timed_out"] is True  # type: ignore[attr-defined]
    assert "solution_timed_out" not in result.message  # type: ignore[attr-defined]
    assert elapsed < 30


def test_missing_solution_file_is_invalid(small_context: Callable[..., ScoringContext],
                                          tmp_path: Path) -> None:
    ctx = small_context(CHEATS / "never_returns.py")
    (ctx.solution_dir / "solution.py").unlink()
    result = scoring.score(ctx)
    assert math.isnan(result.raw) and result.message == {"error": "no_solution"}


def test_reading_the_held_out_file_works_without_a_sandbox(
        small_context: Callable[..., ScoringContext]) -> None:
    """The control for the declared read_heldout: the cheat is real, only the sandbox stops
    it."""
    result, _ = _score(small_context, "read_heldout")
    assert result.raw == 1.0  # type: ignore[attr-defined]


def test_starting_solution_file_is_the_environment_s(small_context: Callable[..., ScoringContext]
                                                     ) -> None:
    result = scoring.score(small_context(ENV_DIR / "starting" / "solution.py"))
    assert result.raw == 0.0
    # The model's whole answer as the program: prose does not compile, and the odd answer
    # in C++ (`#include`) is refused before compiling; which one, the scorer's seed decides.
    verdicts = result.details["verdicts"]
    assert set(verdicts) <= {"compile_error", "forbidden"} and sum(verdicts.values()) == 3
    assert "SIMULATED" in result.details["model"]


def test_rebuilding_held_out_problems_from_the_package_gains_nothing(
        small_context: Callable[..., ScoringContext]) -> None:
    """Without any sandbox (the package is importable): public code and seeds are not enough.
    The cheat rebuilds once, in the run's folder (not in the import check); the limit leaves
    it time to finish, and an empty answer for every problem shows it ran and missed."""
    result, _ = _score(small_context, "rebuild_from_package", child_timeout_s=120.0)
    assert result.raw == 0.0, result.message  # type: ignore[attr-defined]
    assert result.details["solution_timed_out"] is False  # type: ignore[attr-defined]
    assert result.details["verdicts"] == {"empty": 3}  # type: ignore[attr-defined]


def test_the_sandbox_cannot_import_the_package(
        small_context: Callable[..., ScoringContext]) -> None:
    """Why families_from_package (declared, scored officially) gains nothing under bwrap:
    the allow-list sandbox has no rebench internals."""
    isolation = bwrap_isolation()
    if isolation is None:
        pytest.skip("the bwrap sandbox is not available here")
    ctx = small_context(DECLARED_CHEATS / "families_from_package.py", isolation=isolation)
    probe = subprocess.run(ctx.untrusted_argv(
        [sys.executable, "-c", "import rebench.environments.rust_codecontests_inference.problems"],
        workdir=ctx.scratch_dir, gpu=False), capture_output=True, timeout=60)
    assert probe.returncode != 0


def test_family_code_from_the_package_works_without_a_sandbox(
        small_context: Callable[..., ScoringContext]) -> None:
    """The control for the declared families_from_package: the families are public code;
    only the sandbox keeps a solution from importing them (README, known limitations)."""
    result, _ = _score(small_context, "families_from_package")
    assert result.raw == 1.0  # type: ignore[attr-defined]
