"""The generic degenerate-policy test, run for every discovered environment from the
declarations in its folder (`rebench/environments/<id>/degenerate.py`, POLICIES): each
policy a lazy or hacking agent tries first is made from a fresh copy of the starting
files, scored through official scoring (the harness's sandboxed path, feedback schema
included) and must get its declared outcome: invalid, at most the start, or a message
that carries nothing the probe chose. The same for the known hacks an environment keeps
in its folder (CHEATS, files of its cheats/ folder): each written over a fresh workspace
and scored officially, it must be refused with its declared reason, or score no better than
the start, and leave no process behind. An environment added later is tested by being
added."""

from __future__ import annotations

import dataclasses
import math
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from env_bench import (
    EnvBench,
    declarations,
    fixture_environments,
    processes_mentioning,
    tested_environment_ids,
)

from rebench.core.calibration import resolve_anchors
from rebench.core.discovery import environment_dir, load_spec
from rebench.core.normalize import Anchors, normalize
from rebench.core.score import ScoreResult
from rebench.core.spec import Direction
from rebench.harness.evaluate import score_folder
from rebench.harness.prepare import prepare_environment
from rebench.harness.scoring import official_score, snapshot_solution
from rebench.harness.workspace import materialize_solution
from rebench.sandbox import default_isolation
from rebench.sandbox.bwrap import bwrap_available
from rebench.scoring.declarations import (
    DEFAULT_START_TOLERANCE,
    Cheat,
    Degenerate,
    Expect,
    MakeFn,
    PolicyContext,
    VerifyFn,
    cheats_folder,
    cheats_of,
)

pytestmark = pytest.mark.skipif(not bwrap_available(), reason="needs bubblewrap")


def _cases() -> Iterator[object]:
    with fixture_environments():
        for env_id in tested_environment_ids():
            module = declarations(env_id)
            for policy in getattr(module, "POLICIES", ()):
                for profile in policy.profiles:
                    if profile == "gpu":
                        continue  # the gpu ones run on a GPU machine (benchmarks/)
                    marks = [pytest.mark.slow] if policy.slow else []
                    if policy.expect is not Expect.AT_MOST_START:
                        # compares no time (the first pass of `make test` runs it, also
                        # for a timing environment: tests/suite_split.py)
                        marks.append(pytest.mark.untimed)
                    # cpu, or a small `test` profile where the policy's outcome does not
                    # depend on the cpu profile's size (issue 28)
                    suffix = "" if profile == "cpu" else f"@{profile}"
                    yield pytest.param(env_id, policy, profile,
                                       id=f"{env_id}-{policy.name}{suffix}", marks=marks)


def test_every_environment_declares_degenerate_policies() -> None:
    """Each environment declares its laziest policies and at least one channel probe."""
    missing, no_probe = [], []
    with fixture_environments():
        _check_declarations(missing, no_probe)
    assert not missing, f"no degenerate.py POLICIES: {missing}"
    assert not no_probe, f"no channel probe (expect=NO_CHANNEL) declared: {no_probe}"


def _check_declarations(missing: list[str], no_probe: list[str]) -> None:
    for env_id in tested_environment_ids():
        policies = getattr(declarations(env_id), "POLICIES", ())
        if not policies:
            missing.append(env_id)
        elif not any(p.expect is Expect.NO_CHANNEL for p in policies):
            no_probe.append(env_id)
    undeclared = [(env_id, p.name, r) for env_id in tested_environment_ids()
                  for p in getattr(declarations(env_id), "POLICIES", ())
                  for r in p.reasons if r not in load_spec(env_id).feedback.all_reasons]
    assert not undeclared, f"reasons not in the feedback schema: {undeclared}"


@pytest.fixture(scope="session")
def prepared() -> dict[str, Path]:
    """Assets per environment, prepared once per session (idempotent: the other tests of
    the session that prepared the same environment are reused). Session-scoped: under
    pytest-xdist this module's items run in their environments' units of work, between
    other modules' tests."""
    return {}


def _score(env_id: str, policy: Degenerate, profile_name: str, prepared: dict[str, Path],
           tmp_path: Path) -> ScoreResult:
    return _score_made(env_id, policy.make, policy.verify, profile_name, prepared, tmp_path)


