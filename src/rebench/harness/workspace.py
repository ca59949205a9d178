"""Workspaces: the starting files and public assets an agent gets, and named solutions."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from rebench.core.discovery import environment_dir
from rebench.core.errors import NotPreparedError, RunError
from rebench.core.paths import PREPARED_MARKER, env_cache_dir
from rebench.core.spec import EnvironmentSpec, Profile, ServiceContext, SolutionRecipe
from rebench.harness.built import build_or_reuse
from rebench.sandbox import ExecResult, Isolation, SandboxConfig, make_sandbox
from rebench.scoring.context import profile_limits
from rebench.services.host import ServiceHost


def assets_ready(spec: EnvironmentSpec, profile: Profile) -> bool:
    return (env_cache_dir(spec.id, profile.name) / PREPARED_MARKER).is_file()


def require_prepared(spec: EnvironmentSpec, profile: Profile) -> Path:
    assets = env_cache_dir(spec.id, profile.name)
    if not assets_ready(spec, profile):
        raise NotPreparedError(
            f"{spec.id} ({profile.name}) is not prepared: run "
            f"`rebench prepare {spec.id} --profile {profile.name}`"
        )
    return assets


def _copy_tree(src: Path, dest: Path) -> None:
    for path in sorted(src.rglob("*")):
        if "__pycache__" in path.parts:
            continue
        target = dest / path.relative_to(src)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)


def populate_workspace(spec: EnvironmentSpec, profile: Profile, workspace: Path) -> None:
    """Copy the starting files and the profile's public assets into `workspace`."""
    assets = require_prepared(spec, profile)
    workspace.mkdir(parents=True, exist_ok=True)
    _copy_tree(environment_dir(spec.id) / spec.solutions["starting"].folder, workspace)
    public = assets / "public"
    if public.is_dir():
        _copy_tree(public, workspace)


def copy_solution_files(spec: EnvironmentSpec, name: str, workspace: Path) -> SolutionRecipe:
    """Overlay the files of solution `name` (starting, reference, expert) on a workspace."""
    try:
        recipe = spec.solutions[name]
    except KeyError:
        known = ", ".join(sorted(spec.solutions))
        raise RunError(f"{spec.id} has no solution {name!r} (known: {known})") from None
    _copy_tree(environment_dir(spec.id) / recipe.folder, workspace)
    return recipe


def recipe_command(recipe: SolutionRecipe) -> str:
    """The shell command that builds a solution in its workspace ("" when none)."""
    return " ".join(recipe.run)


def check_recipe_result(spec: EnvironmentSpec, name: str, result: ExecResult) -> None:
    """Raise RunError if a solution's build command failed: a reference that cannot be
    built is a harness problem, not a bad submission."""
    if result.returncode != 0 or result.timed_out:
        command = recipe_command(spec.solutions[name])
        raise RunError(
            f"{spec.id}: solution {name} failed to build ({command!r}, exit "
            f"{result.returncode}, timed out={result.timed_out}):\n{result.stderr[-2000:]}"
        )


def run_recipe(spec: EnvironmentSpec, profile: Profile, name: str, workspace: Path,
               isolation: Isolation) -> None:
    """Run solution `name`'s build command (if any) in `workspace`, in a sandbox under the
    profile's limits that is destroyed afterwards; RunError if it fails."""
    recipe = spec.solutions[name]
    if not recipe.run:
        return
    services = recipe_services(spec, profile)
    config = SandboxConfig(
        workdir=workspace, writable=True, network=profile.network, gpu=profile.gpus > 0,
        env={"REBENCH_PROFILE": profile.name, "REBENCH_ENV": spec.id},
        limits=profile_limits(profile), services_dir=services.socket_dir,
    )
    sandbox = make_sandbox(isolation, config)
    try:
        sandbox.create()
        result = sandbox.exec(recipe_command(recipe), timeout=recipe.run_timeout_s)
    finally:
        sandbox.destroy()
        services.close()
    check_recipe_result(spec, name, result)


def recipe_services(spec: EnvironmentSpec, profile: Profile) -> ServiceHost:
    """The environment's services for a solution build (a reference may call them as an
    agent would); their calls are not part of any run, so they are not logged."""
    def context(scratch: Path) -> ServiceContext:
        return ServiceContext(spec=spec, profile=profile,
                              assets_dir=env_cache_dir(spec.id, profile.name),
                              scratch_dir=scratch)

    host = ServiceHost(spec.services, context, lambda kind, fields: None)
    host.start()
    return host


def apply_starting_recipe(spec: EnvironmentSpec, profile: Profile, workspace: Path,
                          isolation: Isolation, rebuild: bool | None = None,
                          progress: Callable[[str], None] = lambda _msg: None) -> None:
    """Make a new run's workspace (just populated) hold the starting solution as submitted
    (e.g. copy the corrupted model to the file the scorer reads, or fine-tune it), so its
    t=0 score is the start's. Built once and kept, as materialize_solution does."""
    _build(spec, profile, "starting", workspace, isolation, rebuild, progress)


def _build(spec: EnvironmentSpec, profile: Profile, name: str, workspace: Path,
           isolation: Isolation, rebuild: bool | None,
           progress: Callable[[str], None]) -> None:
    recipe = spec.solutions[name]
    if recipe.run:
        build_or_reuse(spec, profile, name, workspace, isolation,
                       lambda: run_recipe(spec, profile, name, workspace, isolation),
                       recipe_command(recipe), recipe.run_timeout_s, rebuild, progress)


def materialize_solution(
    spec: EnvironmentSpec, profile: Profile, name: str, dest: Path, isolation: Isolation,
    rebuild: bool | None = None, progress: Callable[[str], None] = lambda _msg: None,
) -> Path:
    """A fresh workspace holding solution `name`, built and ready to be snapshotted and
    scored. A solution with a build command is built once (its recipe run in a sandbox
    that is destroyed afterwards) and kept (harness/built.py); later calls copy what the
    build made into their fresh workspace unless anything that determines the build
    changed, or `rebuild` (default: $REBENCH_REBUILD) asks for a new build. `progress`
    gets one line saying which of the two happens and where the build is kept."""
    populate_workspace(spec, profile, dest)  # holds the starting files already
    if name != "starting":  # so that the starting build starts where a run's does
        copy_solution_files(spec, name, dest)
    _build(spec, profile, name, dest, isolation, rebuild, progress)
    return dest
