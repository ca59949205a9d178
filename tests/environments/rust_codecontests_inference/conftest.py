"""Fixtures of the rust_codecontests_inference tests: prepared assets, small scoring contexts."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from rust_cc_support import ENV_ID, bwrap_isolation

from rebench.core.discovery import load_spec
from rebench.core.spec import EnvironmentSpec
from rebench.environments.rust_codecontests_inference.judge import Judge
from rebench.environments.rust_codecontests_inference.scoring import sandboxed_runner
from rebench.environments.rust_codecontests_inference.toolchain import find_rustc, rustc_sysroot
from rebench.harness.prepare import prepare_environment
from rebench.sandbox import Isolation
from rebench.scoring.context import ScoringContext


@pytest.fixture(scope="session")
def spec() -> EnvironmentSpec:
    return load_spec(ENV_ID)


@pytest.fixture(scope="session")
def prepared(spec: EnvironmentSpec) -> Path:
    """The cpu profile's assets, prepared once per test session."""
    return prepare_environment(spec, spec.profile("cpu"))


@pytest.fixture(scope="session")
def prepared_test(spec: EnvironmentSpec) -> Path:
    """The small `test` profile's assets (8 held-out problems), prepared once per session:
    for plumbing tests whose outcome does not depend on the cpu profile's 32 problems."""
    return prepare_environment(spec, spec.profile("test"))


@pytest.fixture
def small_context(spec: EnvironmentSpec, prepared: Path, tmp_path: Path
                  ) -> Callable[..., ScoringContext]:
    """A scoring context on the first few held-out problems with short time limits, for
    scoring a solution file in-process (the scorer is trusted code)."""

    def make(solution: Path, n: int = 3, isolation: Isolation = Isolation.LOCAL,
             **params: Any) -> ScoringContext:
        assets = tmp_path / "assets"
        (assets / "protected").mkdir(parents=True)
        lines = (prepared / "protected" / "test.jsonl").read_text().splitlines()[:n]
        (assets / "protected" / "test.jsonl").write_text("\n".join(lines) + "\n")
        shutil.copyfile(prepared / "protected" / "secret.bin",  # the scorer's seed
                        assets / "protected" / "secret.bin")
        snapshot = tmp_path / "snapshot"
        snapshot.mkdir()
        shutil.copyfile(solution, snapshot / "solution.py")
        scratch = tmp_path / "scratch"
        scratch.mkdir()
        base = spec.profile("cpu")
        merged = {**base.params, "per_problem_timeout_s": 10.0, "child_timeout_s": 30.0, **params}
        profile = dataclasses.replace(base, params=merged)
        return ScoringContext(spec=spec, profile=profile, solution_dir=snapshot,
                              assets_dir=assets, scratch_dir=scratch, isolation=isolation)

    return make


@pytest.fixture
def sandboxed_judge(spec: EnvironmentSpec, tmp_path: Path) -> Iterator[Callable[..., Judge]]:
    """Judges whose every process goes through the official scorer's runner under bwrap
    (rebench's untrusted runner: the cpu profile's limits, `hidden` paths invisible);
    the test is skipped where bwrap is not available."""
    contexts: list[ScoringContext] = []

    def make(hidden: Sequence[Path] = (), static_checks: bool = True) -> Judge:
        isolation = bwrap_isolation()
        if isolation is None:
            pytest.skip("the bwrap sandbox is not available here")
        ctx = ScoringContext(spec=spec, profile=spec.profile("cpu"),
                             solution_dir=tmp_path / "solution", assets_dir=tmp_path / "assets",
                             scratch_dir=tmp_path / "scratch", isolation=isolation,
                             hidden=tuple(hidden))
        contexts.append(ctx)
        rustc = find_rustc()
        return Judge(tmp_path / "build", sandboxed_runner(ctx, (rustc_sysroot(rustc),)),
                     rustc=rustc, static_checks=static_checks)

    yield make
    for ctx in contexts:
        ctx.close()
