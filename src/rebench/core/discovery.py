"""Environment discovery by folder convention: environments/<id>/environment.py holds SPEC."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from rebench.core.errors import SpecError, UnknownEnvironmentError
from rebench.core.spec import EnvironmentSpec

ENVIRONMENTS_DIR = Path(__file__).resolve().parent.parent / "environments"
REQUIRED_FILES = (
    "environment.py",
    "instructions.md",
    "scoring.py",
    "prepare.py",
    "README.md",
)
REQUIRED_DIRS = ("starting", "reference")


@dataclass(frozen=True)
class EnvironmentProblem:
    """One thing wrong with an environment folder."""

    env_id: str
    problem: str


def environment_ids(root: Path = ENVIRONMENTS_DIR) -> list[str]:
    """Ids of every folder under environments/ that has an environment.py."""
    return sorted(
        p.name for p in root.iterdir() if p.is_dir() and (p / "environment.py").is_file()
    )


def environment_dir(env_id: str, root: Path = ENVIRONMENTS_DIR) -> Path:
    path = root / env_id
    if not env_id.isidentifier() or not (path / "environment.py").is_file():
        known = ", ".join(environment_ids(root)) or "none"
        raise UnknownEnvironmentError(f"unknown environment {env_id!r} (known: {known})")
    return path


def load_spec(env_id: str) -> EnvironmentSpec:
    """Import environments/<env_id>/environment.py and return its SPEC."""
    environment_dir(env_id)
    module = importlib.import_module(f"rebench.environments.{env_id}.environment")
    spec = getattr(module, "SPEC", None)
    if not isinstance(spec, EnvironmentSpec):
        raise SpecError(f"{env_id}/environment.py must define SPEC = EnvironmentSpec(...)")
    if spec.id != env_id:
        raise SpecError(f"{env_id}/environment.py: SPEC.id is {spec.id!r}, not the folder name")
    return spec


def all_specs() -> list[EnvironmentSpec]:
    return [load_spec(env_id) for env_id in environment_ids()]


def validate_environment(env_id: str) -> list[EnvironmentProblem]:
    """Everything missing or malformed in one environment folder (empty when it is sound)."""
    path = ENVIRONMENTS_DIR / env_id
    problems = [
        EnvironmentProblem(env_id, f"missing file {name}")
        for name in REQUIRED_FILES
        if not (path / name).is_file()
    ]
    problems += [
        EnvironmentProblem(env_id, f"missing folder {name}/")
        for name in REQUIRED_DIRS
        if not (path / name).is_dir()
    ]
    if problems:
        return problems
    try:
        spec = load_spec(env_id)
    except Exception as exc:  # any import error is a problem to report, not to raise
        return [EnvironmentProblem(env_id, f"spec does not load: {exc!r}")]
    for name, recipe in spec.solutions.items():
        if not (path / recipe.folder).is_dir():
            problems.append(
                EnvironmentProblem(env_id, f"solution {name}: no folder {recipe.folder}/")
            )
    scoring = importlib.import_module(f"rebench.environments.{env_id}.scoring")
    if not callable(getattr(scoring, "score", None)):
        problems.append(EnvironmentProblem(env_id, "scoring.py must define score()"))
    prepare = importlib.import_module(f"rebench.environments.{env_id}.prepare")
    if not callable(getattr(prepare, "prepare", None)):
        problems.append(EnvironmentProblem(env_id, "prepare.py must define prepare()"))
    return problems
