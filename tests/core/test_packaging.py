"""What the wheel holds: the package discovery of pyproject.toml, as setuptools reads it."""

from __future__ import annotations

import tomllib
from pathlib import Path

from setuptools import find_namespace_packages

ROOT = Path(__file__).resolve().parents[2]


def test_no_cheats_folder_is_a_package_of_the_wheel() -> None:
    """An environment's cheats/ folder is test material (known hacks for the generic cheat
    test). setuptools' discovery takes folders without __init__.py as namespace packages,
    so without the exclusion a built wheel shipped every cheat file."""
    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"]["find"]
    packages = find_namespace_packages(where=str(ROOT / find["where"][0]),
                                       exclude=find.get("exclude", ()))
    folders = sorted(p.parent.relative_to(ROOT / "src").as_posix().replace("/", ".")
                     for p in (ROOT / "src").glob("rebench/environments/*/cheats/*"))
    assert folders, "no cheats/ folder found: the test looks in the wrong place"
    assert "rebench.environments.triton_cumsum" in packages
    assert not [p for p in packages if p.endswith(".cheats") or ".cheats." in p]