def _score_made(env_id: str, make: MakeFn, verify: VerifyFn | None, profile_name: str,
                prepared: dict[str, Path], tmp_path: Path, base: str | None = None
                ) -> ScoreResult:
    """`make` run over a fresh copy of the starting files (a policy), or over a fresh
    workspace of solution `base` as a run's is (a cheat: the starting files or another
    solution's, the public assets, built), snapshotted and scored officially."""
    spec = load_spec(env_id)
    profile = spec.profile(profile_name)
    key = f"{env_id}/{profile_name}"
    if key not in prepared:
        prepared[key] = prepare_environment(spec, profile)
    workspace, scratch = tmp_path / "workspace", tmp_path / "scratch"
    scratch.mkdir()
    if base is None:
        shutil.copytree(environment_dir(env_id) / spec.solutions["starting"].folder, workspace)
    else:
        materialize_solution(spec, profile, base, workspace, default_isolation())
    ctx = PolicyContext(spec=spec, profile=profile, public_dir=prepared[key] / "public",
                        workspace=workspace, scratch=scratch)
    make(ctx)
    if verify is not None:
        verify(ctx)  # the submission does what the declaration says it does
    snapshot = tmp_path / "snapshot"
    snapshot_solution(spec, workspace, snapshot)
    return official_score(spec, profile, snapshot, default_isolation())


_START_HERE: dict[tuple[str, str], list[float]] = {}


def _best(raws: list[float], env_id: str) -> float:
    """The best of repeated timings: on a shared machine interference only adds time."""
    return min(raws) if load_spec(env_id).direction is Direction.LOWER else max(raws)


def _is_timed(env_id: str, profile_name: str) -> bool:
    return load_spec(env_id).profile(profile_name).calibration_sd_limit is not None


def _measure_start(env_id: str, profile_name: str, tmp_path: Path) -> None:
    spec = load_spec(env_id)
    profile = spec.profile(profile_name)
    folder = tmp_path / f"start{len(_START_HERE.setdefault((env_id, profile_name), []))}"
    workspace = materialize_solution(spec, profile, "starting", folder, default_isolation())
    start = score_folder(spec, profile, workspace, default_isolation())
    assert start.valid, start.details
    _START_HERE[env_id, profile_name].append(start.raw)


def _anchors_here(env_id: str, profile_name: str, env_bench: EnvBench, tmp_path: Path
                  ) -> Anchors:
    """The anchors in force, with a timing environment's start measured on this machine
    (best of the measurements so far: first the session's anchor scorings, which the
    golden test shares, tests/env_bench.py): a policy is compared with the start as this
    machine runs it, not with a start measured on a faster or slower day."""
    spec = load_spec(env_id)
    anchors = resolve_anchors(spec, spec.profile(profile_name))
    if not _is_timed(env_id, profile_name):
        return anchors
    starts_here = _START_HERE.setdefault((env_id, profile_name), [])
    if not starts_here and profile_name == "cpu":
        starts = env_bench.anchor_results(env_id)[0]
        starts_here += [r.raw for r in starts if r.valid]
        assert starts_here, [r.details for r in starts]
    elif not starts_here:  # another profile (a small `test` one): its start timed here
        _measure_start(env_id, profile_name, tmp_path)
    return dataclasses.replace(anchors, starting_raw=_best(starts_here, env_id))


