"""Environment discovery by folder convention: environments/<id>/environment.py holds SPEC."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from rebench.core.errors import SpecError, UnknownEnvironmentError
from rebench.core.paths import extra_environment_dirs
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


def environment_roots() -> list[Path]:
    """Where environments are found: the package's environments/, then the folders of
    $REBENCH_ENVIRONMENTS_PATH (environments kept outside rebench; the first wins)."""
    return [ENVIRONMENTS_DIR, *extra_environment_dirs()]


def _extend_package() -> None:
    """Let `rebench.environments.<id>` import environments from the extra folders."""
    import rebench.environments as package

    for folder in extra_environment_dirs():
        if str(folder) not in package.__path__:
            package.__path__.append(str(folder))


def environment_ids(root: Path | None = None) -> list[str]:
    """Ids of every folder with an environment.py (under `root`, or every root)."""
    roots = [root] if root is not None else environment_roots()
    return sorted({
        p.name for r in roots if r.is_dir() for p in r.iterdir()
        if p.is_dir() and p.name.isidentifier() and (p / "environment.py").is_file()
    })


def environment_dir(env_id: str, root: Path | None = None) -> Path:
    """The folder of environment `env_id`; UnknownEnvironmentError if there is none."""
    roots = [root] if root is not None else environment_roots()
    for base in roots:
        path = base / env_id
        if env_id.isidentifier() and (path / "environment.py").is_file():
            return path
    known = ", ".join(environment_ids(root)) or "none"
    raise UnknownEnvironmentError(f"unknown environment {env_id!r} (known: {known})")


def load_spec(env_id: str) -> EnvironmentSpec:
    """Import environments/<env_id>/environment.py and return its SPEC."""
    environment_dir(env_id)
    _extend_package()
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
    try:
        path = environment_dir(env_id)
    except UnknownEnvironmentError:
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
