"""The minimal child runtime: the few rebench modules that must run inside a sandbox.

Sandboxes do not mount the rebench package (its environments hold scorers, problem
generators and asset builders). What must run inside, the command server of persistent
sandboxes and the untrusted-child modules an environment names in `child_modules`, is
copied into a fresh read-only folder mounted at RUNTIME_MOUNT and put first on PYTHONPATH.
Every package `__init__.py` there is empty, so importing a listed module brings in nothing
else of rebench. Listed modules may import only the standard library, third-party packages
and other listed modules.
"""

from __future__ import annotations

import atexit
import functools
import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

# Where the runtime folder appears inside every sandbox.
RUNTIME_MOUNT = "/opt/rebench-runtime"
# Always present: the persistent sandbox's command server and its helpers.
CORE_MODULES = ("rebench.sandbox.inner", "rebench.sandbox.process", "rebench.sandbox.base",
                "rebench.sandbox.limits", "rebench.sandbox.proctree", "rebench.services.client")
# Commands on PATH inside every sandbox: name -> the runtime module whose main(argv) runs.
COMMANDS = {"rebench-service": "rebench.services.client"}


class RuntimeModuleError(RuntimeError):
    """A module named for the child runtime does not exist as a plain source file."""


def _source_of(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        raise RuntimeModuleError(f"{module} is not a plain Python module")
    return Path(spec.origin)


def _place(root: Path, module: str) -> None:
    parts = module.split(".")
    folder = root
    for name in parts[:-1]:
        folder = folder / name
        folder.mkdir(exist_ok=True)
        (folder / "__init__.py").touch()
    shutil.copyfile(_source_of(module), folder / f"{parts[-1]}.py")


@functools.cache
def runtime_dir(modules: tuple[str, ...]) -> Path:
    """A folder holding CORE_MODULES and `modules` (dotted names), made once per process
    and set of modules, removed when the process exits."""
    root = Path(tempfile.mkdtemp(prefix="rebench-runtime-"))
    for module in sorted({*CORE_MODULES, *modules}):
        _place(root, module)
    (root / "bin").mkdir()
    for command, module in COMMANDS.items():
        (root / "bin" / command).write_text(
            f"#!{sys.executable} -IS\nimport sys\nsys.path.insert(0, {RUNTIME_MOUNT!r})\n"
            f"from {module} import main\nsys.exit(main(sys.argv[1:]))\n")
    for path in [root, *root.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() or path.parent.name == "bin" else 0o644)
    atexit.register(shutil.rmtree, root, True)
    return root


def env_child_modules(env_id: str, names: Iterable[str]) -> tuple[str, ...]:
    """Dotted names of an environment's child modules (`child_modules` of its spec)."""
    return tuple(f"rebench.environments.{env_id}.{name}" for name in names)


__all__ = ["CORE_MODULES", "RUNTIME_MOUNT", "RuntimeModuleError", "env_child_modules",
           "runtime_dir"]