@pytest.mark.parametrize(("env_id", "policy", "profile_name"), list(_cases()))
def test_degenerate_policy_gains_nothing(env_id: str, policy: Degenerate, profile_name: str,
                                         prepared: dict[str, Path], tmp_path: Path,
                                         env_bench: EnvBench) -> None:
    spec = load_spec(env_id)
    result = _score(env_id, policy, profile_name, prepared, tmp_path)
    shown = result.message
    # Whatever the outcome, the agent sees only a rendering of the declared schema.
    assert spec.feedback.conforms(shown), shown
    if policy.reasons and not result.valid:
        assert shown.get("reason") in policy.reasons, (shown, result.details)
    if policy.expect is Expect.INVALID:
        assert not result.valid, f"{policy.name} scored raw {result.raw}: {shown}"
    elif policy.hole:
        # A known gain, written down where `hole` says: it must still gain, so that the
        # day it is closed the declaration is corrected (and the policy defended from then).
        anchors = _anchors_here(env_id, profile_name, env_bench, tmp_path)
        score = normalize(result.raw, anchors, spec.direction)
        tolerance = _start_tolerance(env_id)
        assert result.valid and score > tolerance, (
            f"{policy.name}, declared a known hole ({policy.hole}), scored {score:.3f} "
            "normalized: the hole looks closed; remove `hole` from its declaration")
    elif policy.expect is Expect.AT_MOST_START and result.valid:
        def again(where: Path) -> ScoreResult:
            return _score(env_id, policy, profile_name, prepared, where)

        _assert_at_most_start(env_id, profile_name, policy.name, result, again, None,
                              env_bench, tmp_path)
    elif policy.expect is Expect.NO_CHANNEL:
        leftovers = set(shown) - {"valid", "reason", "text", *spec.feedback.numbers,
                                  *spec.feedback.flags}
        assert not leftovers, leftovers


def _start_tolerance(env_id: str) -> float:
    """How far above the start a policy may score: the environment's START_TOLERANCE."""
    return float(getattr(declarations(env_id), "START_TOLERANCE", DEFAULT_START_TOLERANCE))


def _assert_at_most_start(env_id: str, profile_name: str, name: str, result: ScoreResult,
                          again: Callable[[Path], ScoreResult], tolerance: float | None,
                          env_bench: EnvBench, tmp_path: Path) -> None:
    """A valid result normalizes to at most the start plus the tolerance (the
    environment's START_TOLERANCE where None). A timing that looks better than the start
    is timed again, and the start with it, best of each: a 2-core CI machine runs the same
    pipeline 16-20 s apart from run to run."""
    spec = load_spec(env_id)
    if tolerance is None:
        tolerance = _start_tolerance(env_id)
    anchors = _anchors_here(env_id, profile_name, env_bench, tmp_path)
    score = normalize(result.raw, anchors, spec.direction)
    if _is_timed(env_id, profile_name) and not score <= tolerance:
        (tmp_path / "again").mkdir()
        second = again(tmp_path / "again")
        _measure_start(env_id, profile_name, tmp_path)
        anchors = _anchors_here(env_id, profile_name, env_bench, tmp_path)
        raws = [result.raw] + ([second.raw] if second.valid else [])
        score = normalize(_best(raws, env_id), anchors, spec.direction)
    assert math.isfinite(score) and score <= tolerance, (
        f"{name} scored {score:.3f} normalized (raw {result.raw}), above the start + "
        f"{tolerance} (anchors {anchors})")


# The known hacks each environment keeps in its folder (degenerate.py CHEATS, files of its
# cheats/ folder): each written over a fresh workspace and scored officially, as a policy.
def _cheat_cases() -> Iterator[object]:
    with fixture_environments():
        for env_id in tested_environment_ids():
            for cheat in cheats_of(env_id):
                for profile in cheat.profiles:
                    if profile == "gpu":
                        continue
                    marks = [pytest.mark.slow] if cheat.slow else []
                    if cheat.expect is Expect.INVALID:
                        marks.append(pytest.mark.untimed)  # compares no time
                    suffix = "" if profile == "cpu" else f"@{profile}"
                    yield pytest.param(env_id, cheat, profile, marks=marks,
                                       id=f"{env_id}-{cheat.label}{suffix}")


def test_every_cheat_file_is_declared() -> None:
    """Every file of an environment's cheats/ folder is declared, with its first lines
    saying what it tries, and every declared cheat exists; its reason is the schema's."""
    problems = []
    with fixture_environments():
        for env_id in tested_environment_ids():
            folder = cheats_folder(env_id)
            files = {p.name for p in folder.iterdir()
                     if p.is_file() and p.suffix != ".pyc"} if folder.is_dir() else set()
            declared = [c.file for c in cheats_of(env_id) if c.make is None]
            labels = [c.label for c in cheats_of(env_id)]
            reasons = load_spec(env_id).feedback.all_reasons
            problems += [f"{env_id}: {name} declared twice"
                         for name in sorted({n for n in labels if labels.count(n) > 1})]
            problems += [f"{env_id}: cheats/{name} is not declared in CHEATS"
                         for name in sorted(files - set(declared))]
            problems += [f"{env_id}: {name} is declared but not in cheats/"
                         for name in sorted(set(declared) - files)]
            problems += [f"{env_id}: {c.label}'s reason {c.reason!r} is not the schema's"
                         for c in cheats_of(env_id) if c.reason and c.reason not in reasons]
            problems += [f"{env_id}: cheats/{c.file} does not say what it tries (an "
                         "opening docstring or comment, else the declaration's why)"
                         for c in cheats_of(env_id)
                         if c.make is None and c.file in files and not c.why
                         and not _says_what_it_tries(folder / c.file)]
    assert not problems, "\n".join(problems)


