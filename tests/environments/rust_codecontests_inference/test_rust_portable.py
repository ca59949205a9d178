"""Code that runs inside a sandbox imports no `rebench`: the child module listed in the spec
imports only the standard library, third-party packages and other listed child modules, and
the local evaluate tool runs from the workspace alone (with `rebench` made unimportable)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from rust_cc_support import ENV_DIR

from rebench.core.pyparse import parse_python
from rebench.core.spec import EnvironmentSpec
from rebench.environments.rust_codecontests_inference.prepare import EVAL_MODULES
from rebench.harness.workspace import materialize_solution
from rebench.sandbox import Isolation

THIRD_PARTY = {"openai"}


def _imports(path: Path) -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    for node in ast.walk(parse_python(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(alias.name, 0) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.module or "", node.level))
    return found


def test_child_modules_import_only_stdlib_third_party_and_each_other(
        spec: EnvironmentSpec) -> None:
    assert "child_runner" in spec.child_modules
    for name in spec.child_modules:
        for module, level in _imports(ENV_DIR / f"{name}.py"):
            top = module.split(".")[0]
            if level:
                assert top in spec.child_modules, (name, module)
            else:
                assert top in sys.stdlib_module_names or top in THIRD_PARTY, (name, module)


def test_evaluate_tool_modules_are_portable() -> None:
    for name in EVAL_MODULES:
        for module, level in _imports(ENV_DIR / f"{name}.py"):
            top = module.split(".")[0]
            assert level or top in sys.stdlib_module_names or top in THIRD_PARTY, (name, module)
            if level:
                assert top in EVAL_MODULES, (name, module)


def test_evaluate_tool_runs_from_the_workspace_without_rebench(
        spec: EnvironmentSpec, prepared: Path, tmp_path: Path) -> None:
    workspace = materialize_solution(spec, spec.profile("cpu"), "reference", tmp_path / "ws",
                                     Isolation.LOCAL)
    assert (workspace / "rust_eval" / "params.json").is_file()
    blocker = tmp_path / "block"
    blocker.mkdir()
    # A `rebench` that fails on import, first on the path: as inside the new sandboxes.
    (blocker / "rebench").mkdir()
    (blocker / "rebench" / "__init__.py").write_text("raise ImportError('no rebench here')\n")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(blocker),
           "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "evaluate.py", "--limit", "2"], cwd=workspace,
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "SIMULATED" in proc.stdout and "solved" in proc.stdout.splitlines()[-1]
