"""Session-wide, keyed work on real environments that several tests share (the `env_bench`
fixture of tests/conftest.py): an environment's official scoring of one of its own
solutions, and a timing environment's anchors measured on this machine. Each is made once
per test session and key, whichever test asks first: the generic golden test and an
environment's own cheat tests read the same local anchors instead of timing the start and
the reference again. Prepares and built solutions are shared below this, by the cache
(harness/prepare.py, harness/built.py)."""

from __future__ import annotations

import contextlib
import math
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import pytest

from rebench.core.calibration import resolve_anchors
from rebench.core.discovery import environment_ids, load_spec
from rebench.core.normalize import Anchors, AnchorSource
from rebench.core.score import ScoreResult
from rebench.core.spec import Direction
from rebench.harness.prepare import prepare_environment
from rebench.harness.scoring import official_score, snapshot_solution
from rebench.harness.workspace import materialize_solution
from rebench.sandbox import default_isolation
from rebench.scoring.declarations import Golden, Secrets, declarations_of

PROFILE = "cpu"
# Environments kept outside the package, for tests: toy_probe (a hidden number found with a
# metered service; deterministic, scores in a blink) stands in for a real environment where
# a test is about the harness, not about an environment's scorer. The generic tests test
# it like any other, from its folder's declarations.
FIXTURE_ENVIRONMENTS = Path(__file__).resolve().parent / "fixtures" / "environments"


def path_with_fixture_environments() -> str:
    """$REBENCH_ENVIRONMENTS_PATH with the fixture environments' folder first."""
    saved = os.environ.get("REBENCH_ENVIRONMENTS_PATH")
    return os.pathsep.join(p for p in (str(FIXTURE_ENVIRONMENTS), saved) if p)


@contextlib.contextmanager
def fixture_environments() -> Iterator[None]:
    """The fixture environments discoverable (by this process and its children) for the
    block: $REBENCH_ENVIRONMENTS_PATH names their folder."""
    saved = os.environ.get("REBENCH_ENVIRONMENTS_PATH")
    os.environ["REBENCH_ENVIRONMENTS_PATH"] = path_with_fixture_environments()
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("REBENCH_ENVIRONMENTS_PATH", None)
        else:
            os.environ["REBENCH_ENVIRONMENTS_PATH"] = saved


def tested_environment_ids() -> list[str]:
    """Every environment the generic tests run: the package's and the fixture ones."""
    with fixture_environments():
        return environment_ids()


# Its name starts with "test": without this, pytest collects it as a test in every module
# that imports it (a warning and a test that checks nothing).
tested_environment_ids.__test__ = False  # type: ignore[attr-defined]


def is_fixture_environment(env_id: str) -> bool:
    return (FIXTURE_ENVIRONMENTS / env_id / "environment.py").is_file()


def declarations(env_id: str) -> ModuleType | None:
    """The environment's declarations for the generic tests (its degenerate.py: GOLDEN,
    POLICIES, SECRETS, CHEATS; rebench/scoring/declarations.py), or None where it has
    none. A fixture environment must be discoverable (fixture_environments) when it is
    asked for."""
    return declarations_of(env_id)


def golden_of(env_id: str) -> Golden | None:
    """The environment's GOLDEN declaration (its degenerate.py), or None."""
    golden = getattr(declarations(env_id), "GOLDEN", None)
    return golden if isinstance(golden, Golden) else None


def secrets_of(env_id: str) -> Secrets | None:
    """The environment's SECRETS declaration (its degenerate.py), or None."""
    secrets = getattr(declarations(env_id), "SECRETS", None)
    return secrets if isinstance(secrets, Secrets) else None


def is_timed(env_id: str) -> bool:
    return load_spec(env_id).profile(PROFILE).calibration_sd_limit is not None


@dataclass
class EnvBench:
    """Scorings and anchors of the session, keyed by environment (cpu profile)."""

    tmp: pytest.TempPathFactory
    _anchor_results: dict[str, tuple[list[ScoreResult], list[ScoreResult]]] = field(
        default_factory=dict)

    def prepared(self, env_id: str) -> Path:
        spec = load_spec(env_id)
        return prepare_environment(spec, spec.profile(PROFILE))

    def score(self, env_id: str, solution: str, into: Path) -> tuple[ScoreResult, Path]:
        """A fresh official scoring of solution `solution`: built as a run's workspace is
        (a build is kept and reused: harness/built.py), snapshotted into `into`/snapshot,
        scored by the scorer process under the default isolation. The workspace is removed
        once snapshotted (the suite's disk: pyproject.toml's tmp_path_retention_policy).
        Returns the result and the snapshot."""
        spec = load_spec(env_id)
        profile = spec.profile(PROFILE)
        self.prepared(env_id)
        isolation = default_isolation()
        workspace = materialize_solution(spec, profile, solution, into / "workspace",
                                         isolation)
        snapshot = into / "snapshot"
        try:
            snapshot_solution(spec, workspace, snapshot)
        finally:
            shutil.rmtree(workspace, ignore_errors=True)
        return official_score(spec, profile, snapshot, isolation), snapshot

    def score_only(self, env_id: str, solution: str) -> ScoreResult:
        """The same scoring, its snapshot removed: for a result alone (an anchor)."""
        into = self.tmp.mktemp(f"{env_id}-{solution}")
        try:
            return self.score(env_id, solution, into)[0]
        finally:
            shutil.rmtree(into, ignore_errors=True)

    def anchor_results(self, env_id: str) -> tuple[list[ScoreResult], list[ScoreResult]]:
        """The start's and the reference's scorings that a timing environment's local
        anchors are made of (GOLDEN.anchor_repeats each), made once per session."""
        if env_id not in self._anchor_results:
            golden = golden_of(env_id)
            repeats = golden.anchor_repeats if golden is not None else 1
            self._anchor_results[env_id] = (
                [self.score_only(env_id, "starting") for _ in range(repeats)],
                [self.score_only(env_id, "reference") for _ in range(repeats)])
        return self._anchor_results[env_id]

    def add_anchor_scoring(self, env_id: str, solution: str, result: ScoreResult) -> None:
        """Count a fresh scoring of the start or the reference among a timing
        environment's anchor scorings (the best of all of them is kept): a start that ran
        faster now than in the first scorings is the start as this machine runs it."""
        start, reference = self.anchor_results(env_id)
        {"starting": start, "reference": reference}[solution].append(result)

    def anchors(self, env_id: str) -> Anchors:
        """The anchors a golden or cheat test normalizes with: a timing environment's
        measured here (the best of its anchor scorings), any other's in force."""
        spec = load_spec(env_id)
        if not is_timed(env_id):
            self.prepared(env_id)  # a prepare may record the anchors (small_scaling_law)
            return resolve_anchors(spec, spec.profile(PROFILE))
        start, reference = self.anchor_results(env_id)
        for result in start + reference:
            assert result.valid, result.message
        best = min if spec.direction is Direction.LOWER else max
        start_raw = best(r.raw for r in start)
        reference_raw = best(r.raw for r in reference)
        assert math.isfinite(start_raw) and math.isfinite(reference_raw)
        ahead = (reference_raw < start_raw if spec.direction is Direction.LOWER
                 else reference_raw > start_raw)
        assert ahead, f"{env_id}: the reference ({reference_raw}) is not ahead of the " \
                      f"start ({start_raw}) on this machine"
        return Anchors(start_raw, reference_raw, AnchorSource.CALIBRATION, "this machine")

def processes_mentioning(text: str) -> list[int]:
    """Pids of other processes whose command line contains `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if text.encode() in cmdline:
            found.append(int(entry.name))
    return found