def test_cheat_declaration_is_checked() -> None:
    Cheat("hang.py", "solution.py", reason="timeout", max_scoring_s=10.0)
    Cheat("lies.py", "src/solution.py", Expect.AT_MOST_START, tolerance=0.2)
    made = Cheat(name="nan_weights", make=_write_nothing, why="a NaN weight", reason="crash")
    assert made.label == "nan_weights" and Cheat("hang.py", "s.py").label == "hang"
    bad: list[dict[str, Any]] = [
        {"file": "a/b.py"}, {"file": ""}, {"expect": Expect.NO_CHANNEL},
        {"expect": Expect.AT_MOST_START, "reason": "crash"}, {"tolerance": 0.1},
        {"profiles": ()}, {"submit_as": "/solution.py"}, {"submit_as": "../solution.py"},
        {"submit_as": "./solution.py"}, {"submit_as": ""}, {"name": "named"}]
    for fields in bad:
        with pytest.raises(ValueError):
            Cheat(**{"file": "x.py", "submit_as": "solution.py", **fields})
    bad_made: list[dict[str, Any]] = [
        {"file": "x.py"}, {"submit_as": "solution.py"}, {"name": "not a name"},
        {"name": ""}, {"why": ""}, {"expect": Expect.NO_CHANNEL}, {"profiles": ()}]
    for fields in bad_made:
        with pytest.raises(ValueError):
            Cheat(**{"name": "made", "make": _write_nothing, "why": "w", **fields})


def _write_nothing(ctx: PolicyContext) -> None:
    """A made cheat's `make` for the declaration test (never run)."""


def _says_what_it_tries(path: Path) -> bool:
    """A docstring (Python) or a comment after the shebang (shell) opens the file."""
    if path.suffix not in (".py", ".sh"):
        return False
    lines = [line for line in path.read_text().splitlines()
             if line.strip() and not line.startswith("#!")]
    return bool(lines) and lines[0].lstrip().startswith(('"""', "#"))


@pytest.mark.parametrize(("env_id", "cheat", "profile_name"), list(_cheat_cases()))
def test_cheat_gains_nothing(env_id: str, cheat: Cheat, profile_name: str,
                             prepared: dict[str, Path], tmp_path: Path,
                             env_bench: EnvBench) -> None:
    spec = load_spec(env_id)
    source = cheats_folder(env_id) / cheat.file

    def copy_file(ctx: PolicyContext) -> None:
        target = ctx.workspace / cheat.submit_as
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        target.chmod(source.stat().st_mode & 0o777)

    make = cheat.make or copy_file

    def score(where: Path) -> ScoreResult:
        return _score_made(env_id, make, None, profile_name, prepared, where, cheat.base)

    result = score(tmp_path)
    shown = result.message
    assert spec.feedback.conforms(shown), shown
    if cheat.expect is Expect.INVALID:
        assert not result.valid, f"{cheat.label} scored raw {result.raw}: {shown}"
        if cheat.reason:
            assert shown.get("reason") == cheat.reason, (shown, result.details)
    elif result.valid:
        _assert_at_most_start(env_id, profile_name, cheat.label, result, score,
                              cheat.tolerance, env_bench, tmp_path)
    assert cheat.detail in str(result.details), (cheat.detail, result.details)
    if cheat.max_scoring_s is not None:
        assert result.details["scoring_wall_s"] < cheat.max_scoring_s, result.details
    # Nothing of the submission outlives its scoring (a cheat may leave a detached
    # grandchild); one that may kill its own scorer leaves its child to the sandbox's end.
    if not cheat.kills_scorer:
        assert processes_mentioning(str(tmp_path)) == []

